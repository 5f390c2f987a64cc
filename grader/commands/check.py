"""Check lessons before releasing them, with the course's own tests for each: strict nbval of
the solution (its stored outputs are what it prints now, and fresh: `make outputs`), the solution
passes every test and the untouched student notebook none, every lesson cell runs in the student
notebook, the probes' rules follow the wording, every typical wrong answer fails its test with
its message and every alternative answer passes. Each failure names the lesson, the cell (or the
wrong or alternative answer) and what went wrong."""

import subprocess
import sys

from grader.course import REPO_ROOT, solution_notebook

TESTS = [
    "tests/lessons/test_validation.py",
    "tests/lessons/test_curriculum.py",
    "tests/lessons/test_wrong_answers.py",
    "tests/lessons/test_alternative_answers.py",
    "tests/judging/test_how.py",
    "tests/judging/test_probes.py",
    "tests/commands/test_outputs.py",
]


def check(lessons: list[str]) -> int:
    """Run the checks of `lessons`; pytest's exit status (0: every check passed)."""
    notebooks = [str(solution_notebook(lesson).relative_to(REPO_ROOT)) for lesson in lessons]
    chosen = " or ".join([*lessons, "every_lessons_outputs"])
    command = [sys.executable, "-m", "pytest", "-q", *notebooks, *TESTS, "-k", chosen]
    return subprocess.run(command, cwd=REPO_ROOT).returncode
