"""Validating a notebook wherever a student works: a failed test is shown by what it checks,
its message first, in the Validate dialog, `nbgrader validate` and `python -m grader.validation`
(which needs no nbgrader, so a pip or Colab install has it too)."""

import subprocess
import sys
from pathlib import Path

import nbformat

from grader.course import REPO_ROOT
from grader.validation import ELSEWHERE, RUNNING, validate, what_it_checks

LESSON = "02_grad_fn_and_the_graph"


def test_a_failed_test_is_shown_by_its_docstring_or_first_line():
    """The docstring, cut with an ellipsis; a cell without one by its first line; a cell that
    does not parse (a syntax error, code nested past what Python parses) as the student left it."""
    source = '"""Check that f works."""\nfrom grader.checks import call\ncall(f, 1, name="f")'
    assert what_it_checks(source) == "Check that f works. (…)"
    assert what_it_checks("check(f)\nmore()") == "check(f) (…)"
    assert what_it_checks("def (:\n  x") == "def (: (…)"
    deep = '"""Check it."""\nx = 1' + " + 1" * 10000
    assert what_it_checks(deep).startswith('"""Check it."""')
    assert what_it_checks("") == ""


def _validation(notebook: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader.validation", str(notebook)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_command_runs_a_notebook_fresh_and_lists_each_failed_test_message_first(tmp_path):
    """The released notebook, untouched, fails every test: each is listed with its message
    first (what to do), then what it checks, and the command exits 1. The solution passes all
    of them (exit 0). An unreadable file is named, with exit 2."""
    released = REPO_ROOT / "notebooks" / LESSON / f"{LESSON}.ipynb"
    tests = sum(
        1
        for cell in nbformat.read(released, as_version=4).cells
        if cell.metadata.get("nbgrader", {}).get("grade")
    )
    untouched = _validation(released)
    assert untouched.returncode == 1, untouched.stderr
    lines = untouched.stdout.splitlines()
    assert lines[0] == f"{tests} of {tests} tests fail when the notebook runs from a fresh start:"
    messages = [line for line in lines if line[:1].isdigit() and ". " in line]
    assert len(messages) == tests and all("not written yet" in m for m in messages), lines
    assert untouched.stdout.count("(the test that checks: Check ") == tests
    assert "BEGIN HIDDEN TESTS" not in untouched.stdout and "from grader" not in untouched.stdout

    solved = _validation(REPO_ROOT / "solutions" / LESSON / f"{LESSON}.ipynb")
    assert solved.returncode == 0 and solved.stdout.startswith(f"All {tests} tests pass"), solved

    broken = tmp_path / "broken.ipynb"
    broken.write_text("{ not json")
    unreadable = _validation(broken)
    assert unreadable.returncode == 2 and str(broken) in unreadable.stderr


def test_validate_in_a_notebook_never_runs_inside_a_run_and_says_how_elsewhere(monkeypatch, capsys):
    """Inside a validation or grading run (NBGRADER_EXECUTION set, as nbgrader and the fast
    engine set it) validate() does nothing, so a notebook that calls it never runs itself; with
    no path outside Colab it says how to call it."""
    monkeypatch.setenv(RUNNING, "autograde")
    assert validate("no such notebook.ipynb") is None
    monkeypatch.delenv(RUNNING)
    assert validate() is None
    assert capsys.readouterr().out.strip() == ELSEWHERE


def test_nbgrader_validate_prints_the_message_first_whole_and_what_the_test_checks(tmp_path):
    """`nbgrader validate` in the repository (its nbgrader_config.py) lists a failed test as the
    dialog does: the message whole (nbgrader cut it at 90 columns), then what the test checks,
    never the test's source."""
    notebook = tmp_path / f"{LESSON}.ipynb"
    notebook.write_bytes((REPO_ROOT / "notebooks" / LESSON / notebook.name).read_bytes())
    nbgrader = Path(sys.executable).with_name("nbgrader")
    run = subprocess.run(
        [nbgrader, "validate", str(notebook)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    shown = run.stdout
    message = (
        "leaves_of is not written yet: in its answer cell, replace the line "
        "`raise NotImplementedError(...)` with your code, run that cell, then run this test again."
    )
    assert message in shown, shown
    assert shown.index(message) < shown.index("(the test that checks: Check that leaves_of")
    assert "from grader" not in shown and "CheckFailed" not in shown
