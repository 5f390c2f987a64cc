"""Run the whole instructor pipeline on the bundled example class."""

import shutil
from pathlib import Path

from grader.commands.export import export
from grader.commands.feedback import generate_feedback
from grader.commands.init import init_course
from grader.commands.report import write_report
from grader.course import EXAMPLE_CLASS, REPO_ROOT, lessons
from grader.grading.class_run import GradingSession, autograde
from grader.grading.results import Result
from grader.sandbox.outside.isolation import Limits

DEFAULT_OUT = REPO_ROOT / "build" / "demo"


def run_demo(out: Path = DEFAULT_OUT, *, progress: bool = False) -> list[Result]:
    """init → (submissions) → autograde → feedback → export → report, in a fresh course at `out`."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    course = init_course(
        out,
        roster=EXAMPLE_CLASS / "roster.csv",
        due_dates=EXAMPLE_CLASS / "due_dates.csv",
    )
    shutil.copytree(EXAMPLE_CLASS / "submitted", out / "submitted", dirs_exist_ok=True)
    graded = [lesson for lesson in lessons() if course.submitted_students(lesson)]
    with GradingSession(Limits()) as session:
        results = autograde(course, graded, progress=progress, session=session)
    for lesson in graded:
        generate_feedback(course, lesson)
    export(course, out / "grades.csv")
    write_report(course, out / "report")
    return results
