"""Each submission's outcome (graded, or why not), kept beside nbgrader's gradebook tables."""

from datetime import datetime

from sqlalchemy import Column, DateTime, MetaData, String, Table, Text, select

from grader.compat import UTC
from grader.grading.database import sqlalchemy_engine
from grader.outcome import Outcome

_metadata = MetaData()
OUTCOMES = Table(
    "grader_outcome",
    _metadata,
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("outcome", String(32), nullable=False),
    Column("detail", Text, nullable=False, default=""),
    Column("fingerprint", String(64), nullable=False, default=""),
    Column("recorded_at", DateTime, nullable=False),
)


# Answer cells whose code reaches for the interpreter's or the grader's internals
# (grader.judging.how): the exercise earned nothing, and the instructor should look.
REVIEW = Table(
    "grader_review",
    _metadata,
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("cell", String(128), primary_key=True),
    Column("reason", Text, nullable=False),
)

# Graded submissions whose grade no longer stands as the gradebook holds it (the late policy or
# the due date changed since): their fingerprint is forgotten, so the next autograde grades
# them again, and this says why until it has.
REGRADE = Table(
    "grader_regrade",
    _metadata,
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("reason", Text, nullable=False),
)


def record(
    db_url: str,
    lesson: str,
    student: str,
    outcome: Outcome,
    detail: str = "",
    fingerprint: str = "",
) -> None:
    """Store (or replace) the outcome of one submission, in one transaction."""
    with sqlalchemy_engine(db_url).begin() as db:
        write(db, lesson, student, outcome, detail, fingerprint)


def write(
    db,
    lesson: str,
    student: str,
    outcome: Outcome,
    detail: str,
    fingerprint: str,
    review: dict[str, str] | None = None,
) -> None:
    """Store (or replace) the outcome of one submission in the transaction `db` (a SQLAlchemy
    connection), so that it can be committed with the submission's grades; `review` holds the
    answer cells to look at, and why."""
    _metadata.create_all(db)  # the tables, if the gradebook has none yet
    mine = (REVIEW.c.assignment == lesson) & (REVIEW.c.student == student)
    db.execute(REVIEW.delete().where(mine))
    db.execute(
        REGRADE.delete().where((REGRADE.c.assignment == lesson) & (REGRADE.c.student == student))
    )
    for cell, reason in (review or {}).items():
        db.execute(
            REVIEW.insert().values(assignment=lesson, student=student, cell=cell, reason=reason)
        )
    row = {
        "assignment": lesson,
        "student": student,
        "outcome": Outcome(outcome).value,
        "detail": detail,
        "fingerprint": fingerprint,
        "recorded_at": datetime.now(UTC).replace(tzinfo=None),
    }
    db.execute(
        OUTCOMES.delete().where((OUTCOMES.c.assignment == lesson) & (OUTCOMES.c.student == student))
    )
    db.execute(OUTCOMES.insert().values(**row))


def read_all(db_url: str) -> dict[tuple[str, str], tuple[str, str, str]]:
    """Every recorded outcome: (lesson, student) -> (outcome, detail, fingerprint)."""
    engine = sqlalchemy_engine(db_url)
    _metadata.create_all(engine)
    with engine.connect() as conn:
        rows = conn.execute(select(OUTCOMES)).all()
    return {(r.assignment, r.student): (r.outcome, r.detail, r.fingerprint) for r in rows}


def read_review(db_url: str) -> dict[tuple[str, str], str]:
    """What to look at in each submission: (lesson, student) -> "cell: why; …"."""
    engine = sqlalchemy_engine(db_url)
    _metadata.create_all(engine)
    with engine.connect() as conn:
        rows = conn.execute(select(REVIEW).order_by(REVIEW.c.cell)).all()
    found: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        found.setdefault((r.assignment, r.student), []).append(f"{r.cell} {r.reason}")
    return {key: "; ".join(reasons) for key, reasons in found.items()}


def mark_to_regrade(db_url: str, submissions: list[tuple[str, str]], reason: str) -> None:
    """Mark each (lesson, student) of `submissions` to be graded again by the next autograde
    (its recorded fingerprint forgotten), saying `reason` until it is; one transaction."""
    with sqlalchemy_engine(db_url).begin() as db:
        _metadata.create_all(db)
        for lesson, student in submissions:
            mine = (OUTCOMES.c.assignment == lesson) & (OUTCOMES.c.student == student)
            db.execute(OUTCOMES.update().where(mine).values(fingerprint=""))
            marked = (REGRADE.c.assignment == lesson) & (REGRADE.c.student == student)
            before = db.execute(select(REGRADE.c.reason).where(marked)).scalar()
            both = f"{before}; {reason}" if before and reason not in before else before or reason
            db.execute(REGRADE.delete().where(marked))
            db.execute(REGRADE.insert().values(assignment=lesson, student=student, reason=both))


def read_regrade(db_url: str) -> dict[tuple[str, str], str]:
    """The submissions marked to be graded again: (lesson, student) -> why."""
    engine = sqlalchemy_engine(db_url)
    _metadata.create_all(engine)
    with engine.connect() as conn:
        rows = conn.execute(select(REGRADE)).all()
    return {(r.assignment, r.student): r.reason for r in rows}
