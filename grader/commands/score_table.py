"""The table printed after grading: one row per submission, safe whatever the students wrote."""

from grader.grading.results import Result
from grader.judging.reference import IN_PROCESS, verdicts_of
from grader.safe_output.text import terminal_safe

HEADER = ("lesson", "student", "score", "max", "outcome", "review")
FINAL = "final"  # the column added where the course is given: "yes", or why not


def score_table(results: list[Result], course=None) -> str:
    """A plain-text table: lesson, student, score, max, outcome and what to review (code that
    reaches for the grader's or the interpreter's internals), each cell terminal-safe. With
    `course`, a last column says whether each grade is final, and why not
    (grader/grading/finality.py); a score not known yet shows as `-`, never 0."""
    finality = {}
    if course is not None:
        from grader.grading.finality import finality_of

        finality = finality_of(course)
    header = HEADER + ((FINAL,) if course is not None else ())
    rows = [header]
    for r in results:
        judged = finality.get((r.lesson, r.student))
        cells = [r.lesson, r.student, _score_text(r, judged), f"{r.max_score:g}"]
        cells += [_outcome_text(r), r.review]
        if course is not None:
            cells.append("yes" if judged is None or judged.final else f"no: {judged}")
        rows.append(tuple(terminal_safe(cell) for cell in cells))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    table = "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
    unjudged = sorted({r.lesson for r in results if verdicts_of(r.lesson) == IN_PROCESS})
    notes = [f"{terminal_safe(lesson)}: verdicts {IN_PROCESS}" for lesson in unjudged]
    return "\n".join([table, *notes])


def _score_text(result: Result, judged=None) -> str:
    """The score; with a late penalty, the score after it and the raw score beside it; `-` where
    there is none yet, and the raw score alone where the penalty is to be computed again."""
    if judged is not None and not judged.score_known:
        return "-"
    if judged is not None and not judged.penalty_known:
        return f"{result.score:g} (before its late penalty)"
    if not result.penalty:
        return f"{result.score:g}"
    return f"{result.final:g} ({result.score:g} - {result.penalty:g} late)"


def _outcome_text(result: Result) -> str:
    return f"{result.outcome} ({result.detail})" if result.detail else result.outcome
