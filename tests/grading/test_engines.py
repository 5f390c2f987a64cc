"""The fast engine and stock nbgrader give the same grades and the same notebook outputs."""

import json
import re
import shutil
from typing import NamedTuple

import nbformat
import pytest
from gradebook_rows import gradebook_rows

from grader.cells import is_graded
from grader.commands.export import grade_rows
from grader.commands.init import init_course
from grader.course import EXAMPLE_CLASS, Course, lessons
from grader.grading.class_run import autograde

pytestmark = pytest.mark.integration  # grades or serves whole courses through the real pipeline

# Outputs that differ between any two runs, whichever engine: memory addresses and the
# per-process file an IPython kernel compiles each cell into.
VOLATILE = [
    (re.compile(r"0x[0-9a-f]+"), "0xADDRESS"),
    (re.compile(r"/tmp/ipykernel_\d+/\d+\.py"), "CELL.py"),
]


# Complete and right, typical mistakes, untouched: every kind of output, at half the cost of
# grading the whole example class twice (stock nbgrader takes seconds per notebook).
STUDENTS = ["alice", "bob", "carol"]


def _course(root, engine):
    course = init_course(root, due_dates=EXAMPLE_CLASS / "due_dates.csv")
    for student in STUDENTS:
        shutil.copytree(EXAMPLE_CLASS / "submitted" / student, course.root / "submitted" / student)
    autograde(course, lessons(), engine=engine)
    return course


class Both(NamedTuple):
    """The same students graded by stock nbgrader and by the fast engine."""

    stock: Course
    fast: Course


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> Both:
    """Three students of the example class graded once by each engine."""
    root = tmp_path_factory.mktemp("engines")
    return Both(_course(root / "stock", "nbgrader"), _course(root / "fast", "fast"))


def _grades(course):
    header, rows = grade_rows(course)
    columns = [
        "raw_score",
        "late_submission_penalty",
        "score",
        *header[header.index("detail") + 1 :],  # what we add, and the exercises
    ]
    return {(r["assignment"], r["student_id"]): {c: r.get(c) for c in columns} for r in rows}


def test_both_engines_give_identical_grades_per_exercise(both):
    """Every graded student, lesson and exercise has the same score from both engines."""
    stock, fast = both
    assert _grades(fast) == _grades(stock)


def _comparable(output):
    text = json.dumps(output, sort_keys=True, indent=0)
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


@pytest.mark.parametrize("student", ["alice", "bob"])
def test_autograded_outputs_match_a_real_kernel(both, student):
    """Streams, results, figures' text and errors (with tracebacks) match the kernel's."""
    stock, fast = both
    for lesson in lessons():
        path = f"autograded/{student}/{lesson}/{lesson}.ipynb"
        kernel = nbformat.read(stock.root / path, as_version=4)
        ours = nbformat.read(fast.root / path, as_version=4)
        assert len(kernel.cells) == len(ours.cells)
        for k, o in zip(kernel.cells, ours.cells, strict=True):
            if k.cell_type != "code":
                continue
            if is_graded(k):
                # hidden tests draw random inputs, and failure messages quote them
                want = [(x.output_type, x.get("ename")) for x in k.outputs]
                got = [(x.output_type, x.get("ename")) for x in o.outputs]
            else:
                want = [_comparable(_without_png(x)) for x in _joined_streams(k.outputs)]
                got = [_comparable(_without_png(x)) for x in _joined_streams(o.outputs)]
            assert got == want, (lesson, k.source[:60])


def _joined_streams(outputs):
    """Outputs with consecutive pieces of one stream joined: a kernel may send one print in
    several messages, and every notebook front end shows them as one."""
    joined = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (
            output.output_type == "stream"
            and previous is not None
            and previous.output_type == "stream"
            and previous.name == output.name
        ):
            joined[-1] = nbformat.from_dict({**previous, "text": previous.text + output.text})
        else:
            joined.append(output)
    return joined


def _without_png(output):
    output = dict(output)
    if "data" in output:
        output["data"] = {k: v for k, v in output["data"].items() if k != "image/png"}
    output.pop("execution_count", None)
    return output


def test_both_engines_write_the_samegradebook_rows(both):
    """Students, submissions, notebooks, grades and comments: row for row what stock nbgrader
    writes ("No response." comments included; late penalties and manual grades are in
    test_gradebook.py)."""
    stock, fast = both
    written = gradebook_rows(fast)
    assert written == gradebook_rows(stock)
    assert len(written["grade"]) > 50 and len(written["comment"]) > 10
    assert any(row[4] == "No response." for row in written["comment"])


def test_a_lesson_without_probes_gets_stock_nbgraders_grades(both, tmp_path, monkeypatch):
    """Without probes.py, the fast engine scores each test cell by its own run in the
    submission's process, as stock nbgrader does: the same score per exercise for every student,
    and the export says where those verdicts come from."""
    from grader.grading import submission
    from grader.judging import reference

    lesson, probes_file = lessons()[0], reference.probes_file
    missing = tmp_path / "probes.py"  # its folder is there, the probes are not

    def without(name):
        return missing if name == lesson else probes_file(name)

    monkeypatch.setattr(submission, "probes_file", without)
    monkeypatch.setattr(reference, "probes_file", without)
    course = init_course(tmp_path / "course", due_dates=EXAMPLE_CLASS / "due_dates.csv")
    for student in STUDENTS:
        shutil.copytree(
            EXAMPLE_CLASS / "submitted" / student / lesson,
            course.root / "submitted" / student / lesson,
        )
    autograde(course, [lesson], engine="fast")
    fast = {key: row for key, row in _grades(course).items() if key[0] == lesson}
    stock = {key: row for key, row in _grades(both.stock).items() if key[0] == lesson}
    assert {row.pop("verdicts") for row in fast.values()} == {reference.IN_PROCESS}
    for row in stock.values():
        row.pop("verdicts")
    assert fast == stock
    assert len({row["raw_score"] for row in fast.values()}) > 1  # right, wrong and blank work
