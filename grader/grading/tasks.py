"""Grading tasks: one per submission, with everything grading it depends on, and the order of a
call's lessons (each task names the lesson graded after its own in the same call)."""

from dataclasses import dataclass, replace

from grader.compat import StrEnum
from grader.course import Course
from grader.sandbox.outside.isolation import Limits


class GradingEngine(StrEnum):
    """What runs a submission (`--engine`): the sandboxed fast path, or stock nbgrader."""

    FAST = "fast"
    NBGRADER = "nbgrader"


@dataclass(frozen=True)
class GradingTask:
    """One submission to grade, and everything grading it depends on."""

    course: Course
    lesson: str
    student: str
    engine: GradingEngine
    limits: Limits
    next_lesson: str | None = None  # graded after this one, in the same call


def with_next_lessons(tasks: list[GradingTask]) -> list[GradingTask]:
    """The tasks, each naming the lesson whose tasks come after its lesson's."""
    order = list(dict.fromkeys(task.lesson for task in tasks))
    after = dict(zip(order, order[1:], strict=False))
    return [replace(task, next_lesson=after.get(task.lesson)) for task in tasks]
