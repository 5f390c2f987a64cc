"""Each student's own tasks: the course's side, which holds the secret (never released, never in
a submission's process).

`grader init` makes the course's secret (`course_secret`, readable by its owner only). A student's
course key is their id and a code made from the secret and the id (an HMAC), so nobody without the
secret can make another student's key, and so draw another's tasks (`grader.variants`). The
instructor turns the tasks on per course or per lesson (`c.CourseVariants.lessons`, written by
`grader init --variants`); off, every student gets the class-wide tasks, as the lesson shows them.
At grading time a submission is graded against the tasks of the student who submitted it,
whatever key its notebook was worked under.
"""

import base64
import contextlib
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from traitlets import List, Unicode
from traitlets.config import Configurable

from grader.judging import hand_solutions
from grader.variants import (
    GRADING_VARIABLE,
    KEY_IN_TEXT,
    KEY_VARIABLE,
    TASK_LIST,
    TASKS,
    params,
    student_of,
)
from grader.variants.examples import Example
from grader.variants.families import FAMILIES, Family, Params

SECRET_NAME = "course_secret"
KEY_CELL_READ = 10_000  # characters of a cell read for its key: a key cell is a line
ALL = "all"


class CourseVariants(Configurable):
    """Which lessons give each student their own tasks (nbgrader_config.py)."""

    lessons = List(
        Unicode(),
        help=f"The lessons whose tasks are each student's own ({ALL!r}: every lesson that has "
        "such tasks); none: the class-wide tasks for everyone.",
    ).tag(config=True)


class SecretMissing(RuntimeError):
    """The course has no secret, so no student's key can be made."""


def make_secret(root: Path) -> Path:
    """The course's secret, made once (a course that has one keeps it: keys given out stay
    valid)."""
    path = Path(root) / SECRET_NAME
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(descriptor, "w") as secret:
            secret.write(secrets.token_hex(32) + "\n")
    return path


def read_secret(root: Path) -> bytes:
    """The course's secret; SecretMissing, naming the file, if there is none."""
    path = Path(root) / SECRET_NAME
    try:
        return path.read_text().strip().encode()
    except FileNotFoundError:
        raise SecretMissing(
            f"{path} is missing: the course has no secret to make its students' keys from; "
            "`grader init` on the course folder makes one"
        ) from None


def key_for(secret: bytes, student: str) -> str:
    """The course key of `student`: their id, a dash, and ten letters and digits of an HMAC."""
    mac = hmac.new(secret, student.encode(), hashlib.sha256).digest()
    return f"{student}-{base64.b32encode(mac).decode()[:10]}"


def hub_environment(course_dir) -> dict:
    """For a JupyterHub's config: `c.Spawner.environment.update(hub_environment(COURSE))` gives
    each user's server the course key of the user the hub names."""
    secret = read_secret(Path(course_dir))
    return {KEY_VARIABLE: lambda spawner: key_for(secret, spawner.user.name)}


def varied_lessons(config) -> set[str]:
    """The lessons with tasks of each student's own in this course."""
    chosen = set(CourseVariants(config=config).lessons)
    having = {family.lesson for family in TASK_LIST}
    return having if ALL in chosen else chosen & having


@dataclass(frozen=True)
class Variant:
    """A submission's tasks: those of the student who submitted it."""

    student: str
    key: str
    lesson: str
    secret: bytes = field(default=b"", repr=False)  # the course's, to tell its keys from others

    def families(self) -> list[Family | Example]:
        """The lesson's exercises whose task (or visible examples) is the student's own."""
        return [f for f in TASK_LIST if f.lesson == self.lesson]

    def family(self, exercise: str) -> Family | Example:
        return TASKS[self.lesson, exercise]

    def task(self, exercise: str) -> Params:
        return params(self.lesson, exercise, self.key)

    def solution(self, exercise: str) -> str | None:
        """The solution's formula for the student's task of `exercise` (None: not varied)."""
        family = FAMILIES.get((self.lesson, exercise))
        return None if family is None else hand_solutions.solution(family, self.task(exercise))

    def others(self, exercise: str) -> list[tuple[str, str]]:
        """The exercise's other tasks, each as plain text and with the solution's formula."""
        family = FAMILIES[self.lesson, exercise]
        mine = self.task(exercise)
        return [
            (family.shown(task, plain=True), hand_solutions.solution(family, task))
            for task in family.every()
            if task != mine
        ]

    def shown(self, exercise: str) -> str:
        """The student's task (or examples), as plain text."""
        return TASKS[self.lesson, exercise].shown(self.task(exercise), plain=True)


def variant_of(config, root: Path, lesson: str, student: str) -> Variant | None:
    """The submission's tasks, where the course gives `lesson` tasks of each student's own."""
    if lesson not in varied_lessons(config):
        return None
    secret = read_secret(root)
    return Variant(student, key_for(secret, student), lesson, secret)


@contextlib.contextmanager
def submitters_key(config, root: Path, lesson: str, student: str):
    """Kernels started in the block (stock nbgrader's) draw the tasks of the submitting student,
    whatever key the notebook sets, where the course gives the lesson tasks of each student's
    own."""
    variant = variant_of(config, root, lesson, student)
    before = os.environ.pop(GRADING_VARIABLE, None)
    if variant is not None:
        os.environ[GRADING_VARIABLE] = variant.key
    try:
        yield
    finally:
        os.environ.pop(GRADING_VARIABLE, None)
        if before is not None:
            os.environ[GRADING_VARIABLE] = before


def notebook_key(nb) -> str | None:
    """The key a notebook was worked under, as its key cell sets it (the last key in a cell that
    sets one), if it sets one. Read from the cells' text, as written: a key typed in a cell
    that calls `use_course_key`, however the call is spelled."""
    found = None
    for cell in nb.cells:
        source = cell.get("source", "")[:KEY_CELL_READ]
        if cell.get("cell_type") == "code" and "use_course_key" in source:
            found = next(reversed(KEY_IN_TEXT.findall(source)), found)
    return found


def worked_under(nb, variant: Variant) -> str | None:
    """What to tell the student and the instructor when the notebook was worked under a key
    that is not the submitting student's (None when it was not). Only a key the course made is
    quoted, by its student's id: any other text in the notebook is the student's own."""
    key = notebook_key(nb)
    if key is None or key == variant.key:
        return None
    other = student_of(key)
    if other == variant.student:
        whose = "a key that is not the one the course made for this student (mistyped?)"
    elif variant.secret and key == key_for(variant.secret, other):
        whose = f"the course key of {other}"
    else:
        whose = "a key the course did not make"
    return (
        f"this notebook was worked under {whose}, but {variant.student} submitted it: it is "
        f"graded against {variant.student}'s own tasks"
    )
