"""Give one student more time for one lesson (`grader extend STUDENT LESSON --until WHEN`).

The extension is nbgrader's own: the submission's `extension` in the gradebook, the time past
the lesson's due date that its lateness is counted from, which both grading engines and the
formgrader read. It can be given before the student submits (the submission's gradebook row is
made now, as nbgrader's API makes it, and grading fills it in). A submission graded already is
marked to be graded again, so that its penalty and its "submitted … late" note are recomputed
by the next `grader autograde`.
"""

import difflib
from datetime import datetime, timedelta

from nbgrader.api import MissingEntry

from grader.compat import UTC
from grader.course import Course
from grader.grading import outcomes
from grader.lms.due_dates import course_time_zone, parse_moment


class ExtensionError(ValueError):
    """An extension that cannot be given: unknown student or lesson, no due date, a time before
    the due date."""


def extend(course: Course, student: str, lesson: str, until: datetime | str) -> timedelta:
    """Let `student` submit `lesson` until `until` (an aware datetime, or text as due dates are
    written, read in the course's time zone) without penalty; the extension past the due date.
    `until` at the due date takes an earlier extension back."""
    course.known([lesson])
    if isinstance(until, str):
        until = parse_moment(until, course_time_zone(course))
    if until.tzinfo is None:
        raise ExtensionError(f"{until} has no time zone: give one, e.g. {until.isoformat()}Z")
    with course.api().gradebook as gb:
        try:
            gb.find_student(student)
        except MissingEntry:
            known = [s.id for s in gb.students]
            close = difflib.get_close_matches(student, known, n=1)
            guess = f": did you mean {close[0]}?" if close else " (see the course's roster)"
            raise ExtensionError(
                f"no student {student!r} in the course's gradebook{guess}"
            ) from None
        try:
            due = gb.find_assignment(lesson).duedate
        except MissingEntry:
            raise ExtensionError(f"{lesson} is not in the course's gradebook yet") from None
        if due is None:
            raise ExtensionError(
                f"{lesson} has no due date, so nothing is late: set one with"
                " `grader init --due-dates` before extending it"
            )
        due = due.replace(tzinfo=UTC)  # nbgrader keeps due dates as naive UTC
        extension = until.astimezone(UTC) - due
        if extension < timedelta(0):
            raise ExtensionError(
                f"{until.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC is before {lesson}'s due date,"
                f" {due:%Y-%m-%d %H:%M:%S} UTC: an extension gives more time"
            )
        gb.update_or_create_submission(lesson, student, extension=extension or None)
    mark_for_regrading(course, student, lesson)
    return extension


def mark_for_regrading(course: Course, student: str, lesson: str) -> bool:
    """Mark the submission to be graded again by the next `autograde` (its outcome stays shown
    until then, not final: its late penalty changed); whether it had been graded."""
    if (lesson, student) not in outcomes.read_all(course.db_url):
        return False
    reason = f"{student}'s extension for {lesson} changed"
    outcomes.mark_to_regrade(course.db_url, [(lesson, student)], reason)
    return True
