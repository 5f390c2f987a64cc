"""The table printed after grading: one row per submission, safe whatever the students wrote."""

from grader.grading.results import Result
from grader.judging.reference import IN_PROCESS, verdicts_of
from grader.safe_output.text import terminal_safe

HEADER = ("lesson", "student", "score", "max", "outcome", "review")


def score_table(results: list[Result]) -> str:
    """A plain-text table: lesson, student, score, max, outcome and what to review (code that
    reaches for the grader's or the interpreter's internals), each cell terminal-safe."""
    rows = [HEADER]
    rows += [
        tuple(
            terminal_safe(cell)
            for cell in (
                r.lesson,
                r.student,
                _score_text(r),
                f"{r.max_score:g}",
                _outcome_text(r),
                r.review,
            )
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    table = "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
    unjudged = sorted({r.lesson for r in results if verdicts_of(r.lesson) == IN_PROCESS})
    notes = [f"{terminal_safe(lesson)}: verdicts {IN_PROCESS}" for lesson in unjudged]
    return "\n".join([table, *notes])


def _score_text(result: Result) -> str:
    """The score; with a late penalty, the score after it and the raw score beside it."""
    if not result.penalty:
        return f"{result.score:g}"
    return f"{result.final:g} ({result.score:g} - {result.penalty:g} late)"


def _outcome_text(result: Result) -> str:
    return f"{result.outcome} ({result.detail})" if result.detail else result.outcome
