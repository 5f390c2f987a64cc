"""How grading a submission ended: named once, for the sandbox, the grading and the commands; and
why, in nbgrader's words, where nbgrader failed."""

import re
from pathlib import PurePath

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


# nbgrader's log records ("[ERROR] message", continued on indented lines), and its words that
# say only that something failed: the cause is in a record before them.
LOG_RECORD = re.compile(r"^\[(?P<level>[A-Z]+)\] (?P<text>.*)$")
ONLY_FAILED = (
    "There was an error processing assignment",
    "Please see the",
    "Notebook failed to validate; the nbgrader metadata may be corrupted.",
)


def nbgrader_failure(result: dict) -> str:
    """In one line, why an nbgrader API call failed (`result`, as its `capture_log` gives it):
    the first error it logged that names a cause (of a traceback, its last line), after the
    name of the notebook it was converting."""
    records: list[tuple[str, list[str]]] = []
    for line in (result.get("log") or "").splitlines():
        found = LOG_RECORD.match(line)
        if found:
            records.append((found["level"], [found["text"]]))
        elif records:
            records[-1][1].append(line.strip())
    notebook, cause = "", ""
    for level, lines in records:
        if lines[0].startswith("Converting notebook "):
            notebook = PurePath(lines[0].removeprefix("Converting notebook ")).name
        said = [line for line in lines if line][-1]
        if level == "ERROR" and not any(words in said for words in ONLY_FAILED):
            cause = re.sub(r"^[\w.]+\.(\w+: )", r"\1", said)  # the exception's own name
            break
    if not cause:
        cause = [line for line in (result.get("error") or "").splitlines() if line.strip()]
        cause = cause[-1] if cause else "nbgrader gave no reason"
    cause = cause.strip()
    return f"{notebook}: {cause}" if notebook else cause
