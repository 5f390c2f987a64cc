"""How grading a submission ended: named once, for the sandbox, the grading and the commands."""

from grader.compat import StrEnum


class Outcome(StrEnum):
    """How grading a submission ended. Only GRADED ran every cell; the others say why not."""

    GRADED = "graded"
    MISSING = "missing notebook"
    MALFORMED = "malformed"
    TIMED_OUT = "timed out"
    MEMORY_LIMIT = "memory limit"
    OUTPUT_LIMIT = "output limit"
    KERNEL_DIED = "kernel died"
    NOT_GRADED = "not graded"

    @property
    def ran(self) -> bool:
        """Whether the submission's notebook was run (else there is no autograded notebook)."""
        return self not in (Outcome.MISSING, Outcome.MALFORMED, Outcome.NOT_GRADED)
