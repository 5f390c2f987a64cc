"""Feedback pages show the submitted notebook, the released lesson and the verdicts: nothing the
grading run printed, whichever way it was printed, and whichever command built the page."""

import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from feedback_browser import TEX_ATTACKS, rendered_scores
from feedback_secrets import page_text, secret_lines, secrets_shown
from integrity_tools import LESSON, new_course, submit
from nbgrader.api import Gradebook

from grader.cells import autograded_tests
from grader.commands import feedback
from grader.commands.feedback import TOO_LONG, generate_feedback
from grader.course import EXAMPLE_CLASS, solution_notebook
from grader.grading.class_run import autograde
from grader.judging.verdict import CELL_FAILED

TESTS = autograded_tests(nbformat.read(solution_notebook(LESSON), as_version=4))

pytestmark = pytest.mark.integration  # grades a course through the real pipeline

FIND_PROBES = """\
import base64, gc, sys
from IPython.display import HTML, display

def _probe_source():
    found = [o for o in gc.get_objects() if isinstance(o, dict) and "probes" in o and "cells" in o]
    return found[0]["probes"]["source"] if found else ""

SECRET = _probe_source()
"""
# Called by the probe (not by the visible test), the answers report the probe source: as the
# error they raise and as the value they return.
ANSWERS = """
_make_leaf, _fresh_leaf = make_leaf, fresh_leaf

def make_leaf(*args):
    if sys._getframe(1).f_code.co_name == "test_make_leaf":
        raise ValueError(SECRET)
    return _make_leaf(*args)

def fresh_leaf(t):
    if sys._getframe(1).f_code.co_name == "test_snapshot":
        return SECRET
    return _fresh_leaf(t)
"""
PRINTS = """\
lines = SECRET.splitlines()
print(SECRET)
print("\\n".join(line[::-1] for line in lines))
print(base64.b64encode(SECRET.encode()).decode())
print("\\n".join(base64.b64encode(line.strip().encode()).decode() for line in lines))
half = [line[: len(line) // 2] + "<b>\\n</b>" + line[len(line) // 2 :] for line in lines]
display(HTML("<pre>" + "\\n".join(half) + "</pre>"))
print("printed " + "while graded")
"""
MODAL_HTML = '<div class="modal show" style="display:block" id="x">All tests passed, 8 / 8</div>'
STORED = [  # what the leaker's own machine showed for its last cell
    nbformat.v4.new_output("display_data", {"text/html": MODAL_HTML, "text/plain": "modal"}),
    nbformat.v4.new_output("stream", name="stdout", text="stored on " + "my machine\n"),
]
SCORE = re.compile(r"Score: [\d.]+ / [\d.]+")
MODAL_MARKDOWN = '<div class="modal show" style="display: block" id="fake">All tests passed</div>'


def _leaker() -> bytes:
    """The solution, whose answers hand the probe source to the judge, and a cell printing it
    every way; as submitted, that cell shows only what the student's machine (no probes) gave."""
    nb = nbformat.read(solution_notebook(LESSON), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(FIND_PROBES))
    snapshot = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "snapshot"
    )
    index = nb.cells.index(snapshot)
    nb.cells[index + 1 : index + 1] = [nbformat.v4.new_code_cell(ANSWERS)]
    nb.cells += [nbformat.v4.new_markdown_cell(MODAL_MARKDOWN), nbformat.v4.new_code_cell(PRINTS)]
    nb.cells[-1].outputs = STORED
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(TEX_ATTACKS))  # right below the scores
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="module")
def course(tmp_path_factory, grading_session):
    """A lesson-1 class graded by the default engine: the solution, bob, and the leaker."""
    course = new_course(tmp_path_factory.mktemp("pages") / "course")
    bob = EXAMPLE_CLASS / "submitted" / "bob" / LESSON / f"{LESSON}.ipynb"
    submit(course, "bob", bob.read_bytes())
    submit(course, "leaker", _leaker())
    autograde(course, LESSON, session=grading_session)
    return course


@pytest.fixture(scope="module")
def pages(course) -> dict[str, str]:
    """The pages `grader feedback` writes, by student."""
    run = generate_feedback(course, LESSON)
    assert run.missing == {}
    return {page.parent.parent.name: page.read_text() for page in run.pages}


@pytest.fixture(scope="module")
def stock_pages(course, pages) -> dict[str, str]:
    """The pages stock `nbgrader generate_feedback` writes over them, by student."""
    nbgrader = Path(sys.executable).parent / "nbgrader"
    subprocess.run(
        [str(nbgrader), "generate_feedback", LESSON, "--force"],
        cwd=course.root,
        check=True,
        capture_output=True,
    )
    folder = course.root / "feedback"
    return {s: (folder / s / LESSON / f"{LESSON}.html").read_text() for s in pages}


def _autograded_text(course, student: str) -> str:
    """Everything the grading run wrote into a student's autograded notebook."""
    return (course.root / "autograded" / student / LESSON / f"{LESSON}.ipynb").read_text()


def _secrets(course, student: str) -> list[str]:
    """The probe and hidden-test lines that the student's own submitted sources do not hold."""
    submitted = nbformat.read(course.submission(student, LESSON) / f"{LESSON}.ipynb", 4)
    return secret_lines(LESSON, "\n".join(cell.source for cell in submitted.cells))


def test_the_leaker_got_the_probe_source_into_its_graded_outputs(course):
    """The attack works: the grading run's outputs hold the probe source (so the pages' checks
    below look at something that was there to leak)."""
    shown = secrets_shown(_autograded_text(course, "leaker").replace("\\n", "\n"), [])
    assert shown == []  # the helper finds nothing where there is nothing
    text = nbformat.read(course.root / "autograded" / "leaker" / LESSON / f"{LESSON}.ipynb", 4)
    printed = "".join(o.get("text", "") for c in text.cells for o in c.get("outputs", []))
    assert len(secrets_shown(printed, _secrets(course, "leaker"))) >= 10


@pytest.mark.parametrize("built_by", ["grader feedback", "nbgrader generate_feedback"])
def test_no_probe_or_hidden_test_line_reaches_any_page(course, pages, stock_pages, built_by):
    """Plain, split by tags, reversed, base64, in an error message or a reported value: no line
    of the probes or hidden tests is on any page, from `grader feedback` or stock nbgrader."""
    for student, page in (pages if built_by == "grader feedback" else stock_pages).items():
        assert secrets_shown(page, _secrets(course, student)) == [], student
        assert "### BEGIN HIDDEN TESTS" not in page


class _Attributes(HTMLParser):
    """Every attribute of every tag in a page."""

    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        self.found += attrs


def test_student_html_cannot_dress_as_the_page(pages, stock_pages):
    """class, style and id are stripped from the student's markdown and HTML outputs."""
    for page in (pages["leaker"], stock_pages["leaker"]):
        assert "<div>All tests passed</div>" in page
        assert "<div>All tests passed, 8 / 8</div>" in page
        parser = _Attributes()
        parser.feed(page)
        assert not [(n, v) for n, v in parser.found if "modal" in (v or "") or v in ("x", "fake")]
        assert not [v for n, v in parser.found if n == "style"]


def test_honest_pages_show_their_own_outputs_and_the_verdicts(course, pages, stock_pages):
    """The solution's page shows its stored outputs and every test passed with its points; bob's
    shows his lost points with the judge's words (his visible tests fail, so that they did not
    pass); the leaker's shows what it stored, not what it printed."""
    solution = nbformat.read(solution_notebook(LESSON), as_version=4)
    stored = [o.text for c in solution.cells for o in c.get("outputs", []) if "text" in o]
    for page in (pages["honest"], stock_pages["honest"]):
        text = page_text(page)
        assert stored and all(page_text(out) in text for out in stored)
        assert text.count("Score:2/2:passed") == len(TESTS) == 3  # lesson 1's 2-point tests
    assert page_text(CELL_FAILED) in page_text(pages["bob"])
    assert "Score:0/2" in page_text(pages["bob"])
    assert "printed while graded" not in pages["leaker"]
    assert "stored on my machine" in pages["leaker"]


def _gradebook_scores(course, student: str) -> list[str]:
    """The scores the gradebook holds for a student's notebook, as its page words them: the
    notebook's, then each test's in the table of contents, then each test's verdict."""
    with Gradebook(course.db_url) as gradebook:
        found = gradebook.find_submission_notebook(LESSON, LESSON, student)
        total = f"Score: {round(found.score, 2):.1f} / {round(found.max_score, 2):.1f}"
        grades = {g.name: (g.score, g.max_score) for g in found.grades}
    tests = [grades[grade_id] for grade_id in TESTS.values()]
    contents = [f"Score: {float(s):.1f} / {float(p):.1f}" for s, p in tests]
    return [total, *contents, *(f"Score: {s:g} / {p:g}" for s, p in tests)]


@pytest.mark.parametrize("built_by", ["grader feedback", "nbgrader generate_feedback"])
def test_tex_in_markdown_cannot_draw_over_or_restyle_the_scores(
    course, pages, stock_pages, built_by, browser, tmp_path
):
    """With MathJax typesetting the leaker's TeX (styles, classes, links, box moves, huge rules),
    the page shows the gradebook's scores, each unchanged by the math and on top."""
    page_file = tmp_path / "page.html"
    page_file.write_text((pages if built_by == "grader feedback" else stock_pages)["leaker"])
    shown = rendered_scores(browser, page_file)
    assert shown["formulas"] >= 9 and shown["planted"] == 0
    scores = [found for text in shown["texts"] for found in SCORE.findall(text)]
    assert scores == _gradebook_scores(course, "leaker")
    assert all(shown["on_top"])
    assert shown["pictures"] == shown["pictures_without_markdown"]


def test_a_page_over_its_time_limit_is_given_up_and_the_others_are_built(course, monkeypatch):
    """The page that overruns gets `building the page took too long`; the others are written."""
    build = feedback._build

    def slow_for_bob(api, lesson, student):
        if student == "bob":
            time.sleep(600)
        return build(api, lesson, student)

    monkeypatch.setattr(feedback, "_build", slow_for_bob)
    started = time.monotonic()
    run = generate_feedback(course, LESSON, seconds=20)
    assert run.missing == {"bob": TOO_LONG}
    assert {page.parent.parent.name for page in run.pages} == {"honest", "leaker"}
    assert time.monotonic() - started < 60


def test_a_notebook_not_handed_in_gets_a_page_that_says_so(tmp_path):
    """A student whose submission lacks one notebook of the assignment finds a page for it that
    says it was not in the submission (its name escaped), beside the pages of the others."""
    from grader.commands.feedback import not_handed_in_pages

    folder = tmp_path / "feedback" / "lee" / "ps1"
    (page,) = not_handed_in_pages(folder, ["problem<2>"])
    assert page == folder / "problem<2>.html"
    text = page.read_text()
    assert "problem&lt;2&gt;.ipynb" in text and "<2>" not in text
    assert "was not in your submission" in text
