"""Where the course lives: the repository's lessons and nbgrader's view of a course folder."""

import os
import sys
from pathlib import Path

from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config, PyFileConfigLoader

REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO_ROOT / "solutions"
NOTEBOOKS = REPO_ROOT / "notebooks"
EXAMPLE_CLASS = REPO_ROOT / "example_class"


def lessons() -> list[str]:
    """The lesson ids, in teaching order: each is `solutions/<id>/<id>.ipynb`."""
    return sorted(p.parent.name for p in SOLUTIONS.glob("*/*.ipynb") if p.stem == p.parent.name)


def solution_notebook(lesson: str) -> Path:
    """The instructor's notebook for `lesson`."""
    return SOLUTIONS / lesson / f"{lesson}.ipynb"


def student_notebook(lesson: str) -> Path:
    """The released student notebook for `lesson`."""
    return NOTEBOOKS / lesson / f"{lesson}.ipynb"


def _put_environment_on_path() -> None:
    # nbgrader runs `alembic` as a subprocess; it lives beside this interpreter.
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def is_course(folder: Path) -> bool:
    """Whether `folder` is an nbgrader course (it has an nbgrader_config.py)."""
    return (Path(folder) / "nbgrader_config.py").is_file()


def resolve_course_dir(given: Path | None) -> Path:
    """The course folder: `given`, else the current folder if it is a course, else the repo."""
    if given is not None:
        if not is_course(given):
            raise CourseError(f"{given} is not a course: make it one with `grader init {given}`")
        return Path(given).resolve()
    return Path.cwd().resolve() if is_course(Path.cwd()) else REPO_ROOT


class CourseError(RuntimeError):
    """A course folder is missing or not usable."""


def nbgrader_config(course_dir: Path = REPO_ROOT, **overrides: dict) -> Config:
    """The course's nbgrader configuration, rooted at `course_dir`, with `overrides`."""
    home = Path(course_dir) if is_course(course_dir) else REPO_ROOT
    config = PyFileConfigLoader("nbgrader_config.py", path=str(home)).load_config()
    config.CourseDirectory.root = str(Path(course_dir).resolve())
    config.CourseDirectory.source_directory = str(SOLUTIONS)
    for section, values in overrides.items():
        for key, value in values.items():
            config[section][key] = value
    return config


def nbgrader_api(config: Config) -> NbGraderAPI:
    """nbgrader's Python API over the course that `config` describes."""
    _put_environment_on_path()
    return NbGraderAPI(CourseDirectory(config=config), config=config)
