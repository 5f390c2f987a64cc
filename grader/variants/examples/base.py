"""What every family of visible examples has."""

import functools


class Example:
    """One exercise's visible examples: the class-wide ones (as the lesson's text has them) and
    every set a student may draw."""

    lesson: str
    exercise: str  # the function the exercise asks for
    answer_cell: str  # the grade id of the cell the student writes it in
    what = "examples"  # what the lesson's cell shows: "**Your examples** (...)"
    default: object

    def every(self) -> list:
        """Every set of examples a student may draw, the class-wide one among them."""
        raise NotImplementedError

    @functools.cached_property
    def grid(self) -> tuple:
        """every(), made once per process: each look at a student's example draws from it."""
        return tuple(self.every())

    def draw(self, rng):
        """One set of examples, each equally likely."""
        return rng.choice(self.grid)

    def shown(self, examples, plain: bool = False) -> str:
        """The examples as the notebook shows them (Markdown, or `plain` text)."""
        raise NotImplementedError
