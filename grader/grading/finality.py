"""Whether each grade is final, and if not why: the one answer that export, the score table and
the LMS imports give.

A grade is not final when it is not there yet (collected, not graded, or a run that ended
`not graded`: the grader failed on it, or it wrote into the grader's channel; its 0 only holds
the place), when it was computed from another file than the one now collected, when its late
penalty was computed under a late policy or due date changed since, when points still await a
manual grade, or when a late penalty rests on a submission time that is only an estimate
(grader/lms/time_estimates.py).
"""

import math
from dataclasses import dataclass

from grader.grading import outcomes
from grader.lms.time_estimates import estimated_from
from grader.outcome import Outcome

NOT_GRADED_YET = "not graded yet: run grader autograde"
OLDER_FILE = "graded from an older file than the one collected: run grader autograde"


@dataclass(frozen=True)
class Finality:
    """Whether one submission's grade is final, and what the gradebook's numbers are worth."""

    reasons: tuple[str, ...] = ()  # why it is not final; none: it is
    score_known: bool = True  # False: no score to give at all (not graded yet)
    penalty_known: bool = True  # False: the late penalty is to be computed again

    @property
    def final(self) -> bool:
        """Whether the grade can be given as it stands."""
        return not self.reasons

    def __str__(self) -> str:
        return "; ".join(self.reasons)


def late_by(seconds: float) -> str:
    """How late, to the minute (`1 min`, `14 h 12 min`, `2 d 3 h`); a part of a minute counts as
    one, as a late policy counts it."""
    minutes = math.ceil(seconds / 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "min")]
    shown = [f"{n} {unit}" for n, unit in parts if n]
    return " ".join(shown) or "0 min"


def finality_of(course) -> dict[tuple[str, str], Finality]:
    """(assignment, student) -> whether its grade is final, for every submission collected or in
    the gradebook; a (assignment, student) not in it has no submission at all."""
    recorded = outcomes.read_all(course.db_url)
    regrade = outcomes.read_regrade(course.db_url)
    found: dict[tuple[str, str], Finality] = {}
    with course.api().gradebook as gb:
        for assignment in gb.assignments:
            collected = set(course.submitted_students(assignment.name))
            in_gradebook = {s.student.id: s for s in assignment.submissions}
            for student in sorted(collected | set(in_gradebook)):
                key = (assignment.name, student)
                judged = _judged(
                    course, key, in_gradebook.get(student), student in collected,
                    recorded.get(key), regrade.get(key),
                )  # fmt: skip
                if judged is not None:
                    found[key] = judged
    return found


def _judged(course, key, submission, collected: bool, recorded, regrade) -> Finality | None:
    """The finality of one submission (None: there is none, only the gradebook row an extension
    made before anything was handed in)."""
    assignment, student = key
    if recorded is None and not (submission is not None and _scored(submission)):
        return Finality((NOT_GRADED_YET,), False, False) if collected else None
    if recorded and recorded[0] == Outcome.NOT_GRADED:  # its 0 holds a place: it is no grade
        why = f"not graded ({recorded[1]}): look at it, then grade it again or by hand"
        return Finality((why,), False, False)
    stamp = recorded[2] if recorded else None  # a recorded outcome is a verdict, 0 included
    reasons, penalty_known = [], True
    if regrade:
        reasons.append(f"to be graded again: {regrade}")
        penalty_known = False
    elif stamp and collected and stamp != _fingerprint(course.submission(student, assignment)):
        reasons.append(OLDER_FILE)
    pending = _pending_points(submission)
    if pending:
        reasons.append(f"{pending:g} points await a manual grade")
    estimate = estimated_from(course.root, student, assignment)
    if estimate and penalty_known and submission and submission.late_submission_penalty:
        late = late_by(submission.total_seconds_late)
        reasons.append(
            f"lateness estimated from {estimate} ({late} late by it): write the time it was"
            " submitted into its timestamp.txt"
        )
    return Finality(tuple(reasons), True, penalty_known)


def _fingerprint(folder) -> str:
    from grader.grading.class_run import fingerprint  # class_run imports the engines: only here

    return fingerprint(folder)


def _scored(submission) -> bool:
    return any(
        grade.auto_score is not None or grade.manual_score is not None
        for notebook in submission.notebooks
        for grade in notebook.grades
    )


def _pending_points(submission) -> float:
    """The points of `submission`'s grades that still await a manual grade."""
    if submission is None:
        return 0.0
    return sum(
        grade.max_score
        for notebook in submission.notebooks
        for grade in notebook.grades
        if grade.needs_manual_grade
    )
