"""Each student's own tasks: the student's side (it runs in the notebook, and in a submission's
process at grading time, so it holds no secret).

A course that gives each student their own tasks gives each a *course key*, `ID-CODE`: the
student's id, and a code only the course's secret makes (`grader.course_keys`). On a hub it is in
the environment (`AUTOGRAD_COURSE_KEY`, set by the hub for the user it names); on Colab or a
laptop the student pastes it into the lesson's key cell (`use_course_key`). An exercise's task is
drawn from the key, the lesson and the exercise, so the same student always sees the same task
and nobody can draw another's without that student's key. With no key, every exercise shows its
class-wide task, as the lesson's text has it.
"""

import hashlib
import os
import random
import re

from grader.variants.examples import EXAMPLE_LIST, EXAMPLES, Example
from grader.variants.families import FAMILIES, FAMILY_LIST, Family, Params

KEY_VARIABLE = "AUTOGRAD_COURSE_KEY"
# Set by the grader when it runs a submission: the submitting student's key, which wins over the
# one the notebook sets, so that a notebook is graded against its submitter's own tasks.
GRADING_VARIABLE = "AUTOGRAD_GRADING_KEY"
# An id of up to 100 printable characters, a dash, ten letters and digits of base 32
KEY_SHAPE = re.compile(r"^(?P<student>[^\s\x00-\x1f\x7f]{1,100})-(?P<code>[A-Z2-7]{10})$")
KEY_IN_TEXT = re.compile(r"""[^\s"'\\()\[\]\x00-\x1f\x7f]{1,100}-[A-Z2-7]{10}(?![A-Za-z0-9])""")
_chosen: list[str] = []  # the key set in the notebook, which wins over the environment's
# What a notebook shows of each student's own: tasks to derive by hand and examples to run
TASK_LIST: tuple[Family | Example, ...] = (*FAMILY_LIST, *EXAMPLE_LIST)
TASKS: dict[tuple[str, str], Family | Example] = {**FAMILIES, **EXAMPLES}


def student_of(key: str) -> str:
    """The student id a course key is for; ValueError if it is not of the shape ID-CODE."""
    found = KEY_SHAPE.match(key.strip())
    if found is None:
        raise ValueError(
            f"{key!r} is not a course key: a key is your id, a dash and ten capital letters or "
            "digits, as your instructor gave it. Copy it again, between the quotes."
        )
    return found["student"]


def use_course_key(key: str) -> None:
    """The lesson's key cell: set (or, with "", leave unset) the key this notebook's tasks are
    drawn from, and say in one line whose tasks the notebook shows."""
    key = key.strip()
    _chosen.clear()
    if key:
        student_of(key)  # a mistyped key is said at once, not as someone else's tasks
        _chosen.append(key)
    print(_whose_tasks())


def course_key() -> str | None:
    """The key this notebook's tasks are drawn from: the submitter's when grading, else the one
    set in the notebook, else the hub's, else none (a key of the wrong shape counts as none)."""
    grading = _from_environment(GRADING_VARIABLE)
    if grading or _chosen:
        return grading or _chosen[0]
    return _from_environment(KEY_VARIABLE)


def _from_environment(name: str) -> str | None:
    key = os.environ.get(name, "").strip()
    return key if KEY_SHAPE.match(key) else None


def _whose_tasks() -> str:
    key = course_key()
    if key is None:
        return (
            "No course key: you see the class-wide tasks. If your course gave you a key, paste it "
            "between the quotes above and run this cell again."
        )
    where = "set above" if _chosen else "set by your hub"
    if _from_environment(GRADING_VARIABLE):
        where = "who submitted this notebook"
    return f"Course key of {student_of(key)} ({where}): the tasks in this lesson are yours."


def params(lesson: str, exercise: str, key: str | None):
    """The exercise's task (or examples) for `key`: drawn from it, or the class-wide one when
    there is none."""
    family = TASKS[lesson, exercise]
    if key is None:
        return family.default
    # drawn for the exercise, so that the functions it asks for share one task
    digest = hashlib.sha256(f"{key}/{lesson}/{family.exercise}".encode()).hexdigest()
    return family.draw(random.Random(digest))


class Task:
    """An exercise's task as this notebook shows it: shown as Markdown in a cell, and read by the
    test cells. It reads the key when used, so a key set after the lesson's first cells counts."""

    def __init__(self, lesson: str, exercise: str, fixed: Params | None = None):
        self.lesson, self.exercise, self.fixed = lesson, exercise, fixed  # fixed: a given task

    @property
    def family(self) -> Family | Example:
        return TASKS[self.lesson, self.exercise]

    @property
    def params(self):
        return self.fixed or params(self.lesson, self.exercise, course_key())

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("lesson", "exercise", "fixed"):
            raise AttributeError(name)
        return getattr(self.params, name)

    def _repr_markdown_(self) -> str:
        key = course_key()
        what = self.family.what
        whose = f"the class-wide {what}" if key is None else f"the {what} of {student_of(key)}"
        return f"**Your {what}** ({whose}): {self.family.shown(self.params)}"

    def derivative(self, *x):
        """Autograd's derivative of the task's function at `x` (a number, or a tensor for a
        function of a tensor; a pair of partial derivatives for a function of two numbers), in
        float64, for visible tests."""
        import torch

        leaves = [torch.as_tensor(v, dtype=torch.float64).clone().requires_grad_(True) for v in x]
        grads = torch.autograd.grad(self.family.function(self.params, *leaves), leaves)
        found = [grad.item() if grad.dim() == 0 else grad for grad in grads]
        return found[0] if len(found) == 1 else tuple(found)

    def __repr__(self) -> str:
        return f"Your {self.family.what}: {self.family.shown(self.params, plain=True)}"


def my_task(lesson: str, exercise: str) -> Task:
    """The exercise's task (or examples), drawn from this notebook's course key."""
    if (lesson, exercise) not in TASKS:
        raise ValueError(f"lesson {lesson} has no exercise {exercise!r} with tasks of its own")
    return Task(lesson, exercise)
