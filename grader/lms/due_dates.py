"""Lessons' due dates (`grader init --due-dates`), and the course's time zone.

A due-dates file is a CSV with `lesson` and `due` columns. A due date is a date and a 24-hour
time with its time zone, so that it names one moment wherever the grader runs:

- ISO 8601 with an offset or `Z`: `2026-10-05T23:59:00-04:00`, `2026-10-05 23:59+02:00`,
  `2026-10-05T23:59-04` (hours alone), `2026-10-05T23:59:00Z`; an offset is at most 14 hours,
  as every zone's is;
- a trailing ` UTC` or ` GMT` (`2026-10-05 23:59:00 UTC`, as nbgrader writes them) or an IANA
  zone name (`2026-10-05 23:59:00 America/Toronto`);
- no zone at all only where the course has a time zone (`grader init --time-zone`), which it
  is then read in.

Whatever could be read two ways is refused, with what to write instead: a 12-hour time, a date
written with slashes or dots or day first (is 05/10 May or October?), a date with no time (it
would mean midnight, the start of the day), a zone abbreviation (`EDT`, `CET`, `IST`: several
zones share each), `Etc/GMT+4` and the like (POSIX's sign: it is 4 hours behind UTC, -04:00), a
local time that the clocks skip or pass twice. A row split into more cells than the header has
(`Oct 5, 2026 11:59 PM`, its comma unquoted) is refused as such.

The course's time zone is kept in its nbgrader_config.py as `c.NbGraderAPI.timezone` (an IANA
name), the setting nbgrader's formgrader shows times in.
"""

import difflib
import re
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from grader.compat import UTC
from grader.lms.roster import read_csv

EXAMPLE = "2026-10-05T23:59:00-04:00"
EXAMPLE_ZONE = "America/Toronto"

_MOMENT = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[T ]"
    r"(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d{1,6}))?)?"
    r"\s*(?P<zone>[Zz]|[+-]\d{2}(?::?\d{2})?|[A-Za-z][A-Za-z0-9_+/-]*)?",
    re.ASCII,
)
_TWELVE_HOUR = re.compile(r"\d\s*[AaPp]\.?[Mm]\b\.?")
_AMBIGUOUS_DATE = re.compile(r"\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b|\b\d{4}[./]\d{1,2}[./]\d{1,2}\b")
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_UTC_NAMES = ("Z", "UTC", "GMT")  # in any case
_MAXIMUM_OFFSET = timedelta(hours=14)  # no zone is farther from UTC (Kiribati, +14:00)
_SHIFTED_UTC = re.compile(r"(?:UTC|GMT)[+-]\d{1,2}(?::?\d{2})?", re.IGNORECASE)
_POSIX_SIGN = re.compile(r"Etc/GMT(?P<sign>[+-])(?P<hours>\d{1,2})")  # Etc/GMT+4 is -04:00


class DueDateError(ValueError):
    """A due date, a due-dates file or a time zone that cannot be used: the message says where
    and what to write instead."""


def read_due_dates(
    path: Path, lessons: list[str], time_zone: str | None = None
) -> dict[str, datetime]:
    """Each lesson's due date from the CSV at `path` (columns `lesson`, `due`), as an aware UTC
    datetime. Lessons must be among `lessons`, each once; a due date with no zone is read in
    `time_zone` (an IANA name), and refused without one. Raises DueDateError naming the file
    and line."""
    table = read_csv(Path(path), DueDateError)
    if not (table.has("lesson") and table.has("due")):
        found = ", ".join(repr(column) for column in table.header)
        raise DueDateError(
            f"{table.where(table.header_line)}: due dates are a CSV file with 'lesson' and 'due'"
            f" columns (the columns are {found})"
        )
    zone = zone_named(time_zone) if time_zone else None
    due_dates, lines = {}, {}
    for line, cells in table.rows:
        lesson, due = table.cell(cells, "lesson"), table.cell(cells, "due")
        where = table.where(line)
        if not any(cells):
            raise DueDateError(f"{where}: blank row: delete it")
        if any(cells[len(table.header) :]):
            raise DueDateError(
                f"{where}: this row has {len(cells)} cells, not {len(table.header)}: a comma"
                f' in it splits a cell: quote the date ("Oct 5, 2026 …") or, better, write it'
                f" as ISO 8601, e.g. {EXAMPLE}"
            )
        if lesson not in lessons:
            raise DueDateError(f"{where}: {_unknown_lesson(lesson, lessons)}")
        if lesson in lines:
            raise DueDateError(
                f"{where}: {lesson} is also on line {lines[lesson]}: one due date per lesson"
            )
        if not due:
            raise DueDateError(f"{where}: no due date for {lesson}: write one, e.g. {EXAMPLE}")
        try:
            due_dates[lesson] = parse_moment(due, zone)
        except DueDateError as problem:
            raise DueDateError(f"{where}: {problem}") from None
        lines[lesson] = line
    return due_dates


def parse_moment(text: str, zone: tzinfo | str | None = None) -> datetime:
    """The moment `text` names (see the module's docstring), as an aware UTC datetime; a time
    with no zone is read in `zone`. Raises DueDateError saying what to write instead."""
    text = text.strip()
    if isinstance(zone, str):
        zone = zone_named(zone)
    if _TWELVE_HOUR.search(text):
        raise DueDateError(
            f"{text!r} is a 12-hour time: write a 24-hour time with its offset, e.g. {EXAMPLE}"
        )
    found = _MOMENT.fullmatch(text)
    if not found:
        raise DueDateError(_why_not_a_moment(text))
    parts = ("hour", "minute", "second")
    try:
        naive = datetime.fromisoformat(found["date"]).replace(
            **{part: int(found[part] or 0) for part in parts},
            microsecond=int((found["fraction"] or "0").ljust(6, "0")),
        )
    except ValueError as problem:
        raise DueDateError(f"{text!r}: no such date or time ({problem})") from None
    written = naive.isoformat(timespec="seconds")
    return _in_zone(text, naive, found["zone"], zone, written)


def _why_not_a_moment(text: str) -> str:
    """What is wrong with `text`, which is not a date and time as ISO 8601 writes them."""
    if _AMBIGUOUS_DATE.search(text):
        return (
            f"{text!r}: in a date written with slashes, dots or the day first, the order of day"
            f" and month is ambiguous: write year-month-day, e.g. {EXAMPLE}"
        )
    if _DATE_ONLY.fullmatch(text):
        return (
            f"{text!r} has no time: it would mean midnight, the start of that day: write the"
            f" time too, e.g. {text}T23:59:00-04:00"
        )
    return f"{text!r} is not a date and time as ISO 8601 writes them: write e.g. {EXAMPLE}"


def _in_zone(text: str, naive: datetime, written_zone, course_zone, written: str) -> datetime:
    """`naive` in the zone written after it, else in the course's; as UTC."""
    if written_zone is None:
        if course_zone is None:
            raise DueDateError(
                f"{text!r} has no time zone: write its offset, e.g. {written}-04:00 ('Z' for"
                f" UTC), or give the course a time zone (--time-zone, e.g. {EXAMPLE_ZONE})"
            )
        return _local(text, naive, course_zone)
    if written_zone.upper() in _UTC_NAMES:
        return naive.replace(tzinfo=UTC)
    if written_zone[0] in "+-":
        hours, minutes = int(written_zone[1:3]), int(written_zone[3:].lstrip(":") or 0)
        offset = timedelta(hours=hours, minutes=minutes)
        if minutes > 59 or offset > _MAXIMUM_OFFSET:
            raise DueDateError(
                f"{text!r}: {written_zone} is not an offset from UTC (no zone is more than 14"
                " hours from it)"
            )
        offset *= -1 if written_zone[0] == "-" else 1
        return naive.replace(tzinfo=timezone(offset)).astimezone(UTC)
    if _SHIFTED_UTC.fullmatch(written_zone):  # UTC+2, GMT-5:30
        sign, number = written_zone[3], written_zone[4:].replace(":", "")
        hours, minutes = (number[:-2], number[-2:]) if len(number) > 2 else (number, "00")
        raise DueDateError(
            f"{text!r}: write the offset alone, e.g. {written}{sign}{int(hours):02d}:{minutes}"
        )
    if "/" not in written_zone:
        raise DueDateError(
            f"{text!r}: time zone abbreviations such as {written_zone!r} are ambiguous (several"
            f" zones share each): write the offset, e.g. {written}-04:00, or 'Z' for UTC"
        )
    try:
        named = zone_named(written_zone)
    except DueDateError as problem:
        raise DueDateError(f"{text!r}: {problem}") from None
    return _local(text, naive, named)


def _local(text: str, naive: datetime, zone: tzinfo) -> datetime:
    """`naive` read in `zone`, unless that zone's clocks skip it or pass it twice."""
    first, second = naive.replace(tzinfo=zone, fold=0), naive.replace(tzinfo=zone, fold=1)
    if first.utcoffset() != second.utcoffset():
        written = naive.isoformat(timespec="seconds")
        if first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != naive:
            raise DueDateError(
                f"{text!r} never happens in {zone} (the clocks skip that hour): write the"
                f" offset you mean, e.g. {written}{_offset(first)}"
            )
        raise DueDateError(
            f"{text!r} happens twice in {zone} (the clocks go back): write the offset you"
            f" mean, {written}{_offset(first)} or {written}{_offset(second)}"
        )
    return first.astimezone(UTC)


def _offset(moment: datetime) -> str:
    text = moment.strftime("%z")
    return f"{text[:3]}:{text[3:]}"


def zone_named(name: str) -> ZoneInfo:
    """The time zone called `name`: UTC, GMT or an IANA name (`Europe/Berlin`), never an
    abbreviation (`CET`, `EST`: several zones share each) nor `Etc/GMT+4` and the like (POSIX's
    sign, the reverse of an offset's). Raises DueDateError otherwise."""
    name = name.strip()
    if name in ("UTC", "GMT"):
        return ZoneInfo(name)
    posix = _POSIX_SIGN.fullmatch(name)
    if posix and int(posix["hours"]):
        ahead = posix["sign"] == "-"  # POSIX: Etc/GMT-2 is 2 hours ahead of UTC
        offset = f"{'+' if ahead else '-'}{int(posix['hours']):02d}:00"
        raise DueDateError(
            f"{name!r} is {int(posix['hours'])} hours {'ahead of' if ahead else 'behind'} UTC,"
            f" the reverse of what it seems (POSIX's sign): write the offset instead, {offset}"
        )
    if "/" in name and not name.startswith("/"):
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
        close = difflib.get_close_matches(name, sorted(available_timezones()), n=1)
        guess = f": did you mean {close[0]}?" if close else ""
        raise DueDateError(f"unknown time zone {name!r}{guess}")
    raise DueDateError(
        f"{name!r} is not a time zone's IANA name: write one such as {EXAMPLE_ZONE} or"
        " Europe/Berlin (abbreviations such as EST or CET are shared by several zones)"
    )


def _unknown_lesson(lesson: str, lessons: list[str]) -> str:
    if not lesson:
        return "no lesson named: name one, or delete the row"
    close = difflib.get_close_matches(lesson, lessons, n=1, cutoff=0.5)
    if close:
        return f"no lesson {lesson!r}: did you mean {close[0]}?"
    return f"no lesson {lesson!r} (the lessons: {', '.join(lessons)})"


def course_time_zone(course) -> str | None:
    """The time zone `grader init --time-zone` gave the course (`course`, a Course), or None."""
    return course.config().NbGraderAPI.get("timezone") or None
