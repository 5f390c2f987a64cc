"""What every family of visible examples has."""


class Example:
    """One exercise's visible examples: the class-wide ones (as the lesson's text has them) and
    every set a student may draw."""

    lesson: str
    exercise: str  # the function the exercise asks for
    answer_cell: str  # the grade id of the cell the student writes it in
    what = "examples"  # what the lesson's cell shows: "**Your examples** (...)"
    default: object

    def every(self) -> list:
        raise NotImplementedError

    def draw(self, rng):
        """One set of examples, each equally likely."""
        return rng.choice(self.every())

    def shown(self, examples, plain: bool = False) -> str:
        """The examples as the notebook shows them (Markdown, or `plain` text)."""
        raise NotImplementedError
