"""Grades CSV: nbgrader's columns, each submission's outcome and what to review in it, and one
column per exercise."""

import csv
from pathlib import Path

from nbgrader.api import MissingEntry

from grader.course import Course
from grader.grading import outcomes
from grader.judging.reference import verdicts_of
from grader.outcome import Outcome
from grader.safe_output.text import csv_safe

NBGRADER_COLUMNS = [
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
]
OUR_COLUMNS = ["outcome", "detail", "review", "verdicts"]  # then one column per exercise


def grade_rows(course: Course) -> tuple[list[str], list[dict]]:
    """The CSV header and one row per lesson and student, as nbgrader's export computes them."""
    recorded, review = outcomes.read_all(course.db_url), outcomes.read_review(course.db_url)
    rows, exercises = [], []
    with course.api().gradebook as gb:
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            ids = _exercise_columns(assignment)
            exercises += [i for i in ids.values() if i not in exercises]
            for student in sorted(gb.students, key=lambda s: s.id):
                row = _row(gb, assignment, student, ids, recorded)
                row["review"] = review.get((assignment.name, student.id), "")
                row["verdicts"] = verdicts_of(assignment.name)
                rows.append(row)
    return NBGRADER_COLUMNS + OUR_COLUMNS + exercises, rows


def _row(gb, assignment, student, exercise_ids, recorded) -> dict:
    row = {
        "assignment": assignment.name,
        "duedate": assignment.duedate or "",
        "student_id": student.id,
        "last_name": student.last_name or "",
        "first_name": student.first_name or "",
        "email": student.email or "",
        "max_score": assignment.max_score,
    }
    try:
        submission = gb.find_submission(assignment.name, student.id)
    except MissingEntry:
        submission = None
    key = (assignment.name, student.id)
    if submission is None or (key not in recorded and _never_graded(submission)):
        # none, or only the row an extension made before anything was handed in
        row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0)
        row.update(outcome="no submission", detail="")
        return row
    penalty = submission.late_submission_penalty or 0.0
    row.update(
        timestamp=submission.timestamp or "",
        raw_score=submission.score,
        late_submission_penalty=penalty,
        score=max(0.0, submission.score - penalty),
    )
    outcome, detail, _ = recorded.get((assignment.name, student.id), (Outcome.GRADED, "", ""))
    row.update(outcome=outcome, detail=detail)
    for notebook in submission.notebooks:
        for grade in notebook.grades:
            column = exercise_ids.get((notebook.name, grade.name))
            if column:
                row[column] = grade.score
    return row


def _never_graded(submission) -> bool:
    """Whether a submission's row holds no timestamp and no grade at all: the row nbgrader makes
    for an extension given before anything was handed in."""
    grades = [grade for notebook in submission.notebooks for grade in notebook.grades]
    scored = any(g.auto_score is not None or g.manual_score is not None for g in grades)
    return submission.timestamp is None and not scored


def _exercise_columns(assignment) -> dict[tuple[str, str], str]:
    """(notebook, grade id) -> the exercise's column: its grade id, after its notebook's name
    where the assignment has several (`problem1:squares`), since ids are unique per notebook."""
    several = len(assignment.notebooks) > 1
    return {
        (nb.name, cell.name): f"{nb.name}:{cell.name}" if several else cell.name
        for nb in sorted(assignment.notebooks, key=lambda nb: nb.name)
        for cell in nb.grade_cells
    }


def export(course: Course, to: Path) -> Path:
    """Write the grades CSV to `to`, every text cell escaped and kept from reading as a formula."""
    header, rows = grade_rows(course)
    to = Path(to)
    to.parent.mkdir(parents=True, exist_ok=True)
    with open(to, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, restval="")
        writer.writeheader()
        writer.writerows({key: csv_safe(value) for key, value in row.items()} for row in rows)
    return to
