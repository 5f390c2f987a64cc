"""The exercises answered with general code whose visible examples vary from student to student:
the inputs the lesson shows and the visible test checks (shapes to sum back, graphs to walk,
functions to differentiate) are the student's own. The grader's hidden checks already draw
their inputs for each submission, so nothing here is graded: an example family only says what a
student sees. The examples of a family are of one structure, with sizes and coefficients from
ranges the exercise's wording allows. One module per lesson, as `grader.lesson_checks`.
"""

import importlib

from grader.variants.examples.base import Example

WITH_EXAMPLES = (2, 3, 4, 5, 6, 7, 8, 9, 11)  # the lessons that have a module here
LESSONS = tuple(importlib.import_module(f"{__name__}.lesson_{n:02d}") for n in WITH_EXAMPLES)
EXAMPLE_LIST: tuple[Example, ...] = tuple(e for lesson in LESSONS for e in lesson.EXAMPLES)
EXAMPLES: dict[tuple[str, str], Example] = {(e.lesson, e.exercise): e for e in EXAMPLE_LIST}
