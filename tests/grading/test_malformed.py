"""Malformed submissions each end with a recorded outcome and reason; the class goes on."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import nbformat
import pytest
from integrity_tools import FULL_MARKS, LESSON, answered, digests, new_course, submit

from grader.course import REPO_ROOT, solution_notebook, student_notebook
from grader.grading.class_run import GradingSession, autograde
from grader.sandbox.outside.isolation import Limits

pytestmark = pytest.mark.integration  # grades or serves whole courses through the real pipeline

LIMITS = Limits(cell_seconds=10, notebook_seconds=20)


def _solution() -> nbformat.NotebookNode:
    return nbformat.read(solution_notebook(LESSON), as_version=4)


def _edited(change) -> bytes:
    nb = _solution()
    change(nb)
    return nbformat.writes(nb).encode()


def _grade_cells(nb):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def _delete_first_test(nb):
    nb.cells.remove(_grade_cells(nb)[0])


def _duplicate_cells(nb):
    nb.cells.extend(nb.cells[-6:])


def _reorder(nb):
    nb.cells[1], nb.cells[2] = nb.cells[2], nb.cells[1]


def _edit_tests(nb):
    for cell in _grade_cells(nb):
        cell.source = "pass  # all good"


def _kernelspec(nb):
    nb.metadata["kernelspec"] = {"name": "evil", "display_name": "Evil", "language": "python"}


def _raw_edit(**fields) -> bytes:
    raw = json.loads(SOLUTION)
    raw.update(fields)
    return json.dumps(raw).encode()


def _nbgrader_metadata_as_text(nb):
    nb.cells[1].metadata["nbgrader"] = "not an object"


def _many_cells(nb):
    nb.cells.extend(nbformat.v4.new_markdown_cell("x") for _ in range(3000))


def _huge_outputs(nb):
    text = "x" * 30_000_000
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]


SOLUTION = solution_notebook(LESSON).read_bytes()
# Reads whatever lies beside the notebook, as a submission that brought links would.
LEAKS = (
    "import os\n"
    "for root, _, files in os.walk('.'):\n"
    "    for name in files:\n"
    "        print(name, open(os.path.join(root, name), 'rb').read(300))\n"
)
# student: (files, expected outcome, a phrase the reason must contain, expected score or None=full)
CASES = {
    "not_json": ({f"{LESSON}.ipynb": b"this is not a notebook"}, "malformed", "not JSON", 0),
    "truncated": ({f"{LESSON}.ipynb": SOLUTION[: len(SOLUTION) // 2]}, "malformed", "truncated", 0),
    "nbformat_3": (
        {
            f"{LESSON}.ipynb": json.dumps(
                {"nbformat": 3, "nbformat_minor": 0, "worksheets": []}
            ).encode()
        },
        "malformed",
        "nbformat version 3",
        0,
    ),
    "invalid_utf8": ({f"{LESSON}.ipynb": b'{"cells": "\xff\xfe"}'}, "malformed", "UTF-8", 0),
    "missing": ({"notes.txt": b"I forgot"}, "missing notebook", f"no {LESSON}.ipynb", 0),
    "renamed": ({"my_work.ipynb": SOLUTION}, "missing notebook", "found my_work.ipynb", 0),
    "extra": ({f"{LESSON}.ipynb": SOLUTION, "scratch.ipynb": SOLUTION}, "graded", "scratch", None),
    "deleted_test": (
        {f"{LESSON}.ipynb": _edited(_delete_first_test)},
        "graded",
        "deleted test cells score 0: test_make_leaf",
        FULL_MARKS - 2,  # test_make_leaf's 2 points
    ),
    "duplicated": ({f"{LESSON}.ipynb": _edited(_duplicate_cells)}, "graded", "", None),
    "reordered": ({f"{LESSON}.ipynb": _edited(_reorder)}, "graded", "", None),
    "edited_tests": ({f"{LESSON}.ipynb": _edited(_edit_tests)}, "graded", "", None),
    "kernelspec": ({f"{LESSON}.ipynb": _edited(_kernelspec)}, "graded", "", None),
    "huge_outputs": ({f"{LESSON}.ipynb": _edited(_huge_outputs)}, "graded", "", None),
    "untouched": ({f"{LESSON}.ipynb": student_notebook(LESSON).read_bytes()}, "graded", "", 0),
    "deeply_nested": ({f"{LESSON}.ipynb": b"[" * 100_000}, "malformed", "not JSON", 0),
    "minor_as_text": (
        {f"{LESSON}.ipynb": _raw_edit(nbformat_minor="5")},
        "malformed",
        "nbformat",
        0,
    ),
    "minor_missing": (
        {f"{LESSON}.ipynb": _raw_edit(nbformat_minor=None)},
        "malformed",
        "nbformat",
        0,
    ),
    "version_as_float": ({f"{LESSON}.ipynb": _raw_edit(nbformat=4.0)}, "malformed", "nbformat", 0),
    "nbgrader_as_text": (
        {f"{LESSON}.ipynb": _edited(_nbgrader_metadata_as_text)},
        "malformed",
        "nbgrader metadata",
        0,
    ),
    "too_many_cells": ({f"{LESSON}.ipynb": _edited(_many_cells)}, "malformed", "cells", 0),
}
# Links placed in a submission folder (an upload unpacked as is): the notebook a link, or links
# to the instructor's files and to a device beside it. Made by the fixture; none is followed.
LINKED = {
    "notebook_is_a_link": ("malformed", "a link or a special file", 0),
    "links_beside": ("graded", "", 0),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One grading run over the honest student and every malformed submission."""
    course = new_course(tmp_path_factory.mktemp("malformed") / "course")
    for student, (files, *_) in CASES.items():
        for name, data in files.items():
            submit(course, student, data, name)
    link = course.root / "submitted" / "notebook_is_a_link" / LESSON
    link.mkdir(parents=True)
    (link / f"{LESSON}.ipynb").symlink_to(solution_notebook(LESSON))
    beside = submit(course, "links_beside", answered(LEAKS)).parent
    (beside / "solution.ipynb").symlink_to(solution_notebook(LESSON))
    (beside / "zeros").symlink_to("/dev/zero")
    (beside / "sub").mkdir()
    (beside / "sub" / "probes.py").symlink_to(solution_notebook(LESSON).parent / "probes.py")
    before = digests(course)
    results = {r.student: r for r in autograde(course, LESSON, jobs=2, limits=LIMITS)}
    return course, results, before


@pytest.mark.parametrize("student", list(CASES))
def test_malformed_submission_has_a_clear_outcome(graded, student):
    """Each case gets its outcome and a reason that names the problem."""
    _, results, _ = graded
    _, outcome, phrase, score = CASES[student]
    result = results[student]
    assert result.outcome == outcome, result.detail
    assert phrase in result.detail
    assert result.score == (result.max_score if score is None else score), result.detail


@pytest.mark.parametrize("student", list(LINKED))
def test_links_in_a_submission_are_never_followed(graded, student):
    """A notebook that is a link is refused; links beside it are neither copied nor read."""
    course, results, _ = graded
    outcome, phrase, score = LINKED[student]
    result = results[student]
    assert (result.outcome, result.score) == (outcome, score), result.detail
    assert phrase in result.detail
    copied = course.root / "autograded" / student / LESSON
    if copied.exists():
        assert sorted(p.name for p in copied.rglob("*") if p.is_symlink()) == []
        assert not (copied / "zeros").exists() and not (copied / "solution.ipynb").exists()
        text = (copied / f"{LESSON}.ipynb").read_text()
        assert "BEGIN SOLUTION" not in text and "def test_make_leaf" not in text


def test_edited_tests_are_restored_before_grading(graded):
    """Rewriting the test cells to `pass` gains nothing: nbgrader restores them."""
    course, results, _ = graded
    text = (course.root / "autograded" / "edited_tests" / LESSON / f"{LESSON}.ipynb").read_text()
    assert "pass  # all good" not in text


def test_the_class_goes_on_and_files_stay_byte_identical(graded):
    """The honest student is graded in the same run, and no submitted file changed."""
    course, results, before = graded
    assert results["honest"].score == results["honest"].max_score
    assert digests(course) == before


def _outcome_rows(course):
    try:
        with sqlite3.connect(course.root / "gradebook.db") as db:
            return db.execute("select student, recorded_at from grader_outcome").fetchall()
    except sqlite3.OperationalError:  # the first outcome has not been written yet
        return []


def test_a_killed_run_started_again_grades_every_submission_once(tmp_path):
    """SIGKILL midway, then rerun: every submission graded exactly once, no duplicate rows."""
    course = new_course(tmp_path / "course")
    students = [f"s{i:02d}" for i in range(12)]
    for student in students:
        submit(course, student, SOLUTION)
    command = [sys.executable, "-m", "grader", "autograde", LESSON]
    command += ["--course-dir", str(course.root)]
    run = subprocess.Popen(
        [*command, "--jobs", "1"],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_outcome_rows(course)) < 3:
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    first = dict(_outcome_rows(course))
    assert 3 <= len(first) < len(students) + 1, "the run was killed midway"
    finished = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    second = dict(_outcome_rows(course))
    assert sorted(second) == sorted([*students, "honest"])
    assert all(second[s] == first[s] for s in first), "graded again after it was recorded"
    with sqlite3.connect(course.root / "gradebook.db") as db:
        rows = db.execute(
            "select student.id, count(*) from submitted_assignment "
            "join student on student.id = submitted_assignment.student_id group by student.id"
        ).fetchall()
        scores = db.execute(
            "select count(*) from grade where auto_score is null and needs_manual_grade = 0"
        ).fetchone()
    assert sorted(rows) == sorted((s, 1) for s in [*students, "honest"])
    assert scores == (0,)
    assert all(float(line.split()[2]) == FULL_MARKS for line in finished.stdout.splitlines()[1:])


def test_a_resubmission_without_its_test_cells_keeps_no_earlier_score(tmp_path):
    """Graded full marks, then resubmitted untouched with every test cell deleted: 0, not the
    old score."""
    course = new_course(tmp_path / "course")
    submit(course, "again", SOLUTION)
    session = GradingSession(LIMITS, jobs=1)
    first = autograde(course, LESSON, ["again"], session=session)
    assert first[0].score == FULL_MARKS

    def no_tests(nb):
        nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]

    blank = nbformat.read(student_notebook(LESSON), as_version=4)
    no_tests(blank)
    submit(course, "again", nbformat.writes(blank).encode())
    with session:
        (result,) = autograde(course, LESSON, ["again"], session=session)
    assert result.score == 0, result.detail
