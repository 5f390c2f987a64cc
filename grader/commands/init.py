"""Make a folder an nbgrader course for this repository's lessons."""

import csv
from pathlib import Path

from grader.course import OWN_SOURCE, REPO_ROOT, SOLUTIONS, Course, lessons

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
"""
DB_URL_LINE = "c.CourseDirectory.db_url = {db_url!r}\n"


def init_course(
    folder: Path,
    roster: Path | None = None,
    due_dates: Path | None = None,
    db_url: str | None = None,
) -> Course:
    """Create (or refresh) the course in `folder`: config, gradebook with every lesson, submitted/.

    With `roster`, a CSV with an `id` column (and optionally first_name, last_name, email),
    the students are entered in the gradebook, and `collect` rejects anyone not on it.
    With `due_dates`, a CSV with `lesson` and `due` columns, nbgrader records late submissions.
    With `db_url` (any SQLAlchemy URL, e.g. postgresql://…), the gradebook lives there instead of
    in gradebook.db.
    """
    folder = Path(folder).resolve()
    (folder / "submitted").mkdir(parents=True, exist_ok=True)
    (folder / "nbgrader_config.py").write_text(
        CONFIG_TEMPLATE.format(
            repo_config=str(REPO_ROOT / "nbgrader_config.py"),
            root=str(folder),
            source=str(folder / OWN_SOURCE),
        )
        + (DB_URL_LINE.format(db_url=db_url) if db_url else "")
    )
    _link_lessons(folder / OWN_SOURCE)
    course = Course(folder)
    enter_lessons(course, lessons())
    if roster is not None:
        enter_roster(course, roster)
    if due_dates is not None:
        enter_due_dates(course, due_dates)
    return course


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
            raise RuntimeError(f"could not enter {lesson} in {course.root}:\n{result.get('error')}")


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


def enter_roster(course: Course, roster: Path) -> list[str]:
    """Add the students listed in the CSV `roster` to the course's gradebook."""
    with open(roster, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or "id" not in rows[0]:
        raise ValueError(f"{roster}: a roster is a CSV file with an 'id' column")
    fields = ("first_name", "last_name", "email")
    with course.api().gradebook as gb:
        for row in rows:
            gb.update_or_create_student(row["id"], **{k: row[k] for k in fields if row.get(k)})
    return [row["id"] for row in rows]


def enter_due_dates(course: Course, due_dates: Path) -> None:
    """Set each lesson's due date from the CSV `due_dates` (columns: lesson, due)."""
    with open(due_dates, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or not {"lesson", "due"} <= set(rows[0]):
        raise ValueError(f"{due_dates}: due dates are a CSV file with 'lesson' and 'due' columns")
    with course.api().gradebook as gb:
        for row in rows:
            gb.update_or_create_assignment(row["lesson"], duedate=row["due"])
