"""A cell stopped at the cell time limit costs its own time only, as in stock nbgrader, where a
kernel is interrupted on a cell timeout and the notebook goes on; the notebook limit still
bounds the cells that finish."""

import pytest

from grader.sandbox.outside.client import Sandbox, SandboxProcess
from grader.sandbox.outside.isolation import Limits

pytestmark = pytest.mark.integration

LIMITS = Limits(cell_seconds=1.0, notebook_seconds=2.0)
STUCK = "while True:\n    pass"


@pytest.fixture(scope="module")
def sandbox():
    template = SandboxProcess(LIMITS)
    template.start()
    yield Sandbox(LIMITS, template.channels[0])
    template.stop()


def test_stuck_cells_over_the_notebook_limit_together_do_not_stop_the_notebook(sandbox):
    """Three cells stopped at 1 s each (3 s, over the 2 s notebook limit): the run goes on to the
    last cell, and the report names the three."""
    cells = [(0, STUCK), (1, STUCK), (2, STUCK), (3, "print('after')")]
    report = sandbox.run(cells, {})
    assert (report.outcome, report.interrupted) == ("graded", [0, 1, 2]), report.detail
    assert report.cells[3]["outputs"][0]["text"] == "after\n"
    assert [out["ename"] for out in report.cells[1]["outputs"]] == ["KeyboardInterrupt"]


def test_cells_that_finish_are_still_held_to_the_notebook_limit(sandbox):
    """Three cells of 0.8 s each, each under the cell limit, overrun the notebook's 2 s."""
    cells = [(i, "import time\ntime.sleep(0.8)") for i in range(3)]
    report = sandbox.run(cells, {})
    assert report.outcome == "timed out" and "the notebook time limit" in report.detail
    assert report.interrupted == []


def test_stopped_cells_are_excused_only_up_to_the_notebook_limits_worth(sandbox):
    """Eight stuck cells of 1 s each: 2 s of them are excused (the notebook limit's worth), so
    the run ends timed out after about twice the notebook limit, not after eight seconds."""
    cells = [(i, STUCK) for i in range(8)] + [(8, "print('after')")]
    report = sandbox.run(cells, {})
    assert report.outcome == "timed out" and "the notebook time limit" in report.detail
    assert 8 not in report.cells and 2 <= len(report.interrupted) <= 5, report.interrupted
