"""Bring in the submissions a learning platform lets the instructor download, as a zip archive
or a folder: Canvas, Moodle, Blackboard, Brightspace (D2L), nbgrader's own layouts, or names a
regular expression describes (`pattern`, as nbgrader's zip_collect takes).

The layout is detected from the files' names (`grader.lms.exports`); each file is matched to a
student on the roster (`grader.lms.matching`: id, platform user id, login, SIS id, email, then
name), to a lesson and one of its notebooks, and to the time the platform says it was
submitted. It goes to `submitted/<student>/<lesson>/<notebook>.ipynb` with nbgrader's
`timestamp.txt`; an earlier submission it replaces is kept in `collect_backup/`. Every file is
placed, rejected with a reason that names it and the student it seems to be, or read as a record
of the platform (Blackboard's .txt, Brightspace's index.html, nbgrader's timestamp.txt).

Times: the platform's own record where it has one (Blackboard's attempt time, the time in
Brightspace's folder name, nbgrader's timestamp.txt), else the zip entry's time (Canvas, Moodle),
else, for a folder, the file's modification time, which is when it was copied, and the note says
so. Blackboard and Brightspace write local times with no zone, and so does a zip (unless it holds
the UTC extended timestamp): they are read in the zone the record states (Blackboard's
"Date Submitted: … CEST"), else the zone given (`timezone`), else the course's
(`grader init --time-zone`, nbgrader's `NbGraderAPI.timezone` in its nbgrader_config.py), else
this computer's, which the download was most likely made in; the note names the zone used.
A submission older than the one already collected (its timestamp.txt) never replaces it.
"""

import difflib
import re
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path

from grader.compat import UTC
from grader.course import Course, lessons
from grader.lms.archive import Entry, Export, ExportError
from grader.lms.exports import NOTEBOOK, PLATFORMS, Claim, Layout, Pattern, detect
from grader.lms.matching import find_student
from grader.lms.roster import Student, load_roster

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.@-]*$")
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"  # nbgrader's; its parse_utc reads it back
SHOWN = "%Y-%m-%d %H:%M:%S UTC"


@dataclass(frozen=True)
class Placed:
    """A file that was put into the course (or was there already, unchanged)."""

    name: str  # the file's path inside the export
    student: str
    lesson: str
    note: str  # new, unchanged or replaced; when it was submitted, by whose record
    notebook: str = ""  # the file name it has in the course
    time: datetime | None = None  # its submission time (UTC)


@dataclass(frozen=True)
class Rejected:
    """A file that was not placed, and why."""

    name: str
    reason: str


@dataclass(frozen=True)
class Read:
    """A record of the platform, read for what it says of the submissions beside it."""

    name: str
    what: str


@dataclass
class CollectRun:
    """What one collect did: the layout it read the export as, and each file's fate."""

    source: Path
    layout: str
    evidence: str  # why this layout
    placed: list[Placed] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    read: list[Read] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether anything was placed (or found in place unchanged): the command's success."""
        return bool(self.placed)

    def lines(self) -> list[str]:
        """One line for the layout, one per file, and the counts (the command prints these)."""
        return [
            f"layout   {self.layout}: {self.evidence}",
            *(
                f"placed   {p.name} -> {p.student}/{p.lesson}/{p.notebook} ({p.note})"
                for p in self.placed
            ),
            *(f"rejected {r.name}: {r.reason}" for r in self.rejected),
            *(f"read     {r.name}: {r.what}" for r in self.read),
            f"{len(self.placed)} placed, {len(self.rejected)} rejected",
        ]

    def __iter__(self):
        """(placed, rejected), as collect returned them before it returned a CollectRun."""
        return iter((self.placed, self.rejected))


def identify(
    name: str, only_lesson: str | None = None, known: list[str] | None = None
) -> tuple[str, str] | str:
    """(student, lesson) named by a file name, or the reason it names none; `known`: the
    course's lessons and assignments (default: the kit's lessons)."""
    if not name.endswith(".ipynb"):
        return "not a notebook (.ipynb)"
    stem = name[: -len(".ipynb")]
    known = lessons() if known is None else known
    named = [lesson for lesson in known if lesson in stem]
    if only_lesson and named and only_lesson not in named:
        return f"is a submission of {named[0]}, not {only_lesson}"
    lesson = named[0] if named else only_lesson
    if lesson is None:
        close = difflib.get_close_matches(stem.split("_", 1)[-1], known, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]}?" if close else f" (known: {', '.join(known)})"
        return f"names no lesson{hint}"
    student = stem.split(lesson)[0].strip("_- ").split("_")[0] if named else stem.split("_")[0]
    if not STUDENT_ID.match(student):
        return f"no student id at the start of the name (found {student!r})"
    return student, lesson


def which_notebook(name: str, lesson: str, notebooks: list[str]) -> str | None:
    """The notebook of `lesson` a file name holds: its only one, else the one the name ends
    with (after the lesson's name, if it is there); None if it names none."""
    if len(notebooks) == 1:
        return notebooks[0]
    stem = name.removesuffix(".ipynb").split(lesson)[-1]
    named = [notebook for notebook in notebooks if stem.endswith(notebook)]
    return max(named, key=len) if named else None


def course_students(course: Course) -> list[Student]:
    """The course's students: its roster.csv, then those only in its gradebook."""
    listed = load_roster(course.root)
    ids = {student.id for student in listed}
    with course.api().gradebook as gb:
        entered = [
            Student(s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
            for s in gb.students
        ]
    return listed + [student for student in entered if student.id not in ids]


def _id_problem(student_id: str) -> str | None:
    """What keeps a roster's id from naming the student's folder, or None."""
    try:
        from grader.lms.roster import id_problem
    except ImportError:  # pragma: no cover - the roster module's check, if it has one
        bad = student_id in ("", ".", "..") or "/" in student_id or "\\" in student_id
        return "is not a folder name" if bad else None
    return id_problem(student_id)


def collect(
    source: Path,
    course: Course,
    lesson: str | None = None,
    pattern: str | None = None,
    timezone: str | None = None,
) -> CollectRun:
    """Place every submission found in `source` (a zip archive or a folder) into the course.

    `lesson`: the only lesson to take (files naming another are rejected), and the lesson of
    files that name none. `pattern`: a regular expression for the files' paths instead of the
    detected layout (see `grader.lms.exports.Pattern`). `timezone`: an IANA zone for times the
    platform writes without one, when its record names none (default: the course's, else this
    computer's). FileNotFoundError or ValueError for a source that is missing or no export.
    """
    if lesson is not None:
        course.known([lesson])
    given = Pattern(pattern) if pattern else None
    collector = _Collector(course, lesson, _Clock(course, timezone))
    with Export(Path(source)) as export:
        layout, evidence = (given, given.signature) if given else detect(export)
        run = CollectRun(Path(source), layout.name, evidence)
        found = []
        for entry in export.entries:
            outcome = collector.examine(entry, export, layout)
            if isinstance(outcome, Rejected):
                run.rejected.append(outcome)
            elif isinstance(outcome, Read):
                run.read.append(outcome)
            else:
                found.append(outcome)
        collector.place(found, export, run)
    return run


class _Clock:
    """Turns the times platforms write without a zone into UTC (see the module's docstring)."""

    def __init__(self, course: Course, given: str | None):
        self.course, self.zone, self.how = course, None, ""
        if given:
            self.zone, self.how = _zone(given, "--timezone"), f"{given}, as given"

    def _course_zone(self) -> None:
        if self.how:
            return
        from grader.lms.due_dates import course_time_zone

        name = course_time_zone(self.course)
        if name:
            self.zone, self.how = _zone(name, "the course's time zone"), f"{name}, the course's"
        else:
            here = datetime.now().astimezone().tzname()
            self.how = f"this computer's zone ({here}), as the course sets none (--time-zone)"

    def utc(
        self, local: datetime, stated: tzinfo | None = None, stated_name: str = ""
    ) -> tuple[datetime, str]:
        """`local` in UTC, and how its zone was chosen."""
        if stated is not None:
            return local.replace(tzinfo=stated).astimezone(UTC), f"read in {stated_name}, as stated"
        self._course_zone()
        if self.zone is None:
            return local.astimezone(UTC), f"read in {self.how}"  # a naive time is local time
        return local.replace(tzinfo=self.zone).astimezone(UTC), f"read in {self.how}"


def _zone(name: str, where: str) -> tzinfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"{where}: unknown time zone {name!r} (give an IANA name such as Europe/Berlin)"
        ) from None


@dataclass(frozen=True)
class _Found:
    """A file matched to a student, a lesson, a notebook and a time, not placed yet."""

    entry: Entry
    student: str
    lesson: str
    notebook: str
    time: datetime
    how: str  # where the time comes from
    remark: str
    order: int


class _Collector:
    def __init__(self, course: Course, only_lesson: str | None, clock: _Clock):
        self.course, self.only_lesson, self.clock = course, only_lesson, clock
        self.students = course_students(course)
        self.known = course.lessons
        self.notebooks = {assignment: course.notebooks(assignment) for assignment in self.known}
        self.backup_stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")

    def examine(self, entry: Entry, export: Export, layout: Layout) -> "_Found | Rejected | Read":
        """What `entry` is: a submission to place, a record of the platform, or neither, why."""
        if entry.problem:
            return Rejected(entry.path, entry.problem)
        what = layout.record(entry)
        if what:
            return Read(entry.path, what)
        claim = layout.claim(entry, export)
        if isinstance(claim, str):
            other = next((p.name for p in PLATFORMS if p.fits(entry, export)), None)
            if other and other != layout.name:
                claim += f"; it is named as {other} names files: collect it on its own"
            return Rejected(entry.path, claim)
        if not entry.name.lower().endswith(NOTEBOOK):
            return Rejected(entry.path, "not a notebook (.ipynb)")
        student, why = self._student(claim)
        if student is None:
            return Rejected(entry.path, why)
        where = self._lesson_and_notebook(claim)
        if isinstance(where, str):
            return Rejected(entry.path, f"{student}: {where}")
        when = self._time(claim, entry)
        if isinstance(when, str):
            return Rejected(entry.path, f"{student}: {when}")
        return _Found(entry, student, *where, *when, claim.remark, claim.order)

    def _student(self, claim: Claim) -> tuple[str | None, str]:
        if self.students:
            found = find_student(claim, self.students)
            if isinstance(found, str):
                return None, found
            problem = _id_problem(found.id)
            if problem:
                return None, f"{claim.seems}? the roster's id {found.id!r} {problem}"
            return found.id, ""
        token = next((token for token in claim.ids if token), "")
        if STUDENT_ID.match(token):
            return token, ""
        if claim.names:
            return None, (
                f"{claim.seems}? the course has no roster to match names with:"
                " give it one (grader init --roster)"
            )
        return None, f"no student id at the start of the name (found {token!r})"

    def _lesson_and_notebook(self, claim: Claim) -> tuple[str, str] | str:
        """(lesson, notebook) the file is, or why it is none of the course's."""
        stem = claim.original[: -len(NOTEBOOK)] if claim.original.lower().endswith(NOTEBOOK) else (
            claim.original
        )  # fmt: skip
        if claim.lesson:
            if claim.lesson not in self.known:
                known = ", ".join(self.known)
                return f"its assignment {claim.lesson!r} is none of the course's ({known})"
            named = [claim.lesson]
        else:
            named = [known for known in self.known if known in stem] or [
                known for known in self.known if any(known in hint for hint in claim.hints)
            ]
        named.sort(key=len, reverse=True)
        if self.only_lesson and named and self.only_lesson not in named:
            return f"is a submission of {named[0]}, not {self.only_lesson}"
        lesson = self.only_lesson if self.only_lesson else (named[0] if named else None)
        if lesson is None:
            owners = [
                known
                for known, notebooks in self.notebooks.items()
                if stem and any(stem.endswith(notebook) for notebook in notebooks)
            ]
            if len(owners) > 1:
                return (
                    f"names no lesson; its notebook could be of {', '.join(owners)}: give --lesson"
                )
            if not owners:
                close = difflib.get_close_matches(stem, self.known, n=1, cutoff=0.5)
                hint = (
                    f"; did you mean {close[0]}?" if close else f" (known: {', '.join(self.known)})"
                )
                return f"names no lesson{hint}"
            lesson = owners[0]
        notebook = which_notebook(stem, lesson, self.notebooks[lesson])
        if notebook is None:
            return f"names none of {lesson}'s notebooks ({', '.join(self.notebooks[lesson])})"
        return lesson, notebook

    def _time(self, claim: Claim, entry: Entry) -> tuple[datetime, str] | str:
        """When the file was submitted, and by whose record."""
        if claim.time is not None:
            return claim.time.astimezone(UTC), claim.time_source
        if claim.local_time is not None:
            when, how = self.clock.utc(claim.local_time, claim.zone, claim.zone_name)
            return when, f"{claim.time_source}, {how}"
        unread = f"{claim.time_source}: unreadable; " if claim.time_source else ""
        if entry.time is not None:
            return entry.time.astimezone(UTC), unread + entry.time_source
        if entry.local_time is not None:
            when, how = self.clock.utc(entry.local_time)
            return when, f"{unread}{entry.time_source}, {how}"
        return "no time of submission: neither the platform's record nor the archive gives one"

    def place(self, found: list[_Found], export: Export, run: CollectRun) -> None:
        """Place the newest copy of each notebook, a student's lesson at a time."""
        newest: dict[tuple[str, str, str], _Found] = {}
        for item in found:
            key = (item.student, item.lesson, item.notebook)
            if key in newest:
                older, newer = sorted([newest[key], item], key=lambda i: (i.time, i.order))
                newest[key] = newer
                reason = f"duplicate for {item.student}: kept {newer.entry.path}"
                run.rejected.append(Rejected(older.entry.path, reason))
            else:
                newest[key] = item
        groups: dict[tuple[str, str], list[_Found]] = defaultdict(list)
        for key in sorted(newest):
            groups[key[:2]].append(newest[key])
        for (student, lesson), items in groups.items():
            self._place_submission(student, lesson, items, export, run)

    def _place_submission(self, student, lesson, items, export, run) -> None:
        folder = self.course.submission(student, lesson)
        collected = _collected_time(folder)
        files = []
        for item in items:
            try:
                data = export.read(item.entry)
            except ExportError as error:
                run.rejected.append(Rejected(item.entry.path, f"{student}: {error}"))
                continue
            target = folder / f"{item.notebook}{NOTEBOOK}"
            same = target.is_file() and target.read_bytes() == data
            files.append((item, data, target, same, target.exists()))
        if not files:
            return
        stamp = max(item.time for item, *_ in files)
        if collected is not None and stamp < collected:
            for item, _, target, same, _ in files:
                if same:
                    run.placed.append(self._placed(item, target, "unchanged"))
                    continue
                reason = (
                    f"{student}: older than the submission already collected"
                    f" ({collected.strftime(SHOWN)}); this one: {item.time.strftime(SHOWN)}"
                    f" ({item.how})"
                )
                run.rejected.append(Rejected(item.entry.path, reason))
            return
        backup = None
        if any(existed and not same for *_, same, existed in files):
            backup = self.course.root / "collect_backup" / self.backup_stamp / student / lesson
            shutil.copytree(folder, backup)
        folder.mkdir(parents=True, exist_ok=True)
        for item, data, target, same, existed in files:
            if same:
                action = "unchanged"
            else:
                target.write_bytes(data)
                action = f"replaced an earlier submission (kept in {backup})" if existed else "new"
            run.placed.append(self._placed(item, target, action))
        if collected is None or not all(same for *_, same, _ in files):
            (folder / "timestamp.txt").write_text(stamp.strftime(TIMESTAMP_FORMAT))

    @staticmethod
    def _placed(item: _Found, target: Path, action: str) -> Placed:
        note = f"{action}; submitted {item.time.strftime(SHOWN)} ({item.how})"
        if item.remark:
            note += f"; {item.remark}"
        return Placed(item.entry.path, item.student, item.lesson, note, target.name, item.time)


def _collected_time(folder: Path) -> datetime | None:
    """The time in the timestamp.txt of a submission already collected, read as nbgrader reads
    it (`CourseDirectory.get_existing_timestamp`), or None."""
    from nbgrader.utils import parse_utc

    path = folder / "timestamp.txt"
    if not path.is_file():
        return None
    try:
        return parse_utc(path.read_text().strip()).replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        return None
