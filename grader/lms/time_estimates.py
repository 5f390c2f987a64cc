"""Whether a collected submission's time is an estimate, not the platform's record of it.

`collect` writes each submission's time into nbgrader's timestamp.txt, and keeps where it came
from in `collect_backup/sources.json` (grader/commands/collect.py: `time`, `time_from`,
`time_estimated`). Some times are only bounds: a file Canvas marked late gets the download's time
(its download holds no submission time), a file from a plain folder the time it was copied. The
lateness nbgrader computes from them, and any penalty, is then an estimate. A timestamp.txt that
no longer holds the time collect wrote (the instructor wrote the real one) is no estimate.
"""

from datetime import datetime
from pathlib import Path

from grader.compat import UTC
from grader.lms.archive import COPY_TIME
from grader.lms.sources import Sources

DOWNLOAD = "the download's time"
COPY = "the time the file was copied"


def estimated_from(course_root: Path, student: str, lesson: str) -> str | None:
    """Where the time in `student`'s `lesson` timestamp.txt comes from, if it is an estimate
    (`the download's time`, `the time the file was copied`); None where it is the platform's
    record, or was written since collect wrote it."""
    record = Sources(course_root).get(student, lesson)
    if not record.get("time_estimated") or not record.get("time"):
        return None
    written = _timestamp(Path(course_root) / "submitted" / student / lesson / "timestamp.txt")
    try:
        estimate = datetime.fromisoformat(record["time"]).astimezone(UTC)
    except (TypeError, ValueError):
        return None
    if written != estimate:
        return None
    # a time that is no record is a copy's, or else the download's (a file the platform marked
    # late, whose download gives no submission time)
    return COPY if COPY_TIME in str(record.get("time_from", "")) else DOWNLOAD


def _timestamp(path: Path) -> datetime | None:
    """The time in a timestamp.txt, read as nbgrader reads it, or None."""
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(path.read_text().strip()).replace(tzinfo=UTC)
    except (OSError, UnicodeDecodeError, ValueError, OverflowError):
        return None
