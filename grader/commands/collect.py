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

A file names the longest lesson it names whole (`ps10` in `lee_ps10_problem1`, never `ps1`).

Times: the platform's own record where it has one (Blackboard's attempt time, the time in
Brightspace's folder name, nbgrader's timestamp.txt), else the zip entry's time (Moodle),
else, for a folder, the file's modification time, which is when it was copied, and the note says
so. Canvas's download holds no submission time (its entries carry the time the zip was made):
a file without its `_late_` mark is on time by Canvas's record and gets no timestamp.txt, which
nbgrader reads as not late; a late one gets the download's time, the only bound there is, and
the note says to check it. Blackboard and Brightspace write local times with no zone, and so
does a zip (unless it holds the UTC extended timestamp): they are read in the zone the record
states (Blackboard's "Date Submitted: … CEST"), else the zone given (`timezone`), else the
course's (`grader init --time-zone`, nbgrader's `NbGraderAPI.timezone` in its
nbgrader_config.py), else this computer's, which the download was most likely made in; the note
names the zone used.
A submission older than the one already collected (its timestamp.txt, or for one collected
with none the time of the download it came in, kept in `collect_backup/download_times.json`)
never replaces it. One found unchanged gets this record's time where it is better evidence (the
platform's or an archive's, against a copy's) or earlier, and the note says it was corrected.
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
from grader.lms.archive import COPY_TIME, Entry, Export, ExportError
from grader.lms.exports import NOTEBOOK, PLATFORMS, Claim, Layout, Pattern, detect
from grader.lms.feedback_bundle import moodle_ids
from grader.lms.matching import NAME, Ambiguous, doubt, full_names, match_student, plain
from grader.lms.notebook_identity import best_fit, cells_of, known_notebooks, mismatch
from grader.lms.roster import Student, class_list, id_problem, load_roster_platform
from grader.lms.sources import Sources

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
    warning: str = ""  # what the instructor must know of the whole download

    @property
    def ok(self) -> bool:
        """Whether anything was placed (or found in place unchanged): the command's success."""
        return bool(self.placed)

    def lines(self) -> list[str]:
        """One line for the layout, one per file, and the counts (the command prints these)."""
        return [
            f"layout   {self.layout}: {self.evidence}",
            *([f"warning  {self.warning}"] if self.warning else []),
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


def _spans(text: str, known: list[str]) -> list[tuple[int, int, str]]:
    """Where `text` names each of `known` at a name boundary: start, end, or a character that
    is no letter or digit (`_`, `-`, space, `.`, `(`)."""
    return [
        (found.start(), found.end(), lesson)
        for lesson in known
        for found in re.finditer(rf"(?<![^\W_]){re.escape(lesson)}(?![^\W_])", text)
    ]


def named_lessons(text: str, known: list[str]) -> list[str]:
    """The lessons of `known` that `text` names at a name boundary, longest first: `ps10` in
    `lee_ps10_problem1`, never `ps1`; a lesson found only inside a longer one's name is not
    named."""
    spans = _spans(text, known)
    kept = [
        lesson
        for start, end, lesson in spans
        if not any(s <= start and end <= e and e - s > end - start for s, e, _ in spans)
    ]
    return sorted(dict.fromkeys(kept), key=len, reverse=True)


def _before(text: str, lesson: str) -> str:
    """`text` before its first naming of `lesson`."""
    return text[: min(start for start, _, _ in _spans(text, [lesson]))]


def _after(text: str, lesson: str) -> str:
    """`text` after its last naming of `lesson` (all of it if it does not name it)."""
    spans = _spans(text, [lesson])
    return text[max(end for _, end, _ in spans) :] if spans else text


def identify(
    name: str, only_lesson: str | None = None, known: list[str] | None = None
) -> tuple[str, str] | str:
    """(student, lesson) named by a file name, or the reason it names none; `known`: the
    course's lessons and assignments (default: the kit's lessons)."""
    if not name.endswith(".ipynb"):
        return "not a notebook (.ipynb)"
    stem = name[: -len(".ipynb")]
    known = lessons() if known is None else known
    named = named_lessons(stem, known)
    if only_lesson and named and only_lesson not in named:
        return f"is a submission of {named[0]}, not {only_lesson}"
    lesson = (only_lesson if only_lesson in named else named[0]) if named else only_lesson
    if lesson is None:
        close = difflib.get_close_matches(stem.split("_", 1)[-1], known, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]}?" if close else f" (known: {', '.join(known)})"
        return f"names no lesson{hint}"
    student = _before(stem, lesson).strip("_- ").split("_")[0] if named else stem.split("_")[0]
    if not STUDENT_ID.match(student):
        return f"no student id at the start of the name (found {student!r})"
    return student, lesson


def which_notebook(name: str, lesson: str, notebooks: list[str]) -> str | None:
    """The notebook of `lesson` a file name holds: its only one, else the one the name ends
    with (after the lesson's name, if it is there); None if it names none."""
    if len(notebooks) == 1:
        return notebooks[0]
    stem = _after(name.removesuffix(".ipynb"), lesson)
    named = [notebook for notebook in notebooks if stem.endswith(notebook)]
    return max(named, key=len) if named else None


def collect(
    source: Path,
    course: Course,
    lesson: str | None = None,
    pattern: str | None = None,
    timezone: str | None = None,
    *,
    replace_by_name: bool = False,
    other_platform: bool = False,
    worksheet: Path | None = None,
) -> CollectRun:
    """Place every submission found in `source` (a zip archive or a folder) into the course.

    `lesson`: the only lesson to take (files naming another are rejected), and the lesson of
    files that name none. `pattern`: a regular expression for the files' paths instead of the
    detected layout (see `grader.lms.exports.Pattern`). `timezone`: an IANA zone for times the
    platform writes without one, when its record names none (default: the course's, else this
    computer's). FileNotFoundError or ValueError for a source that is missing or no export,
    or a download of another platform than the course's roster (unless `other_platform`).

    A notebook whose nbgrader cells are another notebook's than the one its name says is
    rejected, naming what it is (`grader.lms.notebook_identity`). A file matched to its student
    by name alone never replaces what that student already has in the course unless
    `replace_by_name`: nothing of theirs for that lesson is changed, and the reason says so.
    `worksheet`: Moodle's grading worksheet of the assignment, whose participant numbers (the
    numbers in the download's names) tell apart students who share a name.
    """
    if lesson is not None:
        course.known([lesson])
    given = Pattern(pattern) if pattern else None
    collector = _Collector(course, lesson, _Clock(course, timezone), replace_by_name)
    if worksheet is not None:
        collector.participants = _participants(Path(worksheet), collector.students)
    with Export(Path(source)) as export:
        layout, evidence = (given, given.signature) if given else detect(export)
        if not other_platform:
            _same_platform(Path(source), layout, course)
        if lesson is not None:
            _named_for(Path(source), lesson, course)
        run = CollectRun(Path(source), layout.name, evidence)
        one_time = _one_entry_time(export)
        if one_time:
            collector.download_time = one_time
            run.warning = (
                f"every notebook in this download carries one time, {one_time}: the download's,"
                " not the submissions'. Where the platform's names give no time, lateness is"
                " not known: none is recorded (place a timestamp.txt by hand where one is late)"
            )
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


def _participants(worksheet: Path, students: list[Student]) -> dict[str, Student]:
    """Moodle's participant number -> student, from the assignment's grading worksheet
    (matched by email, else by a full name no two students share)."""
    if not worksheet.is_file() or worksheet.suffix.lower() != ".csv":
        raise ValueError(
            f"{worksheet}: not a CSV file: give Moodle's grading worksheet (View all submissions"
            " > Grading action > Download grading worksheet)"
        )
    by_id = {student.id: student for student in students}
    return {number: by_id[sid] for sid, number in moodle_ids(worksheet, students).items()}


def _same_platform(source: Path, layout: Layout, course: Course) -> None:
    """Refuse a download of one platform into a course whose roster is another's: its names
    would be matched against students that platform does not know (ValueError)."""
    platform = load_roster_platform(course.root)
    platforms = {known.name for known in PLATFORMS} - {"nbgrader's submitted/ folder"}
    if platform and layout.name in platforms and layout.name != platform:
        raise ValueError(
            f"{source}: a {layout.name} download, but the course's roster is {platform}'s: is"
            " it another course's? If it is this course's, collect it with --other-platform"
        )


def _named_for(source: Path, lesson: str, course: Course) -> None:
    """Refuse a download whose name names another assignment of the course and not `lesson`, as
    platforms name them (Moodle's `COURSE-ps1-12.zip`, Brightspace's `ps1 Download …zip`,
    Blackboard's `gradebook_COURSE_ps1_…zip`): it is that assignment's (ValueError)."""
    named = [name for name in course.lessons if _names(source.name, name)]
    if named and lesson not in named:
        raise ValueError(
            f"{source}: its name says {named[0]}, not {lesson}: is it the download of"
            f" {named[0]}? Collect it with --lesson {named[0]}, or rename the file if its name"
            " is wrong"
        )


def _names(text: str, name: str) -> bool:
    """Whether `text` holds `name` between non-alphanumeric characters (ps1, not ps10)."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", text, re.I) is not None


def _one_entry_time(export: Export) -> str:
    """The one archive time every notebook of a download carries (to the minute), where there
    are three or more: a platform that stamps its download's time on every entry (as Canvas
    and Moodle may) gives no submission times. "" where the times differ."""
    times = {
        (entry.time or entry.local_time).strftime("%Y-%m-%d %H:%M")
        for entry in export.entries
        if entry.name.lower().endswith(NOTEBOOK)
        and entry.time_source != COPY_TIME
        and (entry.time or entry.local_time) is not None
    }
    notebooks = sum(1 for entry in export.entries if entry.name.lower().endswith(NOTEBOOK))
    return times.pop() if len(times) == 1 and notebooks >= 3 else ""


class _Clock:
    """Turns the times platforms write without a zone into UTC (see the module's docstring)."""

    def __init__(self, course: Course, given: str | None):
        self.course, self.zone, self.how = course, None, ""
        if given:
            self.zone, self.how = _zone(given, "--time-zone"), f"{given}, as given"

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
    time: datetime | None  # its submission time, for lateness; None: on time by the platform
    bound: datetime | None  # the latest it can have been submitted (its time, or a download's)
    how: str  # where the time comes from
    strong: bool  # the time is a record of the submission, not a copy's or a download's
    remark: str
    order: int
    doubt: str = ""  # what to check about whose it is
    by_order: bool = False  # the platform's order of copies decides, not their times
    by_name: str = ""  # the name it was matched by, where nothing else matched
    source: str = ""  # the platform and its number for who submitted it (`Moodle 102`)
    layout: str = ""  # the download's layout


class _Collector:
    def __init__(
        self, course: Course, only_lesson: str | None, clock: _Clock, replace_by_name: bool
    ):
        self.course, self.only_lesson, self.clock = course, only_lesson, clock
        self.replace_by_name = replace_by_name
        self.students = class_list(course)
        self.known = course.lessons
        self.notebooks = {assignment: course.notebooks(assignment) for assignment in self.known}
        self.released = known_notebooks(course, self.notebooks)
        self.backup_stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        self.troubles: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._graded: dict[tuple[str, str], datetime] | None = None
        self.downloads = _Downloads(course.root / "collect_backup" / "download_times.json")
        self.sources = Sources(course.root)
        self.download_time = ""  # where every entry carries the download's time (_one_entry_time)
        self.participants: dict[str, Student] = {}  # Moodle's participant number -> student

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
        student, why, by_name = self._student(claim, layout)
        if student is None:
            return Rejected(entry.path, why)
        cells = self._cells(entry, export)
        where = self._lesson_and_notebook(claim, cells)
        if isinstance(where, str):
            return Rejected(entry.path, f"{student.id}: {where}")
        other = self._other_notebook(cells, *where)
        if other:
            return Rejected(entry.path, f"{student.id}: {other}")
        when = self._time(claim, entry)
        if isinstance(when, str):
            self.troubles[(student.id, where[0])].append(f"{entry.path}: {when}")
            return Rejected(entry.path, f"{student.id}: {when}")
        return _Found(
            entry, student.id, *where, *when, claim.remark, claim.order,
            doubt=doubt(claim, student) if self.students else "", by_order=bool(claim.lateness),
            by_name=by_name,
            source=f"{layout.name} {claim.submitter}" if claim.submitter else "",
            layout=layout.name,
        )  # fmt: skip

    @staticmethod
    def _cells(entry: Entry, export: Export) -> dict[str, str]:
        """The nbgrader cells of `entry` ({} where it cannot be read: placing it says why)."""
        try:
            return cells_of(export.read(entry))
        except ExportError:
            return {}

    def _other_notebook(self, cells: dict[str, str], lesson: str, notebook: str) -> str:
        """Why a file with these nbgrader cells is not `lesson`'s `notebook` (another notebook
        of the course, or of none), with what to do; "" where it may be."""
        why = mismatch(cells, lesson, notebook, self.released)
        if not why:
            return ""
        if self.only_lesson:
            return f"{why}: is this the download of another assignment than {lesson}?"
        return f"{why}, though its name says {lesson}: place it by hand if it is {lesson}'s"

    def _student(self, claim: Claim, layout: Layout) -> tuple[Student | None, str, str]:
        """(the student, "", the name matched where nothing else did) or (None, why, "")."""
        listed = self.participants.get(claim.submitter) if layout.name == "Moodle" else None
        if listed is not None:  # the worksheet's participant, whose name must be the file's
            if any(plain(name) in full_names(listed) for name in claim.names):
                return listed, "", ""
            return None, (
                f"{claim.seems}? the worksheet's participant {claim.submitter} is"
                f" {listed.full_name} ({listed.id}): is the worksheet of another assignment?"
            ), ""  # fmt: skip
        if self.students:
            found, how = match_student(claim, self.students, layout.tell_apart)
            if isinstance(found, Ambiguous):
                return None, self._by_hand(claim, found), ""
            if isinstance(found, str):
                return None, found, ""
            problem = id_problem(found.id)
            if problem:
                return None, f"{claim.seems}? the roster's id {found.id!r} {problem}", ""
            return found, "", claim.seems if how == NAME else ""
        token = next((token for token in claim.ids if token), "")
        if token and not id_problem(token) and (claim.whole_id or STUDENT_ID.match(token)):
            return Student(token), "", ""
        if claim.names or claim.squashed:
            return None, (
                f"{claim.seems}? the course has no roster to match names with:"
                " give it one (grader init --roster)"
            ), ""  # fmt: skip
        return None, f"no student id at the start of the name (found {token!r})", ""

    def _by_hand(self, claim: Claim, reason: Ambiguous) -> str:
        """`reason`, naming the folder to place the file in by hand where the lesson is known."""
        where = self._lesson_and_notebook(claim, {})
        if isinstance(where, str):
            return str(reason)
        ids = "|".join(student.id for student in reason.students)
        lesson, notebook = where
        return str(reason).replace(
            "submitted/<student>/<lesson>/", f"submitted/<{ids}>/{lesson}/{notebook}{NOTEBOOK}"
        )

    def _lesson_and_notebook(self, claim: Claim, cells: dict[str, str]) -> tuple[str, str] | str:
        """(lesson, notebook) the file is, or why it is none of the course's; where its name
        fits several assignments' notebooks, its nbgrader `cells` choose."""
        stem = claim.original[: -len(NOTEBOOK)] if claim.original.lower().endswith(NOTEBOOK) else (
            claim.original
        )  # fmt: skip
        if claim.lesson:
            if claim.lesson not in self.known:
                known = ", ".join(self.known)
                return f"its assignment {claim.lesson!r} is none of the course's ({known})"
            named = [claim.lesson]
        else:
            in_hints = [
                lesson for hint in claim.hints for lesson in named_lessons(hint, self.known)
            ]
            named = named_lessons(stem, self.known) or sorted(
                dict.fromkeys(in_hints), key=len, reverse=True
            )
        if self.only_lesson and named and self.only_lesson not in named:
            return f"is a submission of {named[0]}, not {self.only_lesson}"
        lesson = self.only_lesson if self.only_lesson else (named[0] if named else None)
        if lesson is None:
            owners = [
                known
                for known, notebooks in self.notebooks.items()
                if stem and any(stem.endswith(notebook) for notebook in notebooks)
            ]
            chosen = best_fit(cells, owners, stem, self.released)
            if len(owners) > 1 and chosen:
                owners = [chosen]
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

    def _time(self, claim: Claim, entry: Entry):
        """(time, bound, how, strong): when the file was submitted (None: on time by the
        platform's record, which gives no time), the latest it can have been, by whose record,
        and whether that is a record of the submission; or why there is none."""
        if claim.time_problem:
            return claim.time_problem
        if claim.time is not None:
            when = claim.time.astimezone(UTC)
            return when, when, claim.time_source, True
        if claim.local_time is not None:
            when, how = self.clock.utc(claim.local_time, claim.zone, claim.zone_name)
            return when, when, f"{claim.time_source}, {how}", True
        unread = f"{claim.time_source}: unreadable; " if claim.time_source else ""
        if entry.time is not None:
            when, how = entry.time.astimezone(UTC), unread + entry.time_source
        elif entry.local_time is not None:
            when, how = self.clock.utc(entry.local_time)
            how = f"{unread}{entry.time_source}, {how}"
        else:
            when, how = None, ""
        if claim.lateness == "on time":  # the entry's time is the download's: a bound only
            return None, when, how, False
        if self.download_time and not claim.lateness and when is not None:
            return None, when, f"{how} (the download's time, as on every entry)", False
        if when is None:
            if claim.lateness:
                return (
                    f"{claim.remark.split(';')[0]}, and its download gives no time at all: place"
                    " it by hand, with the time it was submitted in a timestamp.txt"
                )
            return "no time of submission: neither the platform's record nor the archive gives one"
        strong = not claim.lateness and entry.time_source != COPY_TIME
        return when, when, how, strong

    def place(self, found: list[_Found], export: Export, run: CollectRun) -> None:
        """Place the newest copy of each notebook, a student's lesson at a time."""
        newest: dict[tuple[str, str, str], _Found] = {}
        for item in found:
            key = (item.student, item.lesson, item.notebook)
            if key in newest:
                older, newer = sorted([newest[key], item], key=_recency)
                newest[key] = newer
                reason = f"duplicate for {item.student}: kept {newer.entry.path}"
                if older.doubt and not newer.doubt:
                    reason += f" ({older.doubt})"
                run.rejected.append(Rejected(older.entry.path, reason))
            else:
                newest[key] = item
        groups: dict[tuple[str, str], list[_Found]] = defaultdict(list)
        for key in sorted(newest):
            groups[key[:2]].append(newest[key])
        for (student, lesson), items in groups.items():
            self._place_submission(student, lesson, items, export, run)
        self.downloads.save()
        self.sources.save()

    def _place_submission(self, student, lesson, items, export, run) -> None:
        folder = self.course.submission(student, lesson)
        stamp_file = folder / "timestamp.txt"
        collected = _collected_time(folder)
        downloaded = None if collected else self.downloads.get(student, lesson)
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
        times = [item for item, *_ in files if item.time is not None]
        latest = max(times, key=lambda item: item.time) if times else None  # None: on time
        stamp = latest.time if latest else None
        bounds = [item.bound for item, *_ in files]
        bound = max(bounds) if None not in bounds else None
        changed = not all(same for *_, same, _ in files)
        before = collected or downloaded  # its time, else the time of the download it came in
        if changed and before is not None and bound is not None and bound < before:
            prev = before.strftime(SHOWN)
            prev = prev if collected else f"in a download made {prev}, on time by its record"
            for item, _, target, same, _ in files:
                if same:
                    run.placed.append(self._placed(item, target, "unchanged"))
                    continue
                reason = (
                    f"{student}: older than the submission already collected ({prev});"
                    f" this one: {_when(item).removeprefix('submitted ')}"
                )
                run.rejected.append(Rejected(item.entry.path, reason))
            return
        if changed and self._kept_from_name_match(student, files, folder, run):
            return
        if stamp is None and bound is not None:  # what orders it against a later download
            keep = changed or downloaded is None
            self.downloads.set(student, lesson, bound if keep else min(bound, downloaded))
        else:
            self.downloads.drop(student, lesson)
        if not changed:
            action, timed = self._correct_time(stamp_file, collected, latest, files[0][0])
            for item, _, target, *_ in files:
                run.placed.append(self._placed(item, target, action, timed))
            if _collected_time(folder) != collected:  # the time now in force is this record's
                self.sources.record(student, lesson, [item for item, *_ in files], latest)
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
        if stamp is None:
            stamp_file.unlink(missing_ok=True)
        else:
            stamp_file.write_text(stamp.strftime(TIMESTAMP_FORMAT))
        self.sources.record(student, lesson, [item for item, *_ in files], latest)

    def _kept_from_name_match(self, student, files, folder: Path, run) -> bool:
        """Whether files matched by name alone would change the submission `student` already
        has (then each is rejected, and nothing of theirs is changed)."""
        named = [item for item, *_ in files if item.by_name]
        if not named or self.replace_by_name or not any(folder.glob(f"*{NOTEBOOK}")):
            return False
        before = self.sources.get(student, named[0].lesson).get("source")
        if before and all(item.source == before for item in named):
            return False  # the same submitter of the same assignment on the same platform
        kept = folder.relative_to(self.course.root).as_posix()
        reason = (
            f"{student}: matched by the name {named[0].by_name!r} alone, and it would change the"
            f" submission already collected in {kept}/: nothing was changed; if it is theirs,"
            " collect again with --replace-by-name"
        )
        run.rejected += [Rejected(item.entry.path, reason) for item, *_ in files]
        return True

    @staticmethod
    def _correct_time(
        stamp_file: Path, collected: datetime | None, latest: _Found | None, first: _Found
    ) -> tuple[str, bool]:
        """The action for a submission found unchanged, and whether its note should give this
        record's time: the recorded time is corrected where this record is better evidence (the
        platform's, or an archive's against a copy's) or earlier."""
        if collected is None:
            if latest is None:
                return "unchanged", True
            stamp_file.write_text(latest.time.strftime(TIMESTAMP_FORMAT))
            return "unchanged; time recorded", True
        was = collected.strftime(SHOWN)
        if latest is None:  # on time by the platform's record, which gives no time
            stamp_file.unlink()
            return (
                f"unchanged; time corrected: {first.remark} (timestamp.txt of {was} removed)",
                False,
            )
        if latest.time == collected:
            return "unchanged", True
        if latest.strong or latest.time < collected:
            stamp_file.write_text(latest.time.strftime(TIMESTAMP_FORMAT))
            when = f"{latest.time.strftime(SHOWN)} ({latest.how})"
            return f"unchanged; time corrected to {when}, was {was}", False
        return f"unchanged; its recorded time {was} kept", True

    def _placed(self, item: _Found, target: Path, action: str, timed: bool = True) -> Placed:
        note = f"{action}; {_when(item)}" if timed else action
        if item.remark and item.remark not in note:
            note += f"; {item.remark}"
        if item.time is None:
            graded = self._graded_times().get((item.student, item.lesson))
            if graded is not None:
                note += (
                    f"; the gradebook still holds {graded.strftime(SHOWN)} from an earlier"
                    " grading, which nbgrader keeps while no timestamp.txt replaces it"
                )
        if item.doubt:
            note += f"; {item.doubt}"
        for trouble in self.troubles.get((item.student, item.lesson), []):
            note += f"; a file of theirs was rejected ({trouble}): check which is their latest"
        return Placed(item.entry.path, item.student, item.lesson, note, target.name, item.time)

    def _graded_times(self) -> dict[tuple[str, str], datetime]:
        """(student, lesson) -> the submission time the gradebook holds, where it holds one."""
        if self._graded is None:
            from nbgrader.api import SubmittedAssignment

            with self.course.api().gradebook as gb:
                rows = gb.db.query(SubmittedAssignment).filter(
                    SubmittedAssignment.timestamp.isnot(None)
                )
                self._graded = {
                    (row.student_id, row.assignment.name): row.timestamp.replace(tzinfo=UTC)
                    for row in rows
                }
        return self._graded


def _recency(item: _Found) -> tuple:
    """Which of two copies of a notebook is the later: one whose user id is the student's,
    then the platform's order where it gives no times (Canvas), else the time."""
    bound = item.bound or datetime.min.replace(tzinfo=UTC)
    if item.by_order:
        return (not item.doubt, item.order, bound)
    return (not item.doubt, bound, item.order)


def _when(item: _Found) -> str:
    """When `item` was submitted, by whose record, for notes and reasons."""
    if item.time is None:
        if item.bound is None:
            return item.remark
        return f"{item.remark} (downloaded by {item.bound.strftime(SHOWN)}: {item.how})"
    return f"submitted {item.time.strftime(SHOWN)} ({item.how})"


class _Downloads:
    """When the download was made that each submission collected with no time came in (one
    on time by the platform's record, such as Canvas's): what tells a later download from an
    earlier one, as timestamp.txt does for the others. Kept beside the backups."""

    def __init__(self, path: Path):
        self.path, self._times, self._changed = path, None, False

    def _load(self) -> dict[str, str]:
        if self._times is None:
            import json

            try:
                self._times = dict(json.loads(self.path.read_text()))
            except (OSError, ValueError, TypeError):
                self._times = {}
        return self._times

    def get(self, student: str, lesson: str) -> datetime | None:
        text = self._load().get(f"{student}/{lesson}")
        try:
            return datetime.fromisoformat(text).astimezone(UTC) if text else None
        except (TypeError, ValueError):
            return None

    def set(self, student: str, lesson: str, when: datetime) -> None:
        key, value = f"{student}/{lesson}", when.astimezone(UTC).isoformat()
        if self._load().get(key) != value:
            self._times[key], self._changed = value, True

    def drop(self, student: str, lesson: str) -> None:
        if self._load().pop(f"{student}/{lesson}", None) is not None:
            self._changed = True

    def save(self) -> None:
        if self._changed:
            import json

            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self._times, indent=1, sort_keys=True) + "\n")
            self._changed = False


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
