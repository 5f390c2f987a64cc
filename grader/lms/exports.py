"""How each learning platform names the files of its "download all submissions", and what a
file's name (and the platform's record beside it) says: whose it is, the file the student
uploaded, and when it was submitted.

Layouts, detected from the names (`detect`), or given as a regular expression (`Pattern`):

- Canvas (Submissions → Download): flat `{name}_{late_}{user id}_{submission id}_{file}`, the
  name being the student's sortable name lowercased with no spaces or punctuation
  (`garciamaria`: a name, which two students may share, never an id; the user id is theirs);
  a file uploaded again is renamed `file-1.ipynb`, `file-2.ipynb`. The download holds no
  submission time: its entries carry the time the zip was made. Only `late_` says when:
  a file without it is on time by Canvas's own record.
- Moodle ("Download all submissions"): `{Full Name}_{participant id}_assignsubmission_file_/{file}`
  (in folders) or `…_assignsubmission_file_{file}` (flat). The participant id is the
  assignment's own number, not the user's id: files are matched by name.
- Blackboard (Grade Center → Assignment File Download):
  `{assignment}_{login}_attempt_{YYYY-MM-DD-HH-MM-SS}_{file}` beside
  `{assignment}_{login}_attempt_{…}.txt` (`Name: Maria Garcia (garciamaria)`, `Date Submitted: …`).
- Brightspace (D2L) ("Download all submissions"):
  `{id}-{id} - {Last First} - {Mon D, YYYY HMM AM}/{file}`, with an `index.html`; a folder
  whose date is written otherwise (another language's) is named as unreadable, not skipped.
- nbgrader: a `submitted/<student>/<assignment>/<notebook>.ipynb` tree with `timestamp.txt`.
- Student id first: `{student}_{…}` (nbgrader zip_collect's extracted files, hand-made exports).

Times a platform writes without a zone (Blackboard's, D2L's) are returned as such: the
collector chooses the zone.
"""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

from grader.lms.archive import Entry, Export

NOTEBOOK = ".ipynb"


@dataclass(frozen=True)
class Claim:
    """What a file's name, and the platform's record beside it, say about the file."""

    original: str  # the file's name as the student uploaded it
    seems: str  # the student as the export names them, for messages
    ids: tuple[str, ...] = ()  # may be the course's id, a login, a SIS id or an email
    lms_id: str = ""  # the platform's own user id
    names: tuple[str, ...] = ()  # full names, first-last or last-first
    squashed: str = ""  # Canvas's form of the sortable name: `garciamaria`
    hints: tuple[str, ...] = ()  # other parts of the path, which may name the lesson
    lesson: str = ""  # the assignment, where the layout names it outright
    time: datetime | None = None  # the platform's record of the submission time (UTC)
    local_time: datetime | None = None  # the platform's record, in its server's zone
    zone: tzinfo | None = None  # the zone of local_time, where the record states it
    zone_name: str = ""
    time_source: str = ""  # where time or local_time come from
    time_problem: str = ""  # why the platform's record of the time could not be read
    lateness: str = ""  # "on time" or "late": the platform's verdict where it gives no time
    remark: str = ""  # what the platform says besides ("Canvas marked it late")
    order: int = 0  # the platform's order of two copies of one file (higher: later)
    whole_id: bool = False  # ids are whole folder names or groups, `_` and all (nbgrader's)
    numbers: tuple[str, ...] = ()  # numbers that may be the student's on the platform, or not
    submitter: str = ""  # the platform's number for who submitted, within this assignment


BY_HAND = "place the file by hand in submitted/<student>/<lesson>/"
PATTERN_HELP = (
    "give --pattern with a group that identifies the student ((?P<student_id>…), or"
    " (?P<lms_id>…) where the roster has the platform's user ids)"
)


class Layout:
    """How one platform names its files."""

    name = ""
    signature = ""  # how its names look, for messages
    tell_apart = f"{PATTERN_HELP}, or {BY_HAND}"  # what to do when two students match a file

    def fits(self, entry: Entry, export: Export) -> bool:
        """Whether `entry` is named as this platform names files (for detecting the layout)."""
        raise NotImplementedError

    def record(self, entry: Entry) -> str:
        """What `entry` is, if it is a record of the platform read beside the submissions."""
        return ""

    def claim(self, entry: Entry, export: Export) -> "Claim | str":
        """What `entry`'s name says, or why it is not named as this layout names files."""
        raise NotImplementedError

    def _unfit(self) -> str:
        return f"not named as {self.name} names files ({self.signature})"


def _parts_before_and_after(parts: tuple[str, ...], index: int) -> tuple[str, ...]:
    return parts[:index] + parts[index + 1 : -1]


CANVAS_ON_TIME = "on time by Canvas's record; Canvas's download holds no submission time"
CANVAS_LATE = (
    "Canvas marked it late; its download holds no submission time, so the download's time is"
    " used: check the lateness"
)


class Canvas(Layout):
    name = "Canvas"
    signature = "name_late_userid_submissionid_file"
    tell_apart = (
        "the file's Canvas user id is on no roster entry: give the course Canvas's user ids"
        f" (its gradebook export: grader init --roster), or {BY_HAND}"
    )
    FILE = re.compile(
        r"^(?P<name>[^\W_]*?)(?P<late>_late)?_(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$",
        re.IGNORECASE,
    )
    AGAIN = re.compile(r"-(?P<n>\d+)(?P<ext>\.[^.]+)$")  # file-1.ipynb: uploaded again

    def fits(self, entry, export):
        return bool(self.FILE.match(entry.name))

    def claim(self, entry, export):
        found = self.FILE.match(entry.name)
        if not found:
            return self._unfit()
        name, user = found["name"], found["user"]
        again = self.AGAIN.search(found["file"])
        original = found["file"][: again.start()] + again["ext"] if again else found["file"]
        return Claim(
            original=original,
            seems=name or f"Canvas user {user}",
            lms_id=user,
            squashed=name,
            submitter=user,
            hints=entry.parts[:-1],
            lateness="late" if found["late"] else "on time",
            remark=CANVAS_LATE if found["late"] else CANVAS_ON_TIME,
            order=int(found["submission"]) * 1000 + (int(again["n"]) if again else 0),
        )


class Moodle(Layout):
    name = "Moodle"
    signature = "Full Name_participantid_assignsubmission_file_/file"
    tell_apart = (
        "Moodle's number in the name is the assignment's participant number, on no roster:"
        " collect again with --worksheet and the assignment's grading worksheet (View all"
        f" submissions > Grading action > Download grading worksheet), or {BY_HAND}"
    )
    PART = re.compile(
        r"^(?P<name>.+?)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)(?:_(?P<rest>.*))?$"
    )

    def _find(self, entry):
        for index, part in enumerate(entry.parts):
            found = self.PART.match(part)
            if found:
                return index, found
        return None

    def fits(self, entry, export):
        return self._find(entry) is not None

    def claim(self, entry, export):
        at = self._find(entry)
        if at is None:
            return self._unfit()
        index, found = at
        if found["plugin"] == "onlinetext":
            return "Moodle's online text (HTML typed into Moodle), not an uploaded notebook"
        if found["plugin"] != "file":
            return f"Moodle's {found['plugin']} submission, not an uploaded file"
        last = index == len(entry.parts) - 1
        original = (found["rest"] or "") if last else entry.name
        return Claim(
            original=original,
            seems=found["name"],
            names=(found["name"],),
            hints=_parts_before_and_after(entry.parts, index),
            submitter=found["participant"],
        )


class Blackboard(Layout):
    name = "Blackboard"
    signature = "Assignment_login_attempt_YYYY-MM-DD-HH-MM-SS_file, with a .txt record"
    FILE = re.compile(
        r"^(?P<head>.+)_attempt_(?P<stamp>\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d)"
        r"(?:_(?P<file>.+)|(?P<ext>\.[^._]+))$"
    )
    NAME = re.compile(r"^\s*Name:\s*(?P<name>.*?)\s*\((?P<login>[^()]*)\)\s*$", re.MULTILINE)
    DATE = re.compile(r"^\s*Date Submitted:\s*(?P<date>.+?)\s*$", re.MULTILINE)

    def fits(self, entry, export):
        return bool(self.FILE.match(entry.name))

    def record(self, entry):
        found = self.FILE.match(entry.name)
        if found and found["ext"] and found["ext"].lower() == ".txt":
            return "Blackboard's record of the attempt"
        return ""

    def claim(self, entry, export):
        found = self.FILE.match(entry.name)
        if not found:
            return self._unfit()
        head, stamp = found["head"], found["stamp"]
        folder = f"{entry.folder}/" if entry.folder else ""
        text = export.text(f"{folder}{head}_attempt_{stamp}.txt") or ""
        named = self.NAME.search(text)
        name, login = (named["name"], named["login"].strip()) if named else ("", "")
        if login and head.endswith(f"_{login}"):
            assignment = head[: -len(login) - 1]
        else:
            assignment, _, login = head.rpartition("_")
        dated = self.DATE.search(text)
        zone, zone_name = zone_named(dated["date"].split()[-1]) if dated else (None, "")
        return Claim(
            original=found["file"] or found["ext"],
            seems=name or login,
            ids=(login,),
            names=(name,) if name else (),
            hints=(assignment,) + entry.parts[:-1],
            local_time=datetime.strptime(stamp, "%Y-%m-%d-%H-%M-%S"),
            zone=zone,
            zone_name=zone_name,
            time_source="Blackboard's attempt time in the file's name",
        )


_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {month: number for number, month in enumerate(_MONTH_NAMES, start=1)}
_D2L_WHEN = r"(?P<when>[A-Za-z]{3,9}\.? \d{1,2}, \d{4} \d{1,2}:?\d{2} ?[AaPp]\.?[Mm]\.?)"


def d2l_time(text: str) -> datetime | None:
    """The time in a Brightspace folder's name: `Oct 5, 2026 820 PM` (no colon), or None."""
    found = re.fullmatch(
        r"(?P<mon>[A-Za-z]{3})[A-Za-z]*\.? (?P<day>\d{1,2}), (?P<year>\d{4}) "
        r"(?P<hour>\d{1,2}):?(?P<minute>\d{2}) ?(?P<half>[AaPp])\.?[Mm]\.?",
        text,
    )
    if not found or found["mon"].lower() not in _MONTHS or not 1 <= int(found["hour"]) <= 12:
        return None
    hour = int(found["hour"]) % 12 + (12 if found["half"].lower() == "p" else 0)
    try:
        return datetime(
            int(found["year"]), _MONTHS[found["mon"].lower()], int(found["day"]), hour,
            int(found["minute"]),
        )  # fmt: skip
    except ValueError:
        return None


class Brightspace(Layout):
    name = "Brightspace (D2L)"
    signature = "id-id - Last First - Mon D, YYYY HMM AM/file"
    tell_apart = (
        "neither number in the folder's name is a roster entry's: give the course Brightspace's"
        f" ids (its grades export, with OrgDefinedId: grader init --roster), or {BY_HAND}"
    )
    FOLDER = re.compile(rf"^(?P<ids>\d+-\d+) - (?P<name>.+?) - {_D2L_WHEN}$")
    FLAT = re.compile(rf"^(?P<ids>\d+-\d+) - (?P<name>.+?) - {_D2L_WHEN} - (?P<file>.+)$")
    # the same, with a date written otherwise (`5 oct. 2026 21 h 05`): named, not read
    _ANY_WHEN = r"(?P<when>(?:(?! - ).)*\d(?:(?! - ).)*)"
    ANY_FOLDER = re.compile(rf"^(?P<ids>\d+-\d+) - (?P<name>.+?) - {_ANY_WHEN}$")
    ANY_FLAT = re.compile(rf"^(?P<ids>\d+-\d+) - (?P<name>.+?) - {_ANY_WHEN} - (?P<file>.+)$")

    def _find(self, entry):
        for folder, flat in ((self.FOLDER, self.FLAT), (self.ANY_FOLDER, self.ANY_FLAT)):
            for index, part in enumerate(entry.parts[:-1]):
                found = folder.match(part)
                if found:
                    return index, found, entry.name
            found = flat.match(entry.name)
            if found:
                return len(entry.parts) - 1, found, found["file"]
        return None

    def fits(self, entry, export):
        return self._find(entry) is not None or bool(self.record(entry))

    def record(self, entry):
        return "Brightspace's index of the download" if entry.name == "index.html" else ""

    def claim(self, entry, export):
        at = self._find(entry)
        if at is None:
            return self._unfit()
        index, found, original = at
        when = d2l_time(found["when"])
        thing = "folder" if index < len(entry.parts) - 1 else "file"
        where = f"{thing}'s name"
        problem = "" if when else (
            f"the submission date in its {where} ({found['when']!r}) could not be read"
            " (Brightspace's English form is 'Oct 5, 2026 820 PM'): give --pattern with a"
            f" (?P<timestamp>…) group in a form it reads, or rename the {thing} to that form"
        )  # fmt: skip
        return Claim(
            original=original,
            seems=found["name"],
            names=(found["name"],),
            numbers=tuple(found["ids"].split("-")),
            submitter=found["ids"],
            hints=_parts_before_and_after(entry.parts, index),
            local_time=when,
            time_source=f"Brightspace's submission time in the {where}",
            time_problem=problem,
        )


class NbgraderTree(Layout):
    name = "nbgrader's submitted/ folder"
    signature = "submitted/<student>/<assignment>/<notebook>.ipynb with timestamp.txt"
    STAMP = "timestamp.txt"

    def fits(self, entry, export):
        parts = entry.parts
        if len(parts) < 3:
            return False
        beside = f"{entry.folder}/{self.STAMP}"
        return (
            parts[-1] == self.STAMP
            or export.has(beside)
            or (len(parts) >= 4 and parts[-4] == "submitted")
        )

    def record(self, entry):
        if entry.name == self.STAMP and len(entry.parts) >= 3:
            return f"nbgrader's timestamp of {'/'.join(entry.parts[-3:-1])}"
        return ""

    def claim(self, entry, export):
        from nbgrader.utils import parse_utc

        from grader.compat import UTC

        parts = entry.parts
        if len(parts) < 3:
            return f"not in a <student>/<assignment>/ folder ({self.signature})"
        student, assignment = parts[-3], parts[-2]
        stamp = export.text(f"{entry.folder}/{self.STAMP}")
        time, source = None, ""
        if stamp is not None:
            try:
                time, source = parse_utc(stamp.strip()).replace(tzinfo=UTC), "nbgrader's timestamp"
            except (ValueError, OverflowError):
                source = "its timestamp.txt is not a time"
        return Claim(
            original=entry.name,
            seems=student,
            ids=(student,),
            lesson=assignment,
            hints=parts[:-3],
            time=time,
            time_source=source,
            whole_id=True,
        )


class StudentFirst(Layout):
    name = "student id first"
    signature = "student_lesson.ipynb, as nbgrader zip_collect's extracted files"

    def fits(self, entry, export):
        return True

    def claim(self, entry, export):
        stem, dot, ext = entry.name.rpartition(".")
        stem, ext = (stem, dot + ext) if dot and stem else (entry.name, "")
        student, _, rest = stem.partition("_")
        return Claim(
            original=rest + ext if rest else ext,
            seems=student,
            ids=(student,),
            hints=entry.parts[:-1],
        )


class Pattern(Layout):
    """A regular expression with named groups, as nbgrader's FileNameCollectorPlugin takes
    (`student_id`, `file_id`, optional `timestamp`, `first_name`, `last_name`, `email`), plus
    `student`, `lesson` or `assignment`, `notebook`, `login` and `lms_id`. It is matched at the
    start of the path inside the export, else of the file's name."""

    name = "--pattern"
    WHO = ("student_id", "student", "login", "email", "lms_id", "last_name")

    def __init__(self, pattern: str):
        try:
            self.regex = re.compile(pattern)
        except re.error as error:
            raise ValueError(
                f"--pattern {pattern!r} is not a regular expression: {error}"
            ) from None
        if not set(self.WHO) & set(self.regex.groupindex):
            raise ValueError(
                f"--pattern {pattern!r} has no group naming the student: give (?P<student_id>…)"
            )
        self.signature = f"the pattern {pattern}"

    def fits(self, entry, export):
        return True

    def claim(self, entry, export):
        found = self.regex.match(entry.path) or self.regex.match(entry.name)
        if not found:
            return f"does not match {self.signature}"
        got = {key: (value or "").strip() for key, value in found.groupdict().items()}
        ids = tuple(got[k] for k in ("student_id", "student", "login", "email") if got.get(k))
        full = " ".join(part for part in (got.get("first_name"), got.get("last_name")) if part)
        names = tuple(name for name in (full, got.get("student")) if name)  # `student`: either
        file = got.get("notebook") or got.get("file_id") or entry.name
        file = file.rpartition("/")[2]
        if not file.lower().endswith(NOTEBOOK) and entry.name.lower().endswith(NOTEBOOK):
            file += NOTEBOOK
        time = local = None
        if got.get("timestamp"):
            when = parse_time(got["timestamp"])
            if when is None:
                return f"its timestamp {got['timestamp']!r} is not a time"
            time, local = (when, None) if when.tzinfo else (None, when)
        return Claim(
            original=file,
            seems=full or (ids[0] if ids else got.get("lms_id", "")),
            ids=ids,
            lms_id=got.get("lms_id", ""),
            names=names,
            hints=entry.parts[:-1],
            lesson=got.get("lesson") or got.get("assignment") or "",
            time=time,
            local_time=local,
            time_source="the time in the file's name (--pattern)",
            whole_id=True,
        )


def parse_time(text: str) -> datetime | None:
    """A time as platforms write it in names: `2026-10-05-20-15-00` (Blackboard, nbgrader's
    docs) or anything dateutil reads (`2026-10-05 20:15:00 UTC`); with a zone if it states one."""
    from dateutil import parser

    try:
        return datetime.strptime(text, "%Y-%m-%d-%H-%M-%S")
    except ValueError:
        pass
    if d2l_time(text.strip()):  # `Oct 5, 2026 420 PM`: Brightspace's, which dateutil misreads
        return d2l_time(text.strip())

    def zone(name: str | None, offset: int | None) -> tzinfo | None:
        if name:
            return zone_named(name)[0]
        return None if offset is None else timezone(timedelta(seconds=offset))

    try:
        return parser.parse(text, tzinfos=zone)
    except (ValueError, OverflowError):
        return None


# Zone abbreviations that name one offset only (CST, IST, BST name several: not guessed).
_ABBREVIATIONS = {
    "UTC": 0, "UCT": 0, "GMT": 0, "Z": 0, "WET": 0, "WEST": 1, "CET": 1, "CEST": 2, "EET": 2,
    "EEST": 3, "MSK": 3, "EST": -5, "EDT": -4, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8,
    "PDT": -7, "AKST": -9, "AKDT": -8, "HST": -10, "JST": 9, "KST": 9, "AEST": 10, "AEDT": 11,
    "ACST": 9.5, "ACDT": 10.5, "AWST": 8, "NZST": 12, "NZDT": 13, "SGT": 8, "HKT": 8,
}  # fmt: skip


def zone_named(text: str) -> tuple[tzinfo | None, str]:
    """The zone a record names (`CEST`, `UTC+2`, `GMT+02:00`, `+0200`) and its name, or
    (None, "") if it names none or an ambiguous one."""
    text = (text or "").strip()
    if text.upper() in _ABBREVIATIONS:
        hours = _ABBREVIATIONS[text.upper()]
        return timezone(timedelta(hours=hours), text.upper()), text.upper()
    found = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?", text, re.IGNORECASE)
    if found and int(found[2]) <= 14:
        sign = -1 if found[1] == "-" else 1
        offset = timedelta(hours=int(found[2]), minutes=int(found[3] or 0))
        return timezone(sign * offset), text
    return None, ""


PLATFORMS: list[Layout] = [NbgraderTree(), Brightspace(), Moodle(), Blackboard(), Canvas()]


def detect(export: Export) -> tuple[Layout, str]:
    """The layout most of the export's files are named in (ties: the more particular layout,
    in the order of PLATFORMS), and the evidence for it; `StudentFirst` if none fits any."""
    usable = [entry for entry in export.entries if not entry.problem]
    if not usable:
        return StudentFirst(), f"the {export.kind} holds no file to collect"
    counts = [sum(layout.fits(entry, export) for entry in usable) for layout in PLATFORMS]
    best = max(range(len(PLATFORMS)), key=lambda i: (counts[i], -i))
    if counts[best] == 0:
        names = ", ".join(layout.name for layout in PLATFORMS)
        return StudentFirst(), f"no file is named as {names} name them: the student id comes first"
    layout = PLATFORMS[best]
    return layout, f"{counts[best]} of {len(usable)} files named as {layout.name} names them"
