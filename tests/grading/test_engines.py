"""The fast engine and stock nbgrader give the same grades and the same notebook outputs."""

import base64
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


# A one-pixel PNG: the image the assignment's second notebook shows
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def _own_assignment(source):
    """An instructor's own nbgrader assignment of two notebooks, with a data file in a subfolder
    and an image; no probes; a manually graded answer beside the tests; the second notebook
    reads a file the first one writes (nbgrader runs both in one folder)."""
    cell = nbformat.v4.new_code_cell
    meta = {"schema_version": 3, "locked": False, "task": False}

    def answer(grade_id, text, points=None):
        made = cell(text) if points is None else nbformat.v4.new_markdown_cell(text)
        made.metadata["nbgrader"] = {
            **meta, "grade": points is not None, "solution": True, "grade_id": grade_id,
            **({"points": points} if points else {}),
        }  # fmt: skip
        return made

    def test(grade_id, text, points):
        made = cell(text)
        made.metadata["nbgrader"] = {
            **meta, "grade": True, "solution": False, "locked": True,
            "grade_id": grade_id, "points": points,
        }  # fmt: skip
        return made

    solved = "\n    ### BEGIN SOLUTION\n    {}\n    ### END SOLUTION"
    hidden = "\n### BEGIN HIDDEN TESTS\n{}\n### END HIDDEN TESTS"
    part1 = [
        nbformat.v4.new_markdown_cell("# Problem set 1, part 1"),
        cell("rows = open('data/rows.csv').read().split()"),
        answer("square", "def square(x):" + solved.format("return x * x")),
        test("test_square", "assert square(3) == 9" + hidden.format("assert square(-2) == 4"), 2),
        answer("total", "def total():" + solved.format("return sum(map(int, rows))")),
        test("test_total", "assert total() == 6", 3),
        cell("with open('made_by_part1.txt', 'w') as out:\n    out.write(str(total()))"),
    ]
    part2 = [
        nbformat.v4.new_markdown_cell("# Part 2\n\n![a pixel](pixel.png)"),
        answer("half", "def half(x):" + solved.format("return x / 2")),
        test("test_half", "assert half(5) == 2.5", 1),
        test("test_made", "assert open('made_by_part1.txt').read() == '6'", 1),  # part 1's file
        answer("why", "### BEGIN SOLUTION\nBecause.\n### END SOLUTION", points=2),
    ]
    (source / "ps1" / "data").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=part1), source / "ps1" / "part1.ipynb")
    nbformat.write(nbformat.v4.new_notebook(cells=part2), source / "ps1" / "part2.ipynb")
    (source / "ps1" / "data" / "rows.csv").write_text("1\n2\n3\n")
    (source / "ps1" / "pixel.png").write_bytes(PIXEL)


# A garbage frame on the report pipe, the write end of a pipe open in the submission's process
WRITES_INTO_THE_REPORT_PIPE = """\
import fcntl, os, stat
for fd in range(3, 1024):
    try:
        pipe = stat.S_ISFIFO(os.fstat(fd).st_mode)
        if pipe and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            os.write(fd, b"\\x00\\x00\\x00\\x03abc")
    except OSError:
        pass
"""

OWN_ANSWERS = {  # student -> notebook -> grade id -> answer; a notebook left out is not submitted
    "ann": {
        "part1": {
            "square": "def square(x):\n    return x * x",
            "total": "def total():\n    return 6",
        },
        "part2": {"half": "def half(x):\n    return x / 2"},
    },
    "ben": {
        "part1": {"square": "def square(x):\n    return 9", "total": "def total():\n    return 6"},
        "part2": {"half": "def half(x):\n    return x // 2"},
    },
    "cat": {"part1": {}, "part2": {}},
    "dan": {"part1": {"square": "def square(x):\n    return x ** 2"}},
}


def _export_from_the_platform(released, to):
    """The students' answers as a platform exports them, one file per student and notebook."""
    to.mkdir()
    for student, notebooks in OWN_ANSWERS.items():
        for name, mine in notebooks.items():
            nb = nbformat.read(released / f"{name}.ipynb", as_version=4)
            for each in nb.cells:
                if each.metadata.get("nbgrader", {}).get("grade_id") in mine:
                    each.source = mine[each.metadata["nbgrader"]["grade_id"]]
            nbformat.write(nb, to / f"{student}_ps1_{name}.ipynb")


def test_an_instructors_own_assignment_of_several_notebooks_is_graded_as_stock_nbgrader_grades_it(
    tmp_path,
):
    """An assignment of the instructor's own in the course's source/ (two notebooks, a data file
    in a subfolder, an image; no probes), released with `grader release --course-dir`, collected
    from a platform's export and graded with the default engine, gets stock nbgrader's score for
    every cell; a notebook not submitted scores 0 and the other is graded; export, feedback and
    the score table handle both notebooks. A submission whose second notebook writes into the
    grader's channel gets no points, though its first earned some."""
    from grader.cli import main

    policy = "per-day:1%,cap:20%"  # every submission is late: the cap applies
    fast = init_course(tmp_path / "fast", late_policy=policy)
    stock = init_course(tmp_path / "stock", late_policy=policy)
    for course in (fast, stock):
        _own_assignment(course.root / "source")
        assert main(["release", "ps1", "--course-dir", str(course.root)]) == 0
        with course.api().gradebook as gb:
            gb.update_or_create_assignment("ps1", duedate="2026-01-01 00:00:00 UTC")
    released = fast.root / "release" / "ps1"
    assert {p.name for p in released.rglob("*") if p.is_file()} == {
        "part1.ipynb", "part2.ipynb", "rows.csv", "pixel.png",
    }  # fmt: skip
    _export_from_the_platform(released, tmp_path / "export")
    assert main(["collect", str(tmp_path / "export"), "--course-dir", str(fast.root)]) == 0
    assert sorted(p.name for p in (fast.root / "submitted" / "dan" / "ps1").iterdir()) == [
        "part1.ipynb", "timestamp.txt",
    ]  # fmt: skip
    ben = fast.root / "submitted" / "ben" / "ps1"
    shutil.copy(ben / "part1.ipynb", ben / "scratch.ipynb")  # a notebook beside the assignment's
    shutil.copytree(fast.root / "submitted", stock.root / "submitted", dirs_exist_ok=True)
    eve = fast.root / "submitted" / "eve" / "ps1"  # the default engine's own rule: not compared
    shutil.copytree(fast.root / "submitted" / "ann" / "ps1", eve)
    part2 = nbformat.read(eve / "part2.ipynb", as_version=4)
    for each in part2.cells:  # after part 1 earned its points, part 2 writes into the channel
        if each.metadata.get("nbgrader", {}).get("grade_id") == "half":
            each.source = WRITES_INTO_THE_REPORT_PIPE
    nbformat.write(part2, eve / "part2.ipynb")
    for course, engine in ((fast, "fast"), (stock, "nbgrader")):
        args = ["autograde", "ps1", "--course-dir", str(course.root), "--engine", engine]
        assert main(args) == 0
    grades = {
        name: {k: v for k, v in _grades(course).items() if k[0] == "ps1"}
        for name, course in (("fast", fast), ("stock", stock))
    }
    rows = {r["student_id"]: r for r in grade_rows(fast)[1] if r["assignment"] == "ps1"}
    eve = rows["eve"]  # her 0 holds a place: no grade is exported for her, and export says why
    assert (eve["outcome"], eve["raw_score"], eve["score"], eve["final"]) == (
        "not graded",
        "",
        "",
        "no",
    )
    assert eve["why_not_final"].startswith("not graded (") and "look at it" in eve["why_not_final"]
    assert "wrote into the grader's channel" in rows["eve"]["detail"]
    del grades["fast"][("ps1", "eve")]
    assert grades["fast"] == grades["stock"]
    per_cell = {
        student: {k: v for k, v in row.items() if k.startswith("part")}
        for (_, student), row in grades["fast"].items()
    }
    assert per_cell["ann"] == {
        "part1:test_square": 2.0, "part1:test_total": 3.0, "part2:test_half": 1.0,
        "part2:test_made": 1.0, "part2:why": 0.0,
    }  # fmt: skip
    assert per_cell["ben"]["part1:test_square"] == 0.0 and per_cell["ben"]["part2:test_half"] == 0
    assert per_cell["cat"]["part2:test_made"] == 0  # part 1 wrote nothing: total() raised
    assert {s: row["raw_score"] for (_, s), row in grades["fast"].items()} == {
        "ann": 7.0, "ben": 4.0, "cat": 0.0, "dan": 2.0,
    }  # fmt: skip
    assert grades["fast"][("ps1", "ann")]["score"] == pytest.approx(7.0 - 1.4)  # 20% per notebook
    details = {(r["assignment"], r["student_id"]): r["detail"] for r in grade_rows(fast)[1]}
    assert details[("ps1", "dan")].startswith("part2.ipynb not submitted, scored 0; submitted")
    assert main(["feedback", "ps1", "--course-dir", str(fast.root)]) == 0
    pages = fast.root / "feedback" / "ann" / "ps1"
    assert sorted(p.name for p in pages.iterdir()) == ["part1.html", "part2.html"]
    missing = fast.root / "feedback" / "dan" / "ps1" / "part2.html"  # not handed in: said so
    assert "part2.ipynb</h1><p>This notebook was not in your submission" in missing.read_text()
    assert "not graded: scratch.ipynb" in details[("ps1", "ben")]
    assert (fast.root / "feedback" / "ben" / "ps1" / "part1.html").is_file()  # scratch no bar
    inlined = f'src="data:image/png;base64,{base64.b64encode(PIXEL).decode()}"'
    assert inlined in (pages / "part2.html").read_text()  # the page shows the released image
