"""Grades CSV: nbgrader's columns, whether each grade is final and why not, each submission's
outcome and what to review in it, and one column per exercise.

A grade that is not final (grader/grading/finality.py) says why in `why_not_final`; where there
is no score to give yet (not graded) its score columns are empty, never 0, and where its late
penalty is to be computed again (the policy or due date changed) its penalty and score are.
Assignments: those someone handed in, those with a due date and the course's own; a lesson of
the kit that the course never used has no rows."""

import csv
from pathlib import Path

from nbgrader.api import MissingEntry, Student

from grader.course import Course, lessons
from grader.grading import outcomes
from grader.grading.finality import Finality, finality_of
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
# then one column per exercise
OUR_COLUMNS = ["final", "why_not_final", "outcome", "detail", "review", "verdicts"]
NO_SUBMISSION = "no submission"


def grade_rows(course: Course) -> tuple[list[str], list[dict]]:
    """The CSV header and one row per assignment and student, with nbgrader's export's values
    where the grade is final."""
    recorded, review = outcomes.read_all(course.db_url), outcomes.read_review(course.db_url)
    finality = finality_of(course)
    rows, exercises = [], []
    with course.api().gradebook as gb:
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            if not _in_use(assignment, finality):
                continue
            ids = _exercise_columns(assignment)
            exercises += [i for i in ids.values() if i not in exercises]
            for student in _students(gb, assignment.name, finality):
                key = (assignment.name, student.id)
                row = _row(gb, assignment, student, ids, recorded, finality.get(key))
                row["review"] = review.get(key, "")
                row["verdicts"] = verdicts_of(assignment.name)
                rows.append(row)
    return NBGRADER_COLUMNS + OUR_COLUMNS + exercises, rows


def _students(gb, assignment: str, finality: dict) -> list:
    """The gradebook's students, and anyone whose submission was collected but who is not in it
    yet (a course without a roster, before grading enters them), sorted by id."""
    found = {student.id: student for student in gb.students}
    for name, student in finality:
        if name == assignment and student not in found:
            found[student] = Student(id=student)
    return [found[sid] for sid in sorted(found)]


def _in_use(assignment, finality: dict) -> bool:
    """Whether the course uses `assignment`: someone handed it in, it has a due date, or it is
    the course's own (not one of the kit's lessons, which every course's gradebook holds)."""
    handed_in = any(name == assignment.name for name, _ in finality)
    return handed_in or assignment.duedate is not None or assignment.name not in lessons()


def _row(gb, assignment, student, exercise_ids, recorded, finality: Finality | None) -> dict:
    row = {
        "assignment": assignment.name,
        "duedate": assignment.duedate or "",
        "student_id": student.id,
        "last_name": student.last_name or "",
        "first_name": student.first_name or "",
        "email": student.email or "",
        "max_score": assignment.max_score,
    }
    key = (assignment.name, student.id)
    if finality is None:  # nothing handed in (at most the row an extension made before)
        row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0)
        row.update(final="yes", why_not_final="", outcome=NO_SUBMISSION, detail="")
        return row
    row.update(final="yes" if finality.final else "no", why_not_final=str(finality))
    try:
        submission = gb.find_submission(assignment.name, student.id)
    except MissingEntry:
        submission = None
    unrecorded = (Outcome.GRADED if finality.score_known else Outcome.NOT_GRADED, "", "")
    outcome, detail, _ = recorded.get(key, unrecorded)
    row.update(outcome=outcome, detail=detail)
    if submission is None or not finality.score_known:  # collected, not graded: no score yet
        row.update(timestamp="", raw_score="", late_submission_penalty="", score="")
        return row
    penalty = submission.late_submission_penalty or 0.0
    row.update(
        timestamp=submission.timestamp or "",
        raw_score=submission.score,
        late_submission_penalty=penalty if finality.penalty_known else "",
        score=max(0.0, submission.score - penalty) if finality.penalty_known else "",
    )
    for notebook in submission.notebooks:
        for grade in notebook.grades:
            column = exercise_ids.get((notebook.name, grade.name))
            if column:
                row[column] = grade.score
    return row


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
