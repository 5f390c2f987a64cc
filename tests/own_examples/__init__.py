"""What the tests of each student's own visible examples know of each family, one module per
lesson (as `grader.variants.examples`), each keyed by (lesson, exercise):
- STRUCTURE: a function that asserts the family's structure of one set of examples;
- SLIPS: the usual slips its visible test names, as [(a wrong answer's source, what it says)]."""

from own_examples import lesson_03

STRUCTURE = {**lesson_03.STRUCTURE}
SLIPS = {**lesson_03.SLIPS}
