"""Where the course lives: the repository's lessons, and `Course`, one course folder as
nbgrader sees it.

The warm processes import this module: nbgrader, which only `Course` needs, is imported when a
course is first used (it would add 40 MB to every process forked from them).
"""

import os
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import nbformat

from grader.cells import is_lesson_code, is_test, starts_own_work

REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO_ROOT / "solutions"
NOTEBOOKS = REPO_ROOT / "notebooks"
OWN_SOURCE = "source"  # a course's assignments, beside the kit's lessons linked in
EXAMPLE_CLASS = REPO_ROOT / "example_class"

# The course's repository, written here only: the lessons' Colab links (README and each notebook's
# first cell) and the setup cell that installs the checks on Colab are made from it.
REPOSITORY_URL = "https://github.com/autograd-fundamentals/autograd-fundamentals"
COLAB_BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
SETUP_CELL_ID = "colab-setup"


def lessons() -> list[str]:
    """The lesson ids, in teaching order: each is `solutions/<id>/<id>.ipynb`."""
    return sorted(p.parent.name for p in SOLUTIONS.glob("*/*.ipynb") if p.stem == p.parent.name)


def solution_notebook(lesson: str) -> Path:
    """The instructor's notebook for `lesson`."""
    return SOLUTIONS / lesson / f"{lesson}.ipynb"


def student_notebook(lesson: str) -> Path:
    """The released student notebook for `lesson`."""
    return NOTEBOOKS / lesson / f"{lesson}.ipynb"


def colab_link(lesson: str) -> str:
    """The address that opens `lesson`'s student notebook on Colab, from the repository's main
    branch."""
    repository = REPOSITORY_URL.removeprefix("https://github.com/")
    notebook = student_notebook(lesson).relative_to(REPO_ROOT).as_posix()
    return f"https://colab.research.google.com/github/{repository}/blob/main/{notebook}"


def colab_badge(lesson: str) -> str:
    """The "Open in Colab" badge, linked to `lesson` (markdown)."""
    return f"[![Open In Colab]({COLAB_BADGE_IMAGE})]({colab_link(lesson)})"


def setup_cell_source() -> str:
    """Each lesson's first code cell: on Colab, it installs the course's checks from the
    repository (`--no-deps` keeps Colab's torch, NumPy and matplotlib); wherever the course is
    installed already it imports them and prints nothing."""
    return (
        "# Setup. On Colab this installs the course's checks, keeping Colab's own torch;\n"
        "# where the course is installed (its repository, Binder, pip) it does nothing.\n"
        "try:\n"
        "    import grader.checks\n"
        "except ImportError:\n"
        f'    %pip install -q --no-deps "git+{REPOSITORY_URL}"'
    )


# A lesson with tasks of each student's own has this cell after its imports (grader/variants).
KEY_CELL = (
    "# Your course key: if your course gave you one, paste it between the quotes and run this\n"
    "# cell (on a course hub it is set for you). It picks your own task in some exercises.\n"
    "from grader.variants import my_task, use_course_key\n"
    "\n"
    'use_course_key("")'
)


def released_lesson_code() -> tuple[list[str], dict[str, list[str]]]:
    """The released lessons' code (no solutions in it): the lesson cells among and after the
    exercises, which every submission's fork runs, and each lesson's code cells before its
    first exercise, which its lesson server runs once."""
    sources, prefixes = [], {}
    for lesson in lessons():
        code = [c for c in nbformat.read(student_notebook(lesson), as_version=4).cells]
        code = [c for c in code if c.cell_type == "code"]
        first = next((i for i, c in enumerate(code) if starts_own_work(c)), len(code))
        prefixes[lesson] = [c.source for c in code[:first]]
        sources += [c.source for c in code[first:] if is_lesson_code(c)]
    return sources, prefixes


def released_test_code() -> list[str]:
    """Every lesson's test cells as the student notebooks have them: no hidden test, which the
    default engine never runs in a submission's process (the probes and the reference judge)."""
    return [
        cell.source
        for lesson in lessons()
        for cell in nbformat.read(student_notebook(lesson), as_version=4).cells
        if is_test(cell)
    ]


def probes_file(lesson: str) -> Path:
    """The lesson's probes, kept beside its solution (and out of the release)."""
    return SOLUTIONS / lesson / "probes.py"


def lesson_probes() -> list[str]:
    """Every lesson's probes: the grader's own code, which runs in a submission's process after
    its cells, on nothing but what the submission defined."""
    found = [probes_file(lesson) for lesson in lessons()]
    return [path.read_text() for path in found if path.is_file()]


def _put_environment_on_path() -> None:
    # nbgrader runs `alembic` as a subprocess; it lives beside this interpreter.
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def is_course(folder: Path) -> bool:
    """Whether `folder` is an nbgrader course (it has an nbgrader_config.py)."""
    return (Path(folder) / "nbgrader_config.py").is_file()


class CourseError(RuntimeError):
    """A course folder is missing or not usable."""


class NoSuchLesson(CourseError):
    """A lesson id that is not one of the repository's lessons."""

    def __init__(self, unknown: list[str], known: list[str] | None = None):
        known_text = ", ".join(lessons() if known is None else known)
        super().__init__(f"no such lesson: {', '.join(unknown)} (known: {known_text})")


def known_lessons(names: list[str]) -> list[str]:
    """`names`, once each is known to be a lesson; else NoSuchLesson names the others."""
    unknown = [name for name in names if name not in lessons()]
    if unknown:
        raise NoSuchLesson(unknown)
    return names


@dataclass(frozen=True)
class Course:
    """One course folder: its submissions, its gradebook and its nbgrader configuration.

    Built once from the folder the instructor names and passed down to every step.
    """

    root: Path

    @classmethod
    def at(cls, given: Path | None = None) -> "Course":
        """The course at `given`, else the current folder if it is a course. The repository
        holds the lessons and is no class's course (only the stock nbgrader commands and `make`
        use it as one): a command that names no course outside a course folder refuses."""
        folder = Path.cwd() if given is None else Path(given)
        if folder.resolve() == REPO_ROOT:
            raise CourseError(
                "the repository holds the lessons, not a class's work: give --course-dir DIR,"
                " a course folder made by `grader init DIR`"
            )
        if not is_course(folder):
            if given is None:
                raise CourseError(
                    f"{folder} is not a course: give --course-dir DIR, or run this in a course"
                    " folder (made by `grader init DIR`)"
                )
            raise CourseError(f"{given} is not a course: make it one with `grader init {given}`")
        return cls(folder.resolve())

    @property
    def source(self) -> Path:
        """Where nbgrader finds the course's assignments: its `source/` folder (the kit's lessons
        linked in by `grader init`, beside the instructor's own), or, for a course made before
        it had one, the repository's solutions."""
        own = self.root / OWN_SOURCE
        return own if own.is_dir() else SOLUTIONS

    @property
    def lessons(self) -> list[str]:
        """What this course grades: the repository's lessons, then the instructor's own
        assignments, each a folder of one or more notebooks in `source/`."""
        kit = lessons()
        if self.source == SOLUTIONS:
            return kit
        own = sorted(
            folder.name
            for folder in self.source.iterdir()
            if folder.is_dir() and any(folder.glob("*.ipynb"))
        )
        return kit + [name for name in own if name not in kit]

    def notebooks(self, assignment: str) -> list[str]:
        """The names (without .ipynb) of an assignment's notebooks, sorted as nbgrader grades
        them: a lesson's one notebook, or every notebook in the assignment's source folder."""
        if assignment in lessons():
            return [assignment]
        return sorted(path.stem for path in (self.source / assignment).glob("*.ipynb"))

    def known(self, names: list[str]) -> list[str]:
        """`names`, once each is one of the course's lessons or assignments."""
        unknown = [name for name in names if name not in self.lessons]
        if unknown:
            raise NoSuchLesson(unknown, self.lessons)
        return names

    def config(self, **overrides: dict):
        """The course's nbgrader configuration (a traitlets `Config`), with `overrides`
        ({section: {key: value}})."""
        from traitlets.config import PyFileConfigLoader

        home = self.root if is_course(self.root) else REPO_ROOT
        config = PyFileConfigLoader("nbgrader_config.py", path=str(home)).load_config()
        config.CourseDirectory.root = str(self.root.resolve())
        config.CourseDirectory.source_directory = str(self.source)
        for section, values in overrides.items():
            for key, value in values.items():
                config[section][key] = value
        return config

    def api(self, **overrides: dict):
        """nbgrader's Python API (`NbGraderAPI`) over this course, configured with
        `overrides`."""
        from nbgrader.apps import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory

        _put_environment_on_path()
        config = self.config(**overrides)
        return NbGraderAPI(CourseDirectory(config=config), config=config)

    @cached_property
    def db_url(self) -> str:
        """The gradebook's database URL."""
        from nbgrader.coursedir import CourseDirectory

        return CourseDirectory(config=self.config()).db_url

    def submission(self, student: str, lesson: str) -> Path:
        """The folder of `student`'s submission of `lesson`, as nbgrader collects it."""
        return self.root / "submitted" / student / lesson

    def submitted_students(self, lesson: str) -> list[str]:
        """The students with a submission folder for `lesson`, sorted."""
        root = self.root / "submitted"
        return sorted(p.parent.name for p in root.glob(f"*/{lesson}") if p.is_dir())
