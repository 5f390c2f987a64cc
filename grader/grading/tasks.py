"""Grading tasks: one per submission, with everything grading it depends on, and what comes
after it in its call (the lesson graded next, how many of its own lesson are left)."""

from collections import Counter
from dataclasses import dataclass, replace

from grader.compat import StrEnum
from grader.course import Course
from grader.sandbox.outside.isolation import Limits


class GradingEngine(StrEnum):
    """What runs a submission (`--engine`): the sandboxed fast path, or stock nbgrader."""

    FAST = "fast"
    NBGRADER = "nbgrader"


@dataclass(frozen=True)
class Ahead:
    """What comes after a submission in its call: the lesson graded after its lesson's
    submissions, and how many of its lesson's submissions, this one included, each grading
    process can expect still to grade (what the reference's next batch of seeds is sized to)."""

    next_lesson: str | None = None
    share: int | None = None  # None: not known


@dataclass(frozen=True)
class GradingTask:
    """One submission to grade, and everything grading it depends on."""

    course: Course
    lesson: str
    student: str
    engine: GradingEngine
    limits: Limits
    ahead: Ahead = Ahead()


def with_what_comes_after(tasks: list[GradingTask], processes: int) -> list[GradingTask]:
    """The tasks, in their order, each told what comes after it when `processes` grading
    processes take them in turn."""
    order = list(dict.fromkeys(task.lesson for task in tasks))
    after = dict(zip(order, order[1:], strict=False))
    left = Counter(task.lesson for task in tasks)
    told = []
    for task in tasks:
        share = -(-left[task.lesson] // processes)
        left[task.lesson] -= 1
        told.append(replace(task, ahead=Ahead(after.get(task.lesson), share)))
    return told
