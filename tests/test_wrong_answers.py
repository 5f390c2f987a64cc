"""Typical wrong answers fail their tests with a message that names the mistake, and the judge,
comparing what the lesson's probes observe with the solution, rejects every one of them too."""

import copy
import json
from collections import Counter
from pathlib import Path

import nbformat
import pytest
import yaml
from notebook_tools import execute

from grader.course import lessons, solution_notebook
from grader.judge import verdict
from grader.reference import probes_file

WRONG_ANSWERS = Path(__file__).parent / "wrong_answers"


def _wrong_answers(lesson: str) -> list[dict]:
    path = WRONG_ANSWERS / f"{lesson}.yml"
    return yaml.safe_load(path.read_text()) if path.exists() else []


def _cells_by_grade_id(nb) -> dict:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}


def _rounds(answers: list[dict]) -> list[list[dict]]:
    """Group the wrong answers so that each run replaces any answer cell at most once."""
    rounds: list[list[dict]] = []
    for answer in answers:
        free = next((r for r in rounds if all(a["cell"] != answer["cell"] for a in r)), None)
        if free is None:
            rounds.append(free := [])
        free.append(answer)
    return rounds


PROBE_CELL = """\
import json, pathlib
from grader.probing import load_probes, run_probe
probes = load_probes(pathlib.Path({path!r}).read_text())
print(json.dumps(run_probe(probes, {test!r}, globals(), {seed})))
"""


SEED = 20261123


def _failures_after(lesson: str, wrong: list[dict], tmp_path: Path) -> tuple[dict, dict]:
    """Run the solution with `wrong` answers put in, each probe after its test cell.

    Returns each test cell's outputs, and what each probe observed.
    """
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    cells = _cells_by_grade_id(nb)
    for answer in wrong:
        cells[answer["cell"]].source = answer["answer"]
    tests = {a["test"] for a in wrong}
    for test in tests:
        probe = PROBE_CELL.format(path=str(probes_file(lesson)), test=test, seed=SEED)
        nb.cells.insert(nb.cells.index(cells[test]) + 1, nbformat.v4.new_code_cell(probe))
    path = tmp_path / f"{lesson}.ipynb"
    nbformat.write(nb, path)
    executed = execute(path)
    ran, by_id = executed.cells, _cells_by_grade_id(executed)
    observed = {}
    for test in tests:
        probe = ran[ran.index(by_id[test]) + 1]
        printed = [o.text for o in probe.outputs if o.get("name") == "stdout"]
        observed[test] = json.loads("".join(printed))  # a kernel may send one print in pieces
    return {gid: by_id[gid].outputs for gid in tests}, observed


def test_every_exercise_has_three_typical_wrong_answers(lesson):
    """Each answer cell of the lesson is exercised by at least three wrong answers."""
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    answer_cells = {
        gid for gid, c in _cells_by_grade_id(nb).items() if c.metadata["nbgrader"]["solution"]
    }
    counts = Counter(a["cell"] for a in _wrong_answers(lesson))
    assert {cell: counts[cell] for cell in answer_cells if counts[cell] < 3} == {}


@pytest.mark.parametrize(
    "lesson_round",
    [
        pytest.param((lesson, i), id=f"{lesson}-{i}")
        for lesson in lessons()
        for i in range(len(_rounds(_wrong_answers(lesson))))
    ],
)
def test_wrong_answers_fail_with_the_explaining_message(lesson_round, tmp_path, reference_server):
    """Each wrong answer makes its test cell raise CheckFailed with the explanation, no stderr,
    and the judge finds its probe's observations differ from the solution's."""
    lesson, index = lesson_round
    wrong = _rounds(_wrong_answers(lesson))[index]
    outputs, observed = _failures_after(lesson, copy.deepcopy(wrong), tmp_path)
    expected = reference_server.observe(lesson, SEED)
    for answer in wrong:
        problem = verdict(expected[answer["test"]], observed[answer["test"]])
        assert problem is not None, f"{answer['mistake']}: the judge accepts it"
        if "message" not in answer:  # the judge's alone to catch: the test cell cannot tell
            continue
        outs = outputs[answer["test"]]
        errors = [o for o in outs if o.output_type == "error"]
        stderr = [o.text for o in outs if o.output_type == "stream" and o.name == "stderr"]
        assert stderr == [], f"{answer['mistake']}: the test cell wrote to stderr"
        assert errors, f"{answer['mistake']}: {answer['test']} passed"
        assert errors[0].ename == "CheckFailed", (answer["mistake"], errors[0].evalue)
        assert answer["message"] in errors[0].evalue, (answer["mistake"], errors[0].evalue)
