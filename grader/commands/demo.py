"""Run the whole instructor pipeline on the bundled example class."""

import shutil
from pathlib import Path

from grader.commands.export import export
from grader.commands.feedback import generate_feedback
from grader.commands.init import init_course
from grader.commands.report import write_report
from grader.course import EXAMPLE_CLASS, REPO_ROOT, lessons
from grader.grading.lesson import Result, autograde

DEFAULT_OUT = REPO_ROOT / "build" / "demo"


def run_demo(out: Path = DEFAULT_OUT, *, progress: bool = False) -> list[Result]:
    """init → (submissions) → autograde → feedback → export → report, in a fresh course at `out`."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    init_course(
        out,
        roster=EXAMPLE_CLASS / "roster.csv",
        due_dates=EXAMPLE_CLASS / "due_dates.csv",
    )
    shutil.copytree(EXAMPLE_CLASS / "submitted", out / "submitted", dirs_exist_ok=True)
    results = []
    for lesson in lessons():
        if any((out / "submitted").glob(f"*/{lesson}")):
            results += autograde(out, lesson, progress=progress)
            generate_feedback(out, lesson)
    export(out, out / "grades.csv")
    write_report(out, out / "report")
    return results
