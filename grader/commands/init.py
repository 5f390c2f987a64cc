"""Make a folder an nbgrader course for this repository's lessons."""

import sys
from datetime import datetime, timedelta
from pathlib import Path

from nbgrader.api import MissingEntry

from grader.compat import UTC
from grader.course import OWN_SOURCE, REPO_ROOT, SOLUTIONS, Course, CourseError, is_course, lessons
from grader.course_keys import ALL, make_secret, varied_lessons
from grader.grading import outcomes
from grader.lms.due_dates import course_time_zone, read_due_dates, zone_named
from grader.lms.late_policy import PLUGIN_NAME, parse_policy, policy_in_force
from grader.lms.roster import Student, read_roster, save_roster
from grader.outcome import nbgrader_failure
from grader.safe_output.text import terminal_safe
from grader.variants import TASK_LIST

CONFIG_TEMPLATE = """\
# An nbgrader course for the Autograd Fundamentals lessons, made by `grader init`.
# It reuses the repository's settings and keeps its own gradebook and submissions here.
c = get_config()  # noqa: F821
load_subconfig({repo_config!r})  # noqa: F821
# Feedback pages show no output of the grading run (also set by the config loaded above).
from grader.safe_output.feedback_steps import use_safe_feedback  # noqa: E402

use_safe_feedback(c)
c.CourseDirectory.root = {root!r}
c.CourseDirectory.source_directory = {source!r}
c.CourseDirectory.release_directory = "release"
# What a late submission costs (`grader init --late-policy`, grader/lms/late_policy.py).
c.AssignLatePenalties.plugin_class = {plugin!r}
c.CourseLatePolicy.policy = {policy!r}
"""
DB_URL_LINE = "c.CourseDirectory.db_url = {db_url!r}\n"
# Due dates written with no zone are read in it; the formgrader shows times in it.
TIME_ZONE_LINE = "c.NbGraderAPI.timezone = {time_zone!r}  # grader init --time-zone\n"
# The lessons that give each student their own tasks (grader/course_keys.py).
VARIANTS_LINE = "c.CourseVariants.lessons = {lessons!r}  # grader init --variants\n"


def init_course(
    folder: Path,
    roster: Path | None = None,
    due_dates: Path | None = None,
    db_url: str | None = None,
    *,
    id_column: str | None = None,
    time_zone: str | None = None,
    late_policy: str | None = None,
    variants: str | None = None,
) -> Course:
    """Create (or refresh) the course in `folder`: config, gradebook with every lesson, submitted/.

    With `roster`, a plain CSV with an `id` column or a Canvas or Moodle export (see
    grader/lms/roster.py; `id_column` names the column of ids), the students are entered in
    the gradebook and kept in `roster.csv`, and `collect` rejects anyone not on it.
    With `due_dates`, a CSV with `lesson` and `due` columns (grader/lms/due_dates.py), nbgrader
    records late submissions; `time_zone` (an IANA name) is the course's, which due dates
    written without one are read in. `late_policy` is what a late submission costs
    (grader/lms/late_policy.py; default none). `variants` gives each student their own tasks in
    the lessons it names ("LESSON,LESSON", "all" or "off", the default; grader/course_keys.py);
    the course's secret, which each student's key is made from, is made once and kept.
    With `db_url` (any SQLAlchemy URL, e.g. postgresql://…), the gradebook lives there instead of
    in gradebook.db. Refreshing a course keeps its time zone and late policy unless given anew.

    The roster, the due dates, the time zone and the policy are all read and checked before
    anything is written: with an error in any, `folder` is left as it was.
    """
    folder = Path(folder).resolve()
    _not_in_the_repository(folder)
    if id_column is not None and roster is None:
        raise ValueError("--id-column names a column of the roster: give the roster too")
    time_zone, policy = _settings(folder, time_zone, late_policy)
    varied_before = _varied_before(folder)
    varied = _variants(variants, varied_before)
    policy_before = _policy_before(folder)
    students = read_roster(roster, id_column) if roster is not None else None
    dues = None
    if due_dates is not None:
        dues = read_due_dates(due_dates, Course(folder).lessons, time_zone)

    (folder / "submitted").mkdir(parents=True, exist_ok=True)
    (folder / "nbgrader_config.py").write_text(
        CONFIG_TEMPLATE.format(
            repo_config=str(REPO_ROOT / "nbgrader_config.py"),
            root=str(folder),
            source=str(folder / OWN_SOURCE),
            plugin=PLUGIN_NAME,
            policy=policy,
        )
        + (DB_URL_LINE.format(db_url=db_url) if db_url else "")
        + (TIME_ZONE_LINE.format(time_zone=time_zone) if time_zone else "")
        + (VARIANTS_LINE.format(lessons=varied) if varied else "")
    )
    make_secret(folder)
    _link_lessons(folder / OWN_SOURCE)
    course = Course(folder)
    enter_lessons(course, lessons())
    if students is not None:
        enter_students(course, students)
    marked = set_due_dates(course, dues) if dues is not None else []
    if policy_before is not None and policy_before != policy:
        why = f"the late policy changed from {policy_before} to {policy}"
        marked += mark_late_submissions(course, why)
    changed = set(varied_before or []) ^ varied_lessons(course.config())
    if varied_before is not None and changed:
        why = "the lesson's tasks changed from class-wide to each student's own, or back"
        marked += mark_lessons(course, sorted(changed), why)
    if marked:
        print(
            f"{len(set(marked))} graded submissions will be graded again by the next"
            " `grader autograde` (their late penalty or their tasks change); until then export"
            " gives none",
            file=sys.stderr,
        )
    return course


def _policy_before(folder: Path) -> str | None:
    """The late policy of the course already in `folder` (as `--late-policy` writes it, or its
    plugin's name), or None for a new course."""
    if not is_course(folder):
        return None
    config = Course(folder).config()
    policy = policy_in_force(config)
    return str(policy) if policy is not None else config.AssignLatePenalties.get("plugin_class", "")


def _varied_before(folder: Path) -> list[str] | None:
    """The lessons with tasks of each student's own in the course already in `folder` (None for
    a new course)."""
    return sorted(varied_lessons(Course(folder).config())) if is_course(folder) else None


def _variants(given: str | None, before: list[str] | None) -> list[str]:
    """The lessons `--variants` names (checked), else those of the course as it was."""
    if given is None:
        return before or []
    chosen = [name.strip() for name in given.split(",") if name.strip()]
    if chosen in ([], ["off"]):
        return []
    if chosen == [ALL]:
        return [ALL]
    if ALL in chosen or "off" in chosen:
        raise ValueError("--variants: give all or off alone, or a comma-separated list of lessons")
    having = sorted({family.lesson for family in TASK_LIST})
    unknown = [name for name in chosen if name not in having]
    if unknown:
        raise ValueError(
            f"--variants: {', '.join(unknown)} has no tasks of each student's own; the lessons "
            f"that have are {', '.join(having)} (or give all, or off)"
        )
    return chosen


def mark_lessons(course: Course, chosen: list[str], why: str) -> list[tuple[str, str]]:
    """Mark every graded submission of the `chosen` lessons to be graded again, saying `why`."""
    with course.api().gradebook as gb:
        marked = [
            (assignment.name, submission.student.id)
            for assignment in gb.assignments
            if assignment.name in chosen
            for submission in assignment.submissions
        ]
    outcomes.mark_to_regrade(course.db_url, marked, why)
    return marked


def mark_late_submissions(course: Course, why: str) -> list[tuple[str, str]]:
    """Mark every late submission in the gradebook to be graded again, saying `why` until the
    next autograde has; the (lesson, student) marked. Export and the LMS imports give none of
    their late penalties in the meantime."""
    with course.api().gradebook as gb:
        marked = [
            (assignment.name, submission.student.id)
            for assignment in gb.assignments
            for submission in assignment.submissions
            if submission.total_seconds_late > 0
        ]
    outcomes.mark_to_regrade(course.db_url, marked, why)
    return marked


def _settings(folder: Path, time_zone: str | None, late_policy: str | None) -> tuple:
    """The course's time zone (an IANA name, or None) and late policy (its text): those given,
    checked, else those of the course already in `folder` (none for a new course)."""
    before = Course(folder) if is_course(folder) else None
    if time_zone is None and before is not None:
        time_zone = course_time_zone(before)
    if time_zone is not None:
        time_zone = zone_named(time_zone).key
    if late_policy is not None:
        return time_zone, str(parse_policy(late_policy))
    kept = before and policy_in_force(before.config())
    return time_zone, str(kept or parse_policy("none"))


def _not_in_the_repository(folder: Path) -> None:
    """A course folder is no part of the kit's repository (its config is every course's, its
    folders are the lessons'), but for build/, where `make demo` makes one."""
    inside = folder == REPO_ROOT or folder.is_relative_to(REPO_ROOT)
    if inside and not folder.is_relative_to(REPO_ROOT / "build"):
        raise CourseError(
            f"{folder} is in the kit's repository: make the course in a folder of its own"
            " (e.g. ~/autograd-2026), or under build/ to try it out"
        )


def _link_lessons(source: Path) -> None:
    """The course's source folder, with a link to each of the kit's lessons (the instructor's
    own assignments go beside them, as nbgrader's source/<assignment>/)."""
    source.mkdir(exist_ok=True)
    for lesson in lessons():
        link = source / lesson
        if not link.exists() and not link.is_symlink():
            link.symlink_to(SOLUTIONS / lesson, target_is_directory=True)


def enter_lessons(course: Course, selected: list[str]) -> None:
    """Enter `selected` lessons in the course's gradebook, as nbgrader needs before grading."""
    api = course.api()
    for lesson in selected:
        result = api.generate_assignment(lesson, force=True, create=True)
        if not result["success"]:
            raise RuntimeError(
                f"could not enter {lesson} in {course.root}: {nbgrader_failure(result)}"
            )


def ensure_entered(course: Course, selected: list[str]) -> list[str]:
    """Enter those of `selected` that the course's gradebook does not hold yet (a lesson added to
    the kit after the course was made, linked into its source/ first); the ones entered."""
    if course.source != SOLUTIONS:
        _link_lessons(course.source)
    with course.api().gradebook as gb:
        held = {assignment.name for assignment in gb.assignments}
    missing = [lesson for lesson in selected if lesson not in held]
    enter_lessons(course, missing)
    return missing


def enter_students(course: Course, students: list[Student]) -> None:
    """Enter `students` in the course's gradebook (names, email and the platform's user id,
    where known) and keep them as the course's roster.csv."""
    with course.api().gradebook as gb:
        for student in students:
            known = {
                "first_name": student.first_name,
                "last_name": student.last_name,
                "email": student.email,
                "lms_user_id": student.lms_id,
            }
            gb.update_or_create_student(student.id, **{k: v for k, v in known.items() if v})
    save_roster(course.root, students)
    for note in getattr(students, "notes", []):  # rows left out on purpose (a test student)
        print(terminal_safe(note), file=sys.stderr)


def set_due_dates(course: Course, dues: dict[str, datetime]) -> list[tuple[str, str]]:
    """Record each lesson's due date (an aware datetime) in the course's gradebook; a graded
    submission late by the due date it was graded with, or by the new one, is marked to be
    graded again (its late penalty computed anew). The (lesson, student) marked."""
    affected: dict[str, tuple[str, list[str]]] = {}
    with course.api().gradebook as gb:
        for lesson, due in dues.items():
            new = due.astimezone(UTC).replace(tzinfo=None)  # nbgrader keeps naive UTC
            old = _due_date(gb, lesson)
            if old != new and _has_submissions(gb, lesson):
                why = f"{lesson}'s due date changed from {_minute(old)} to {_minute(new)}"
                late = [
                    submission.student.id
                    for submission in gb.find_assignment(lesson).submissions
                    if submission.total_seconds_late > 0 or _late_by(submission, new) > 0
                ]
                affected[lesson] = (why, late)
            gb.update_or_create_assignment(lesson, duedate=due)
    marked = []
    for lesson, (why, students) in affected.items():
        outcomes.mark_to_regrade(course.db_url, [(lesson, s) for s in students], why)
        marked += [(lesson, s) for s in students]
    return marked


def _due_date(gb, lesson: str) -> datetime | None:
    try:
        return gb.find_assignment(lesson).duedate
    except MissingEntry:
        return None


def _has_submissions(gb, lesson: str) -> bool:
    try:
        return bool(gb.find_assignment(lesson).submissions)
    except MissingEntry:
        return False


def _late_by(submission, due: datetime) -> float:
    """The seconds `submission` (nbgrader's, times naive UTC) is late by the due date `due`."""
    if submission.timestamp is None:
        return 0.0
    return max(
        0.0, (submission.timestamp - due - (submission.extension or timedelta())).total_seconds()
    )


def _minute(moment: datetime | None) -> str:
    """A naive UTC time, to the minute; `none` for no due date."""
    return f"{moment:%Y-%m-%d %H:%M} UTC" if moment is not None else "none"
