"""An assignment nobody here wrote is graded as stock nbgrader grades it, cell for cell: its helper
module named like an installed package (the kit's own `grader`) found first, `NBGRADER_EXECUTION`
set, an unchanged answer scored 0, and a stuck function costing each test that calls it, not the
tests after them."""

import shutil
from typing import NamedTuple

import nbformat
import pytest
from gradebook_rows import gradebook_rows

from grader.cli import main
from grader.commands.export import grade_rows
from grader.commands.init import init_course
from grader.course import Course
from grader.grading.class_run import autograde
from grader.sandbox.outside.isolation import Limits

pytestmark = pytest.mark.integration  # grades a course with both engines

# Short limits, in the same proportion as the defaults (a cell limit, and a notebook limit that
# the stuck function's three interrupted calls add up to more than)
LIMITS = Limits(cell_seconds=1.0, notebook_seconds=2.0)

# The assignment's helper module, named like the kit's own package
HELPER = "def answer():\n    return 42\n"

SOLVED = "\n    ### BEGIN SOLUTION\n    {}\n    ### END SOLUTION"


def _cell(text: str, grade_id: str | None = None, *, points=None, solution=False, markdown=False):
    made = (nbformat.v4.new_markdown_cell if markdown else nbformat.v4.new_code_cell)(text)
    if grade_id:
        made.metadata["nbgrader"] = {
            "schema_version": 3, "grade_id": grade_id, "task": False, "solution": solution,
            "grade": points is not None, "locked": not solution,
            **({"points": points} if points is not None else {}),
        }  # fmt: skip
    return made


def _assignment(source) -> None:
    """Two notebooks: the first uses the helper module, reads NBGRADER_EXECUTION and has answer
    cells graded by hand; the second's function is called by three tests, then one test more."""
    helper = "def from_helper():" + SOLVED.format("return grader.answer()")
    running = "import os\nassert os.environ['NBGRADER_EXECUTION'] == 'autograde'"
    written = "### BEGIN SOLUTION\nBecause.\n### END SOLUTION"
    part1 = [
        _cell("import grader"),
        _cell(helper, "helper", solution=True),
        _cell("assert from_helper() == 42", "test_helper", points=1),
        _cell(running, "test_env", points=1),
        _cell(written, "why", points=2, solution=True, markdown=True),
        _cell("def shown():" + SOLVED.format("return 1"), "shown", points=2, solution=True),
    ]
    part2 = [
        _cell("def slow():" + SOLVED.format("return 1"), "slow", solution=True),
        *(_cell("assert slow() == 1", f"test_slow_{n}", points=1) for n in range(3)),
        _cell("assert 1 + 1 == 2", "test_after", points=1),
    ]
    (source / "hw").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=part1), source / "hw" / "part1.ipynb")
    nbformat.write(nbformat.v4.new_notebook(cells=part2), source / "hw" / "part2.ipynb")
    (source / "hw" / "grader.py").write_text(HELPER)


ANSWERS = {  # student -> notebook -> grade id -> answer; an answer left out is left as released
    "ada": {
        "part1": {"helper": "def from_helper():\n    return grader.answer()"},
        "part2": {"slow": "def slow():\n    return 1"},
    },
    "bo": {  # changes nothing in part 1; part 2's function never returns
        "part1": {},
        "part2": {"slow": "def slow():\n    while True:\n        pass"},
    },
}


def _submit(course: Course) -> None:
    released = course.root / "release" / "hw"
    for student, notebooks in ANSWERS.items():
        folder = course.root / "submitted" / student / "hw"
        folder.mkdir(parents=True)
        for name, mine in notebooks.items():
            nb = nbformat.read(released / f"{name}.ipynb", as_version=4)
            for cell in nb.cells:
                gid = cell.metadata.get("nbgrader", {}).get("grade_id")
                cell.source = mine.get(gid, cell.source)
            nbformat.write(nb, folder / f"{name}.ipynb")


class Graded(NamedTuple):
    """The assignment graded by each engine."""

    stock: Course
    fast: Course


def _graded(root, engine: str) -> Course:
    course = init_course(root)
    _assignment(course.root / "source")
    assert main(["release", "hw", "--course-dir", str(course.root)]) == 0
    _submit(course)
    autograde(course, "hw", engine=engine, limits=LIMITS, jobs=1)
    return course


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    """Both students graded once by each engine."""
    root = tmp_path_factory.mktemp("parity")
    return Graded(_graded(root / "stock", "nbgrader"), _graded(root / "fast", "fast"))


def _rows(course: Course) -> dict[str, dict]:
    return {r["student_id"]: r for r in grade_rows(course)[1] if r["assignment"] == "hw"}


def _per_cell(course: Course) -> dict[str, dict]:
    return {
        student: {k: v for k, v in row.items() if k.startswith("part")}
        for student, row in _rows(course).items()
    }


def _output_kinds(course: Course) -> dict:
    return {
        (student, part): [
            [(out.output_type, out.get("ename")) for out in cell.outputs]
            for cell in nbformat.read(folder / f"{part}.ipynb", as_version=4).cells
            if cell.cell_type == "code"
        ]
        for student in ANSWERS
        for part in ("part1", "part2")
        for folder in [course.root / "autograded" / student / "hw"]
    }


def test_both_engines_score_every_cell_alike(graded):
    """Per cell, the default engine gives each student what stock nbgrader gives: the same
    grade and comment rows, and the same kinds of output (a stuck test's KeyboardInterrupt,
    then nbgrader's CellTimeoutError)."""
    assert _per_cell(graded.fast) == _per_cell(graded.stock)
    fast, stock = gradebook_rows(graded.fast), gradebook_rows(graded.stock)
    for table in ("grade", "comment"):
        assert fast[table] == stock[table]
    assert _output_kinds(graded.fast) == _output_kinds(graded.stock)
    stuck = [("error", "KeyboardInterrupt"), ("error", "CellTimeoutError")]
    assert _output_kinds(graded.fast)[("bo", "part2")][1:4] == [stuck] * 3


def test_the_scores_are_stock_nbgraders(graded):
    """The helper module beside the notebook wins over the kit's package of the same name;
    NBGRADER_EXECUTION is 'autograde'; answers left as released score 0; a stuck function
    costs the three tests that call it, and the test after them keeps its point."""
    cells = _per_cell(graded.fast)
    assert cells["ada"] == {
        "part1:test_helper": 1.0, "part1:test_env": 1.0, "part1:why": 0.0, "part1:shown": 0.0,
        "part2:test_slow_0": 1.0, "part2:test_slow_1": 1.0, "part2:test_slow_2": 1.0,
        "part2:test_after": 1.0,
    }  # fmt: skip
    assert cells["bo"] == {  # from_helper raises NotImplementedError, as released
        "part1:test_helper": 0.0, "part1:test_env": 1.0, "part1:why": 0.0, "part1:shown": 0.0,
        "part2:test_slow_0": 0.0, "part2:test_slow_1": 0.0, "part2:test_slow_2": 0.0,
        "part2:test_after": 1.0,
    }  # fmt: skip


def test_a_stuck_test_is_said_to_have_timed_out(graded):
    """The stuck tests are named as timed out in the outcome, and their feedback says so."""
    row = _rows(graded.fast)["bo"]
    assert row["outcome"] == "graded"
    assert "timed out" in row["detail"] and "test_slow_2" in row["detail"]
    assert main(["feedback", "hw", "--course-dir", str(graded.fast.root)]) == 0
    page = (graded.fast.root / "feedback" / "bo" / "hw" / "part2.html").read_text()
    assert "time limit" in page
    shutil.rmtree(graded.fast.root / "feedback")


def test_stock_nbgraders_reason_is_the_outcome_when_it_fails(graded):
    """An assignment whose notebook names a kernel that is not installed (an old conda
    kernelspec): stock nbgrader's outcome says so, in nbgrader's words, not "see the above
    traceback"."""
    course = graded.stock
    kernel = {"name": "Python [Root]", "display_name": "Python [Root]", "language": "python"}
    nb = nbformat.v4.new_notebook(cells=[_cell("assert True", "t", points=1)])
    nb.metadata["kernelspec"] = kernel
    (course.root / "source" / "old").mkdir()
    nbformat.write(nb, course.root / "source" / "old" / "old.ipynb")
    assert main(["release", "old", "--course-dir", str(course.root)]) == 0
    folder = course.root / "submitted" / "ada" / "old"
    folder.mkdir(parents=True)
    shutil.copy(course.root / "release" / "old" / "old.ipynb", folder)
    (result,) = autograde(course, "old", engine="nbgrader", limits=LIMITS, jobs=1)
    assert result.outcome == "not graded"
    assert result.detail == "old.ipynb: NoSuchKernel: No such kernel named Python [Root]"
