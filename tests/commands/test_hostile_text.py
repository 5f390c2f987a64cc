"""Hostile ids, outputs and error messages never break or leak through the instructor's tools."""

import csv
import html
import json
from html.parser import HTMLParser

import nbformat
import pytest
from feedback_secrets import secret_lines, secrets_shown
from integrity_tools import FULL_MARKS, LESSON, new_course, submit

from grader.cli import main
from grader.commands.feedback import generate_feedback
from grader.commands.score_table import score_table
from grader.course import EXAMPLE_CLASS, solution_notebook
from grader.grading import outcomes
from grader.grading.class_run import autograde
from grader.grading.results import Result
from grader.safe_output.text import csv_safe, terminal_safe

pytestmark = pytest.mark.integration  # grades or serves whole courses through the real pipeline

ESC_ID = "mal\x1b[2J\u202eformed"  # clears the screen, then prints right to left
FORMULA_ID = "@SUM(1+1)"
GLOB_ID = "slow*[1]"  # nbgrader takes a student id as a file pattern
HOSTILE_DETAIL = "RuntimeError: \x1b]0;owned\x07\u202eboom\nsecond line\r"
UNUSED = ("\x1b", "\u202e", "\x07", "\r")
ODD_NOTEBOOK = {  # JSON, but a test cell without an id and an error without a message
    "cells": [
        {
            "cell_type": "code",
            "id": "odd",
            "metadata": {"nbgrader": {"grade": True}},
            "outputs": [{"output_type": "error"}],
            "source": "",
        }
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}

LEAK = f"""\
import html, sys
from IPython.display import HTML, display
import grader.course

hidden = [source for source in _ih if "BEGIN HIDDEN TESTS" in source]
probes = (grader.course.SOLUTIONS / {LESSON!r} / "probes.py").read_text()
print("honest stdout line")
print(hidden[0])
print(repr(hidden[1]))
print("honest stderr line", file=sys.stderr)
print(probes, file=sys.stderr)
display(HTML("<p>honest html line</p>\\n<pre>" + html.escape(hidden[2]) + "</pre>"))
display(HTML('<script>alert("pwned")</script><img src=x onerror="alert(2)">'))
size = {{"image/png": {{"width": "1 onerror=alert(4)"}}}}
display({{"image/png": "QUJD"}}, raw=True, metadata=size)
open("leak.txt", "w").write(hidden[3])
"""
RAISE = 'raise ValueError("honest error line\\n" + hidden[3])'
MARKDOWN_SCRIPT = '<script>alert("markdown")</script>'
MARKDOWN_LINK = "[click me](javascript:alert(3))"


def _leaker() -> bytes:
    """The solution, plus cells after the tests that print the grader's code every way."""
    nb = nbformat.read(solution_notebook(LESSON), as_version=4)
    nb.cells += [
        nbformat.v4.new_markdown_cell(f"{MARKDOWN_SCRIPT}\n\n{MARKDOWN_LINK}"),
        nbformat.v4.new_code_cell(LEAK),
        nbformat.v4.new_code_cell(RAISE),
    ]
    return nbformat.writes(nb).encode()


def _enter(course, student: str, outcome: str, detail: str = "") -> None:
    """Enter a submission in the gradebook and its outcome, as a grading run leaves them."""
    with course.api().gradebook as gb:
        gb.update_or_create_student(student)
        gb.update_or_create_submission(LESSON, student)
    db_url = course.db_url
    outcomes.record(db_url, LESSON, student, outcome, detail)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A lesson-1 class with every kind of outcome, graded by stock nbgrader where it runs."""
    course = new_course(tmp_path_factory.mktemp("hostile") / "course")
    for student in ["alice", "bob"]:
        example = EXAMPLE_CLASS / "submitted" / student / LESSON / f"{LESSON}.ipynb"
        submit(course, student, example.read_bytes())
    submit(course, "leaker", _leaker())
    submit(course, ESC_ID, b"not json at all")
    submit(course, FORMULA_ID, b"{")
    submit(course, "nobook", b"{}", name="homework.ipynb")
    graded = ["honest", "alice", "bob", "leaker", ESC_ID, FORMULA_ID, "nobook"]
    autograde(course, LESSON, graded, engine="nbgrader", jobs=2)
    with course.api().gradebook as gb:
        gb.update_or_create_student(
            FORMULA_ID, first_name='=HYPERLINK("http://evil")', last_name="-2+3", email="+1"
        )
    blank = (course.root / "submitted" / "honest" / LESSON / f"{LESSON}.ipynb").read_bytes()
    autograded = {
        "corrupt": ("graded", b'{"cells": ['),
        "odd": ("graded", json.dumps(ODD_NOTEBOOK).encode()),
        "slow": ("timed out", blank),
        GLOB_ID: ("timed out", blank),
    }
    for student, (outcome, data) in autograded.items():
        submit(course, student, blank)
        _enter(course, student, outcome, "cell 3 ran over 30 s" if outcome == "timed out" else "")
        (course.root / "autograded" / student / LESSON).mkdir(parents=True)
        (course.root / "autograded" / student / LESSON / f"{LESSON}.ipynb").write_bytes(data)
    submit(course, "crashed", blank)
    _enter(course, "crashed", "not graded", HOSTILE_DETAIL)
    return course


@pytest.fixture(scope="module")
def feedback(course):
    """The feedback run over the whole class."""
    return generate_feedback(course, LESSON)


def _page(course, student: str) -> str:
    return (course.root / "feedback" / student / LESSON / f"{LESSON}.html").read_text()


def test_score_table_escapes_control_characters_in_ids_and_details():
    """ESC, bidi overrides and line breaks in a student id or detail print as visible escapes."""
    table = score_table(
        [
            Result(ESC_ID, LESSON, 0.0, FULL_MARKS, "malformed", "x is not JSON"),
            Result("crashed", LESSON, 0.0, FULL_MARKS, "not graded", HOSTILE_DETAIL),
        ]
    )
    assert not any(char in table for char in UNUSED)
    assert "mal\\x1b[2J\\u202eformed" in table
    assert "\\x1b]0;owned\\x07\\u202eboom\\nsecond line\\r" in table
    assert len(table.splitlines()) == 3


def test_terminal_safe_keeps_printable_text_and_escapes_backslashes():
    """Plain and accented text stays as it is; a literal backslash cannot fake an escape."""
    assert terminal_safe("José Müller ∂o/∂x") == "José Müller ∂o/∂x"
    assert terminal_safe("\\x1b") == "\\\\x1b"
    assert terminal_safe("\x85\U000e0001\ud800") == "\\x85\\U000e0001\\ud800"


def test_csv_safe_neutralises_formulas_and_keeps_numbers():
    """Text that a spreadsheet would read as a formula gets a leading quote; numbers stay."""
    assert [csv_safe(v) for v in ["=1+1", "+1", "-2", "@A1", "\tx", "\rx"]] == [
        "'=1+1",
        "'+1",
        "'-2",
        "'@A1",
        "'\\tx",
        "'\\rx",
    ]
    assert csv_safe(-2.5) == -2.5 and csv_safe("alice") == "alice"


def test_csv_has_no_raw_control_characters_and_no_formulas(course, tmp_path):
    """grades.csv parses, holds no control characters and starts no cell with a formula."""
    to = tmp_path / "grades.csv"
    assert main(["export", "--course-dir", str(course.root), "--to", str(to)]) == 0
    text = to.read_text()
    assert not any(char in text.replace("\r\n", "\n").replace("\n", "") for char in UNUSED)
    every_row = list(csv.DictReader(to.open(newline="")))
    rows = {r["student_id"]: r for r in every_row if r["assignment"] == LESSON}
    assert rows["mal\\x1b[2J\\u202eformed"]["outcome"] == "malformed"
    evil = rows["'" + FORMULA_ID]
    assert evil["first_name"] == '\'=HYPERLINK("http://evil")'
    assert (evil["last_name"], evil["email"]) == ("'-2+3", "'+1")
    assert rows["crashed"]["detail"] == terminal_safe(HOSTILE_DETAIL)
    assert float(rows["honest"]["score"]) == float(rows["honest"]["max_score"]) == FULL_MARKS
    for cells in every_row:
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in cells.values())


def test_feedback_gives_each_graded_submission_a_page_and_each_other_a_reason(course, feedback):
    """Graded and timed-out work get pages; malformed, missing, crashed and corrupt get reasons."""
    pages = {p.parent.parent.name for p in feedback.pages}
    assert pages == {"honest", "alice", "bob", "leaker", "slow"}
    assert all(p.is_file() for p in feedback.pages)
    reasons = feedback.missing
    assert set(reasons) == {ESC_ID, FORMULA_ID, GLOB_ID, "nobook", "crashed", "corrupt", "odd"}
    assert reasons[ESC_ID].startswith("malformed (") and "not JSON" in reasons[ESC_ID]
    assert reasons["nobook"].startswith("missing notebook (no 01_tensors")
    assert reasons["crashed"] == f"not graded ({HOSTILE_DETAIL})"
    assert reasons["corrupt"].startswith("nbgrader could not render it: JSONDecodeError: ")
    assert reasons["odd"].startswith("nbgrader could not render it: ")
    assert reasons[GLOB_ID].startswith("nbgrader cannot look up a student id")
    assert not (course.root / "feedback" / "corrupt").exists()


def test_feedback_command_reports_each_submission_without_feedback(course, feedback, capsys):
    """`grader feedback` exits 0, names each page, and prints safe reasons for the others."""
    assert main(["feedback", LESSON, "--course-dir", str(course.root)]) == 0
    out = capsys.readouterr().out
    assert not any(char in out for char in UNUSED)
    assert out.count("wrote ") == 5
    assert "no feedback for mal\\x1b[2J\\u202eformed: malformed (" in out
    assert f"no feedback for {FORMULA_ID}: malformed (" in out
    assert "no feedback for crashed: not graded (RuntimeError: \\x1b]0;owned" in out
    assert "no feedback for corrupt: nbgrader could not render it: JSONDecodeError" in out


def test_report_succeeds_for_every_mix_of_outcomes(course, tmp_path):
    """The report is written for a lesson with graded, failed and corrupt submissions."""
    assert main(["report", "--course-dir", str(course.root), "--out", str(tmp_path)]) == 0
    page = (tmp_path / "index.html").read_text()
    assert "graded submissions" in page and "\x1b" not in page


class _LiveParts(HTMLParser):
    """Collects what would run in a page: event handler attributes and script bodies."""

    def __init__(self):
        super().__init__()
        self.found, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        self.found += [f"{name}={value}" for name, value in attrs if name.startswith("on")]
        self.found += [v for n, v in attrs if n in ("href", "src") and "javascript:" in v.lower()]

    def handle_data(self, data):
        if self._in_script and "alert(" in data:
            self.found.append(data)


def test_script_in_a_submission_is_not_live_in_its_feedback(course, feedback):
    """<script>, event handlers and javascript: links in outputs or markdown do not run."""
    page = _page(course, "leaker")
    assert (
        "alert(" in (course.root / "autograded" / "leaker" / LESSON / f"{LESSON}.ipynb").read_text()
    )
    parser = _LiveParts()
    parser.feed(page)
    assert parser.found == []


def test_grader_code_printed_by_a_submission_never_reaches_its_page(course, feedback):
    """Hidden tests printed to stdout, stderr, HTML or an error while graded (stock nbgrader runs
    them in the student's kernel) are in the autograded notebook, and on no page."""
    path = course.root / "autograded" / "leaker" / LESSON / f"{LESSON}.ipynb"
    outputs = [out for cell in nbformat.read(path, 4).cells for out in cell.get("outputs", [])]
    printed = "\n".join(
        str(part)
        for out in outputs
        for part in (out.get("text"), out.get("evalue"), *out.get("data", {}).values())
    )
    own = "\n".join(cell.source for cell in nbformat.reads(_leaker().decode(), 4).cells)
    secrets = secret_lines(LESSON, own)
    assert len(secrets_shown(html.unescape(printed), secrets)) > 5
    for student in ["honest", "alice", "bob", "leaker"]:
        page = _page(course, student)
        assert secrets_shown(page, secrets) == [] and "### BEGIN HIDDEN" not in page, student


def test_files_a_submission_wrote_while_graded_stay_out_of_its_feedback(course, feedback):
    """The leaker wrote hidden tests to a file beside its notebook: feedback holds only the page."""
    assert (course.root / "autograded" / "leaker" / LESSON / "leak.txt").exists()
    assert [p.name for p in (course.root / "feedback" / "leaker" / LESSON).iterdir()] == [
        f"{LESSON}.html"
    ]
