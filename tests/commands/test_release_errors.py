"""A release nbgrader refuses ends with nbgrader's own reason, in one line that names the
notebook, not with "Please see the above traceback"."""

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader.apps import NbGraderAPI
from traitlets.config import Config

from grader.outcome import nbgrader_failure

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def _test_cell(source: str, grade_id: str):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "schema_version": 3, "grade_id": grade_id, "grade": True, "solution": False,
        "locked": True, "task": False, "points": 1,
    }  # fmt: skip
    return cell


def _generate(root, cells, monkeypatch) -> dict:
    # nbgrader runs `alembic` by name: the one beside this interpreter
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    monkeypatch.setenv("PATH", path)
    folder = root / "source" / "ps1"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNEL})
    nbformat.write(nb, folder / "part1.ipynb")
    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{root}/gradebook.db"
    return NbGraderAPI(config=config).generate_assignment("ps1", force=True, create=True)


@pytest.mark.parametrize(
    ("cells", "cause"),
    [
        (
            [_test_cell("assert True", "same"), _test_cell("assert 1", "same")],
            "ValidationError: Duplicate grade id: same",
        ),
        (
            [_test_cell("### AUTOTEST len([1])", "auto")],
            "No autotests.yml file found, but there were autotest directives found in the"
            " notebook.",
        ),
    ],
    ids=["duplicate grade id", "missing autotests.yml"],
)
def test_nbgraders_reason_is_told_in_one_line(tmp_path, monkeypatch, cells, cause):
    """A duplicate grade id and a missing autotests.yml are told as nbgrader words them, after
    the notebook."""
    result = _generate(tmp_path, cells, monkeypatch)
    assert not result["success"]
    said = nbgrader_failure(result)
    assert said == f"part1.ipynb: {cause}"
    assert "\n" not in said and "traceback" not in said
