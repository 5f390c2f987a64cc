"""What the tests of each student's own visible examples know of each family, one module per
lesson (as `grader.variants.examples`), each keyed by (lesson, exercise):
- STRUCTURE: a function that asserts the family's structure of one set of examples;
- SLIPS: the usual slips its visible test names, as [(a wrong answer's source, what it says)];
- LESSON_CODE: the families whose answers and tests use the lesson's code above them."""

from own_examples import (
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
STRUCTURE = {key: check for lesson in LESSONS for key, check in lesson.STRUCTURE.items()}
SLIPS = {key: slips for lesson in LESSONS for key, slips in lesson.SLIPS.items()}
LESSON_CODE = {key for lesson in LESSONS for key in getattr(lesson, "LESSON_CODE", ())}
