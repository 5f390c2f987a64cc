"""One submission's grades, written to nbgrader's gradebook in a single transaction.

nbgrader's own way (`update_or_create_submission`, then SaveAutoGrades and
AssignLatePenalties) goes through its ORM: a transaction for the student, one for the
submission, one to make its grade and comment rows, one for the scores, loading each
relationship with a query of its own. This writes the same rows to nbgrader's own tables with a
few statements, computing what it computes the way it does: the submission's lateness as
`SubmittedAssignment.total_seconds_late` does, the notebook's score with nbgrader's own SQL.
The equivalence test compares every row with stock nbgrader's.
"""

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from nbgrader import utils
from nbgrader.api import (
    Assignment,
    BaseCell,
    Comment,
    Grade,
    Student,
    SubmittedAssignment,
    SubmittedNotebook,
    new_uuid,
)
from sqlalchemy import Connection, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from grader.cells import grade_id, is_answer, is_graded
from grader.grading.database import sqlalchemy_engine
from grader.judging.verdict import Verdict
from grader.lms.late_policy import late_penalty_plugin


@dataclass(frozen=True)
class NotebookCells:
    """A released notebook as the gradebook has it: its id, and the ids of the cells a
    submission of it gets a grade row for (graded and task cells) or a comment row for (answer
    and task cells)."""

    id: str
    graded: tuple[str, ...]
    commented: tuple[str, ...]

    @classmethod
    def of(cls, notebook) -> "NotebookCells":
        """From nbgrader's `Notebook` row."""
        return cls(
            notebook.id,
            tuple(c.id for c in [*notebook.grade_cells, *notebook.task_cells]),
            tuple(c.id for c in [*notebook.solution_cells, *notebook.task_cells]),
        )


@dataclass(frozen=True)
class Saved:
    """What saving the grades found: the seconds the submission is late, and the names of
    the notebook's graded cells (its grade rows)."""

    seconds_late: float
    grade_cells: tuple[str, ...]


def save_grades(
    db_url,
    released,
    student: str,
    timestamp,
    nb,
    verdicts: dict[str, Verdict],
    config,
    review: dict[str, str],
    also: Callable[[Connection, Saved], None],
) -> Saved:
    """nbgrader's gradebook steps for one graded notebook `nb`, in one transaction.

    Test cells get the judge's score (`verdicts`); other graded cells are scored as nbgrader
    scores them (an unchanged answer cell gets 0, a manually graded one waits for the grader);
    a graded cell the student deleted gets 0. Answer cells left as released get nbgrader's
    "No response." comment, and those to `review` (grade id -> why) a comment that says why. A
    late submission gets the course's late penalty. `released` is the lesson as the gradebook
    has it (a `ReleasedLesson`). `also` writes more in the same transaction, given what was
    saved.
    """
    stamp = utils.parse_utc(timestamp) if timestamp else None
    engine = sqlalchemy_engine(db_url)
    ensure_student(engine, student)
    with engine.begin() as db:
        submission = _submission(db, released, student, stamp)
        mine = db.execute(
            select(SubmittedNotebook.id).where(
                SubmittedNotebook.assignment_id == submission,
                SubmittedNotebook.notebook_id == released.notebook_id,
            )
        ).scalar_one()
        grades = _score(db, mine, nb, verdicts)
        _comment(db, mine, nb, review)
        late = _seconds_late(db, submission)
        penalty = None
        if late > 0:
            score = db.execute(
                select(func.coalesce(func.sum(Grade.score), 0.0)).where(Grade.notebook_id == mine)
            ).scalar_one()
            penalty = late_penalty_plugin(config).late_submission_penalty(student, score, late)
            penalty = None if penalty is None else min(penalty, score)
        db.execute(
            update(SubmittedNotebook)
            .where(SubmittedNotebook.id == mine)
            .values(late_submission_penalty=penalty)
        )
        saved = Saved(late, grades)
        also(db, saved)
    return saved


def ensure_student(engine, student: str) -> None:
    """`update_or_create_student(student)`: a row with the id only, if there is none. In a
    transaction of its own: the other grading process may be adding the same student for
    another lesson (a class of one), and then the first to commit adds it."""
    with engine.connect() as db:
        known = db.execute(select(Student.id).where(Student.id == student)).first() is not None
    if not known:
        add_student(engine, student)


def add_student(engine, student: str) -> None:
    """Add the student's row, unless another process has added it since we looked."""
    with contextlib.suppress(IntegrityError), engine.begin() as db:
        db.execute(insert(Student).values(id=student))


def _submission(db, released, student: str, stamp) -> str:
    """`update_or_create_submission`: the submission's id; a new submission gets a notebook and
    its grade and comment rows as `add_submission` makes them; a timestamp replaces the old."""
    found = db.execute(
        select(SubmittedAssignment.id).where(
            SubmittedAssignment.assignment_id == released.assignment_id,
            SubmittedAssignment.student_id == student,
        )
    ).scalar()
    if found is not None:
        if stamp is not None:
            db.execute(
                update(SubmittedAssignment)
                .where(SubmittedAssignment.id == found)
                .values(timestamp=stamp)
            )
        return found
    submission = new_uuid()
    db.execute(
        insert(SubmittedAssignment).values(
            id=submission,
            assignment_id=released.assignment_id,
            student_id=student,
            timestamp=stamp,
        )
    )
    for notebook in released.notebooks:
        mine = new_uuid()
        db.execute(
            insert(SubmittedNotebook).values(
                id=mine, assignment_id=submission, notebook_id=notebook.id
            )
        )
        for table, cells in ((Grade, notebook.graded), (Comment, notebook.commented)):
            rows = [{"id": new_uuid(), "notebook_id": mine, "cell_id": cell} for cell in cells]
            if rows:
                db.execute(insert(table), rows)
    return submission


def _score(db, notebook: str, nb, verdicts: dict[str, Verdict]) -> tuple[str, ...]:
    """SaveAutoGrades' scores; the names of the notebook's grade rows."""
    rows = db.execute(
        select(Grade.id, BaseCell.name, Grade.manual_score)
        .join(BaseCell, Grade.cell_id == BaseCell.id)
        .where(Grade.notebook_id == notebook)
    ).all()
    grades = {name: (row_id, manual) for row_id, name, manual in rows}
    scores = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        if is_graded(cell) and gid in grades:
            judged = verdicts.get(gid)
            auto = judged.points if judged else utils.determine_grade(cell)[0]
            manual = grades[gid][1]
            scores[gid] = (auto, manual is not None or auto is None)
    present = {grade_id(cell) for cell in nb.cells}
    for name in grades:  # a deleted test cell must not keep an old score
        if name not in present:
            scores[name] = (0, False)
    if scores:
        db.execute(
            update(Grade)
            .where(Grade.id == bindparam("row"))
            .values(auto_score=bindparam("auto"), needs_manual_grade=bindparam("needs")),
            [
                {"row": grades[name][0], "auto": auto, "needs": needs}
                for name, (auto, needs) in scores.items()
            ],
        )
    return tuple(grades)


def _comment(db, notebook: str, nb, review: dict[str, str]) -> None:
    """SaveAutoGrades' comments: "No response." on an answer cell left as released; and on one
    to review, why (the formgrader shows it beside the cell)."""
    rows = db.execute(
        select(Comment.id, BaseCell.name)
        .join(BaseCell, Comment.cell_id == BaseCell.id)
        .where(Comment.notebook_id == notebook)
    ).all()
    comments = {name: row_id for row_id, name in rows}
    changes = []
    for cell in nb.cells:
        gid = grade_id(cell)
        if (is_answer(cell) or utils.is_task(cell)) and gid in comments:
            unchanged = cell.metadata.nbgrader.get("checksum") == utils.compute_checksum(cell)
            no_response = unchanged and not utils.is_task(cell)
            text = "No response." if no_response else None
            if gid in review:
                text = f"For the instructor to review: this answer {review[gid]}."
            changes.append({"row": comments[gid], "text": text})
    if changes:
        db.execute(
            update(Comment)
            .where(Comment.id == bindparam("row"))
            .values(auto_comment=bindparam("text")),
            changes,
        )


def _seconds_late(db, submission: str) -> float:
    """`SubmittedAssignment.total_seconds_late`: past the due date plus any extension."""
    timestamp, extension, duedate = db.execute(
        select(SubmittedAssignment.timestamp, SubmittedAssignment.extension, Assignment.duedate)
        .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
        .where(SubmittedAssignment.id == submission)
    ).one()
    if extension is not None:
        duedate = duedate + extension
    if timestamp is None or duedate is None:
        return 0
    return max(0, (timestamp - duedate).total_seconds())
