"""Run the instructor pipeline on the bundled example class."""

import shutil
from pathlib import Path

from grader.course import EXAMPLE_CLASS, REPO_ROOT, lessons
from grader.grading import Result, autograde, prepare_course

DEFAULT_OUT = REPO_ROOT / "build" / "demo"


def run_demo(out: Path = DEFAULT_OUT) -> list[Result]:
    """Release the lessons into a fresh course under `out`, grade the example class there."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(EXAMPLE_CLASS, out / "submitted")
    graded = [lesson for lesson in lessons() if any((out / "submitted").glob(f"*/{lesson}"))]
    prepare_course(out, graded)
    return [result for lesson in graded for result in autograde(out, lesson)]


def score_table(results: list[Result]) -> str:
    """A plain-text table: lesson, student, score, max, outcome."""
    rows = [("lesson", "student", "score", "max", "outcome")]
    rows += [(r.lesson, r.student, f"{r.score:g}", f"{r.max_score:g}", r.outcome) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
