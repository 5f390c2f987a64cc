"""Grade every submission of a lesson and record one outcome per submission."""

import sys
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import MissingEntry
from tqdm import tqdm

from grader import outcomes
from grader.course import nbgrader_api, nbgrader_config


@dataclass(frozen=True)
class Result:
    """One submission's outcome: its score, or why it has none."""

    student: str
    lesson: str
    score: float
    max_score: float
    outcome: str
    detail: str = ""


def submitted_students(course_dir: Path, lesson: str) -> list[str]:
    """The students with a submission folder for `lesson`, sorted."""
    root = Path(course_dir) / "submitted"
    return sorted(p.parent.name for p in root.glob(f"*/{lesson}") if p.is_dir())


def autograde(
    course_dir: Path, lesson: str, students: list[str] | None = None, *, progress: bool = False
) -> list[Result]:
    """Grade each student's submission of `lesson`; a failure is recorded, never raised."""
    api = nbgrader_api(nbgrader_config(course_dir))
    chosen = students or submitted_students(course_dir, lesson)
    for student in tqdm(chosen, desc=lesson, unit="nb", disable=not progress, file=sys.stderr):
        result = api.autograde(lesson, student)
        if result["success"]:
            outcome, detail = "graded", _lateness(api, lesson, student)
        else:
            outcome, detail = "not graded", _last_line(result.get("error") or result.get("log"))
        outcomes.record(api.coursedir.db_url, lesson, student, outcome, detail)
    return [score_of(course_dir, lesson, student) for student in chosen]


def score_of(course_dir: Path, lesson: str, student: str) -> Result:
    """One submission's score and recorded outcome, read from the course's gradebook."""
    api = nbgrader_api(nbgrader_config(course_dir))
    outcome, detail = outcomes.read_all(api.coursedir.db_url).get(
        (lesson, student), ("not graded", "no grading run recorded")
    )
    with api.gradebook as gb:
        max_score = gb.find_assignment(lesson).max_score
        try:
            score = gb.find_submission(lesson, student).score
        except MissingEntry:
            score = 0.0
    return Result(student, lesson, score, max_score, outcome, detail)


def _lateness(api, lesson: str, student: str) -> str:
    with api.gradebook as gb:
        seconds = gb.find_submission(lesson, student).total_seconds_late
    return f"submitted {seconds / 3600:.1f} h late" if seconds > 0 else ""


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "nbgrader gave no reason"


def score_table(results: list[Result]) -> str:
    """A plain-text table: lesson, student, score, max, outcome."""
    rows = [("lesson", "student", "score", "max", "outcome")]
    rows += [
        (r.lesson, r.student, f"{r.score:g}", f"{r.max_score:g}", _outcome_text(r)) for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _outcome_text(result: Result) -> str:
    return f"{result.outcome} ({result.detail})" if result.detail else result.outcome
