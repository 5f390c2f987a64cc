"""The exercises answered with general code whose visible examples vary from student to student:
the inputs the lesson shows and the visible test checks (shapes to sum back, graphs to walk,
functions to differentiate) are the student's own. The grader's hidden checks already draw
their inputs for each submission, so nothing here is graded: an example family only says what a
student sees. The examples of a family are of one structure, with sizes and coefficients from
ranges the exercise's wording allows. One module per lesson, as `grader.lesson_checks`.
"""

from grader.variants.examples import (
    lesson_02,
    lesson_03,
    lesson_04,
    lesson_05,
    lesson_06,
    lesson_07,
    lesson_08,
    lesson_09,
    lesson_11,
)
from grader.variants.examples.base import Example

LESSONS = (
    lesson_02,
    lesson_03,
    lesson_04,
    lesson_05,
    lesson_06,
    lesson_07,
    lesson_08,
    lesson_09,
    lesson_11,
)
EXAMPLE_LIST: tuple[Example, ...] = tuple(e for lesson in LESSONS for e in lesson.EXAMPLES)
EXAMPLES: dict[tuple[str, str], Example] = {(e.lesson, e.exercise): e for e in EXAMPLE_LIST}
