"""ruff keeps the grader and the tests linted and formatted."""

import subprocess
import sys

from grader.course import REPO_ROOT


def _ruff(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "ruff", *args, "grader", "tests", "benchmarks"]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)


def test_ruff_check_passes():
    """`ruff check` finds nothing in grader/, tests/ and benchmarks/."""
    result = _ruff("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    """`ruff format --check` would change nothing in grader/, tests/ and benchmarks/."""
    result = _ruff("format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
