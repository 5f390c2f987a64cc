"""What the tests of each student's own visible examples know of each family, one module per
lesson (as `grader.variants.examples`), each keyed by (lesson, exercise):
- STRUCTURE: a function that asserts the family's structure of one set of examples;
- SLIPS: the usual slips its visible test names, as [(a wrong answer's source, what it says)];
- LESSON_CODE: the families whose answers and tests use the lesson's code above them."""

import importlib

from grader.variants.examples import WITH_EXAMPLES

LESSONS = tuple(importlib.import_module(f"own_examples.lesson_{n:02d}") for n in WITH_EXAMPLES)
STRUCTURE = {key: check for lesson in LESSONS for key, check in lesson.STRUCTURE.items()}
SLIPS = {key: slips for lesson in LESSONS for key, slips in lesson.SLIPS.items()}
LESSON_CODE = {key for lesson in LESSONS for key in getattr(lesson, "LESSON_CODE", ())}
