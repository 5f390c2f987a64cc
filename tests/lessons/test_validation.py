"""nbgrader's validation, both ways: solutions pass every test, untouched notebooks none."""

import re

import nbformat
from nbgrader.validator import Validator
from notebook_tools import execute, validate

from grader.cells import autograded_tests
from grader.course import solution_notebook, student_notebook

# Lessons show some torch warnings on purpose; anything else on stderr is a broken cell.
WARNING = re.compile(r"\w+Warning: ")


def test_solution_passes_every_autograded_test(lesson):
    """nbgrader validate reports no failing cell on the instructor's solution."""
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    assert autograded_tests(nb), "a lesson needs autograded tests"
    result = validate(solution_notebook(lesson))
    assert result == {}, result


def test_untouched_student_notebook_passes_no_autograded_test(lesson):
    """nbgrader validate --invert finds no passing test cell in the student notebook."""
    result = validate(student_notebook(lesson), invert=True)
    assert result == {}, result


def test_lesson_cells_outside_the_exercises_run_in_the_student_notebook(lesson):
    """A student can run every lesson cell before answering anything."""
    nb = execute(student_notebook(lesson))
    broken = []
    for cell in nb.cells:
        nbgrader = cell.metadata.get("nbgrader", {})
        expected_error = "raises-exception" in cell.metadata.get("tags", [])
        if cell.cell_type != "code" or nbgrader.get("solution") or nbgrader.get("grade"):
            continue
        for out in cell.outputs:
            errored = out.output_type == "error" and not expected_error
            if errored or (
                out.output_type == "stream"
                and out.name == "stderr"
                and not WARNING.search(out.text)
            ):
                broken.append((cell.source.splitlines()[0], out.get("evalue", out.get("text"))))
    assert broken == []


def test_validate_shows_a_failed_check_as_its_one_line_explanation():
    """What Validate reports for an untouched exercise is the check's own sentence, which says
    the exercise is not written yet and how to start, with no frame of the grader's code."""
    result = Validator().validate(str(student_notebook("01_tensors_and_requires_grad")))
    first = result["failed"][0]["error"]
    assert "CheckFailed: make_leaf is not written yet" in first
    assert "replace the line `raise NotImplementedError(...)`" in first
    assert "checks.py" not in first and "grader/" not in first
