"""The student install on another torch: an environment holding torch OTHER_TORCH (installed
first, as a student's own), the course's student package installed into it from a wheel of this
checkout, then every lesson's solution cells run there with their checks (`run_lessons.py`).

Fails if installing the package replaces that torch, if `grader.checks` cannot be imported, or if
any lesson's cell misbehaves. The environment with torch is built once per machine, under
CACHE (about 5 GB: torch 2.14.1 is a CUDA build, which runs on the CPU); the package is
reinstalled every run. `make portability` runs this; `.ci/run` runs it after `make test`.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OTHER_TORCH = os.environ.get("OTHER_TORCH", "2.14.1")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "autograd-fundamentals"


def _pip(python: Path, *args: str) -> None:
    subprocess.run([python, "-m", "pip", "install", "--quiet", *args], check=True)


def _environment() -> Path:
    """The environment's python: a venv where a student installed torch OTHER_TORCH."""
    home = CACHE / f"torch-{OTHER_TORCH}-py{sys.version_info.major}.{sys.version_info.minor}"
    python = home / "bin" / "python"
    if not (home / ".ready").exists():
        shutil.rmtree(home, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", home], check=True)
        _pip(python, f"torch=={OTHER_TORCH}")
        (home / ".ready").touch()
    return python


def build_wheel(folder: Path) -> Path:
    """A wheel of this checkout, built from a copy (the build leaves the checkout as it is)."""
    source = folder / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source)
    shutil.copytree(
        REPO / "grader", source / "grader", ignore=shutil.ignore_patterns("__pycache__")
    )
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "-w", folder, source], check=True, capture_output=True)
    (wheel,) = folder.glob("*.whl")
    return wheel


def _torch_version(python: Path) -> str:
    show = [python, "-c", "import torch; print(torch.__version__)"]
    return subprocess.run(show, check=True, capture_output=True, text=True).stdout.strip()


def main() -> int:
    python = _environment()
    before = _torch_version(python)
    with tempfile.TemporaryDirectory() as folder:
        wheel = build_wheel(Path(folder))
        _pip(python, str(wheel))  # as a student would: the package and what it needs
        _pip(python, "--no-deps", "--force-reinstall", str(wheel))  # this checkout's code
    after = _torch_version(python)
    print(f"torch before installing the course: {before}; after: {after}")
    if after != before:
        print("FAIL: installing the student package replaced the student's torch")
        return 1
    checks = [python, "-c", "import grader.checks, grader.lesson_checks.lesson_07"]
    subprocess.run(checks, check=True, cwd=tempfile.gettempdir())  # the installed package
    lessons = sorted(str(p) for p in (REPO / "solutions").glob("*/*.ipynb"))
    runner = Path(__file__).with_name("run_lessons.py")
    return subprocess.run([python, runner, *lessons], cwd=tempfile.gettempdir()).returncode


if __name__ == "__main__":
    sys.exit(main())
