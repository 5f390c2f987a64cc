"""ruff keeps the grader, the tests and the lessons' probes linted and formatted."""

import subprocess
import sys

from grader.course import REPO_ROOT, SOLUTIONS


def _ruff(*args: str) -> subprocess.CompletedProcess:
    probes = [str(p.relative_to(REPO_ROOT)) for p in sorted(SOLUTIONS.glob("*/probes.py"))]
    command = [sys.executable, "-m", "ruff", *args, "conftest.py", "grader", "tests", "benchmarks"]
    command += probes
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)


def test_ruff_check_passes():
    """`ruff check` finds nothing in grader/, tests/, benchmarks/ and the probes."""
    result = _ruff("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    """`ruff format --check` would change nothing in grader/, tests/, benchmarks/ and the probes."""
    result = _ruff("format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
