"""The repository root is an nbgrader course: `solutions/` is the source, `notebooks/` the
release."""

from pathlib import Path

c = get_config()  # noqa: F821 -- provided by traitlets when nbgrader loads this file

c.CourseDirectory.root = str(Path(__file__).resolve().parent)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
# The gradebook's assignments refer to a course row: SQLite lets a missing one pass, but
# PostgreSQL enforces the foreign key, so the course needs an id.
c.CourseDirectory.course_id = "autograd_fundamentals"

# Warnings that student code prints to stderr (torch's UserWarnings among them) must not cost
# points: nbgrader scores a test cell 0 for any stderr output unless it is removed here.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"\w+Warning: "

# A lesson's probes.py (the grader's checks judged outside the submission) stays with the
# instructor: it is not released to students nor copied beside their work.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "probes.py"]

# An exercise the student has not started says so, and how to start, when its cell runs.
c.ClearSolutions.code_stub = {
    "python": "# YOUR CODE HERE\n"
    'raise NotImplementedError("Not written yet: replace this line with your answer, '
    'run this cell, then the cell below it.")'
}

# Feedback pages (`nbgrader generate_feedback`, the formgrader's button, `grader feedback`) show
# the student's notebook as submitted, the released lesson and the judge's verdicts: never an
# output of the grading run, which comes from the process where hidden tests and probes ran.
from grader.safe_output.feedback_steps import use_safe_feedback  # noqa: E402

use_safe_feedback(c)

# The autograded notebook, which the formgrader renders on the instructor's origin, is written
# with the student's outputs and markdown inert (the default engine writes it the same way).
from grader.safe_output.autograded import use_inert_autograded  # noqa: E402

use_inert_autograded(c)

# `nbgrader validate` prints each failed test's message first, whole, and what the test checks,
# not its source (as the students' Validate button and `python -m grader.validation` do).
from grader.student_lab import use_message_first_validation  # noqa: E402

use_message_first_validation(c)

# `nbgrader export` writes a CSV a spreadsheet opens safely: quoted, no cell read as a formula.
from grader.safe_output.stock_export import use_safe_export  # noqa: E402

use_safe_export(c)
