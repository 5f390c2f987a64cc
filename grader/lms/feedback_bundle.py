"""A lesson's feedback pages in one zip, named as a platform's bulk feedback upload reads them.

Every student of the class gets a file: their pages (`feedback/<student>/<lesson>/*.html`,
written by `grader feedback`), or, where there is none, a short page saying why (no submission
was received, the notebook could not be read, …). The platforms find the student a file is for
by ids of their own that the course does not keep, so they are read from the platform's own
listing of the submissions (`ids_from`):

- Canvas, "Upload Submission Comments/Feedback Files" (Assignment > Submissions): each file is
  named as Canvas's "Download Submissions" names it, `{name}_{user id}_{attachment id}_{file}`.
  Canvas takes the first two all-digit parts of the name as the user id and the id of a file
  the student submitted, and ignores a file whose attachment is not part of that student's
  submission; the rest of the name is not read (the comment's file is shown under the
  submitted file's name). The user id and attachment id come from the submissions download
  (`ids_from`: the zip or its folder, as given to `grader collect`), the user id alone from
  the roster's lms_id. Without an attachment id the file is named `{name}_{user id}_{file}`
  and listed in `unmatched`: Canvas will ignore it. A student who submitted nothing on Canvas
  has no attachment to comment on.
- Moodle, "Upload multiple feedback files in a zip" (assignment > View all submissions): each
  file is in a folder `{Full Name}_{participant id}_assignsubmission_file_/`, as Moodle's
  "Download all submissions" makes them. The participant id is the assignment's own id for
  the student (the grading table's "Participant 123456"), not the Moodle user id: a user id
  taken for it could be another student's participant id and hand them the page, so it is
  read from Moodle's grading worksheet (`ids_from`: the CSV of "Download grading worksheet",
  which lists every participant, matched by email then full name) or from the submissions
  download (matched by full name); without either, `bundle` refuses to guess. The worksheet is
  read as rosters are (`roster.read_csv`: a byte-order mark, commas, semicolons or tabs, as
  Excel saves it), its columns named in English or as a French, German or Spanish site names
  them; one that is not UTF-8, or has no `Identifier` column, is refused with what to do.
"""

import html
import re
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path

from grader.course import Course
from grader.grading import outcomes
from grader.lms.archive import Export
from grader.lms.grade_import import sortable_name
from grader.lms.roster import (
    MOODLE_EMAIL,
    CsvTable,
    Student,
    class_list,
    header_key,
    moodle_columns,
    read_csv,
)
from grader.outcome import Outcome
from grader.safe_output.text import terminal_safe

PLATFORMS = ("canvas", "moodle")
MOODLE_FOLDER = "{name}_{participant}_assignsubmission_file_"
UNMATCHED_FOLDER = "unmatched"  # Moodle: files it cannot be told the student of
NO_SUBMISSION = "no submission was received"
NOT_GRADED = "your submission has not been graded yet"
NO_PAGE = "your submission was graded, but its feedback page could not be made: ask your teacher"


class BundleError(ValueError):
    """A bundle that cannot be made as asked: the message says what is missing."""


@dataclass(frozen=True)
class FeedbackBundle:
    """The zip written, who got a page saying why they have no feedback (student -> why), and
    whose files the platform will not match to them (student -> why)."""

    path: Path
    placeholders: dict[str, str]
    unmatched: dict[str, str]


def bundle(
    course: Course,
    lesson: str,
    platform: str,
    to: Path | None = None,
    ids_from: Path | None = None,
) -> FeedbackBundle:
    """Write the zip of `lesson`'s feedback for `platform` ("canvas" or "moodle") to `to`
    (default: `<course>/feedback-<lesson>-<platform>.zip`); `ids_from`: the platform's
    listing that holds its ids for the students (see the module's docstring)."""
    course.known([lesson])
    if platform not in PLATFORMS:
        raise BundleError(f"no platform {platform!r} (known: {', '.join(PLATFORMS)})")
    if platform == "moodle" and ids_from is None:
        raise BundleError(
            "Moodle matches feedback by its participant ids, which are not the Moodle user ids: "
            "give its grading worksheet (CSV) or its submissions download"
        )
    to = Path(to) if to else course.root / f"feedback-{lesson}-{platform}.zip"
    students = _students(course, lesson)
    files, placeholders = _files(course, lesson, students)
    if ids_from is not None:
        ids_from = Path(ids_from)
        if not ids_from.exists():
            raise FileNotFoundError(f"{ids_from}: no such file or folder")
    if platform == "canvas":
        ids = canvas_ids(ids_from, students, lesson, course.lessons) if ids_from else {}
        named, unmatched = _canvas_names(students, files, ids)
    else:
        named, unmatched = _moodle_names(students, files, moodle_ids(ids_from, students))
    to.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(to, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in named:
            archive.writestr(name, data)
    return FeedbackBundle(to, placeholders, unmatched)


def _students(course: Course, lesson: str) -> list[Student]:
    """The class, and anyone else with a submission of `lesson` or an outcome recorded for it."""
    students = class_list(course)
    known = {student.id for student in students}
    recorded = {sid for (name, sid) in outcomes.read_all(course.db_url) if name == lesson}
    others = sorted((set(course.submitted_students(lesson)) | recorded) - known)
    return students + [Student(sid) for sid in others]


def _files(course: Course, lesson: str, students: list[Student]):
    """Each student's files, [(file name, bytes)], and why those who have no page have none."""
    recorded = outcomes.read_all(course.db_url)
    submitted = set(course.submitted_students(lesson))
    files, placeholders, ran = {}, {}, False
    for student in students:
        folder = course.root / "feedback" / student.id / lesson
        pages = [folder / f"{name}.html" for name in course.notebooks(lesson)]
        pages = [page for page in pages if page.is_file()]
        if pages:
            files[student.id] = [(page.name, page.read_bytes()) for page in pages]
            continue
        why, has_run = _why_none(recorded.get((lesson, student.id)), student.id in submitted)
        ran = ran or has_run
        placeholders[student.id] = why
        files[student.id] = [(f"{lesson}.html", placeholder_page(lesson, student, why))]
    if len(placeholders) == len(students) and ran:
        raise BundleError(f"no feedback pages for {lesson}: run `grader feedback {lesson}` first")
    if len(placeholders) == len(students):
        raise BundleError(f"no feedback pages for {lesson}: nobody's submission was graded")
    return files, placeholders


def _why_none(recorded: tuple | None, submitted: bool) -> tuple[str, bool]:
    """What to tell a student who has no page, and whether their submission ran."""
    if recorded is None:
        return (NOT_GRADED if submitted else NO_SUBMISSION), False
    outcome, detail = recorded[0], recorded[1]
    if outcome == Outcome.MALFORMED:
        return "your notebook could not be read" + (f": {detail}" if detail else ""), False
    if outcome == Outcome.MISSING:
        found = f": {detail}" if detail else ""
        return f"no notebook for this lesson was found in your submission{found}", False
    if outcome == Outcome.NOT_GRADED:
        return NOT_GRADED, False
    return NO_PAGE, True


def placeholder_page(lesson: str, student: Student, why: str) -> bytes:
    """A plain page that says why there is no feedback page."""
    name = student.full_name or student.id

    def safe(text: str) -> str:
        return html.escape(terminal_safe(text))

    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head><meta charset="utf-8">'
        f"<title>Feedback: {safe(lesson)}</title></head>\n<body>\n"
        f"<h1>Feedback: {safe(lesson)}</h1>\n"
        f"<p>There is no feedback page for {safe(name)}: {safe(why)}.</p>\n"
        "</body>\n</html>\n"
    ).encode()


# Canvas


def canvas_squashed(student: Student) -> str:
    """The name part of Canvas's file names: "Last, First" with only its letters and digits,
    lower case; with a letter in front when it has none, so it never reads as an id."""
    squashed = re.sub(r"[\W_]", "", sortable_name(student)).lower()
    return squashed if any(char.isalpha() for char in squashed) else f"student{squashed}"


def canvas_ids(
    export: Path, students: list[Student], lesson: str, lessons: list[str]
) -> dict[str, tuple[str, str]]:
    """student id -> (Canvas user id, attachment id), from the names in Canvas's submissions
    download (`{name}[_late]_{user id}_{attachment id}_{file}`): by the roster's lms_id, else
    by the name part when one student alone has it. A file that names another of `lessons`
    and not `lesson` is skipped."""
    by_lms = {s.lms_id: s.id for s in students if s.lms_id}
    by_name: dict[str, list[str]] = {}
    for student in students:
        by_name.setdefault(canvas_squashed(student), []).append(student.id)
    found: dict[str, tuple[str, str]] = {}
    for name in sorted(_names(export)):
        named = [other for other in lessons if other in name]
        if named and lesson not in named:
            continue
        parts = [part for part in name.split("_") if part.lower() != "late"]
        digits = [part for part in parts if part.isdigit()]
        if parts[0] == "anon" or len(digits) < 2:
            continue
        user, attachment = digits[:2]
        same_name = by_name.get(parts[0], [])
        student = by_lms.get(user) or (same_name[0] if len(same_name) == 1 else None)
        if student is not None:
            found.setdefault(student, (user, attachment))
    return found


def _canvas_names(students, files, ids):
    named, unmatched, used = [], {}, set()
    for student in students:
        user, attachment = ids.get(student.id, (student.lms_id, ""))
        head = canvas_squashed(student)
        if not user:
            unmatched[student.id] = "no Canvas user id (roster lms_id or submissions download)"
        elif not attachment:
            unmatched[student.id] = (
                "no file of theirs in Canvas's submissions download: Canvas comments on a "
                "submitted file only"
            )
        prefix = "_".join(part for part in (head, user, attachment) if part)
        for file_name, data in files[student.id]:
            # The rest of the name is not read, but must hold no all-digit part.
            named.append((_unique(f"{prefix}_{file_name.replace('_', '-')}", used), data))
    return named, unmatched


# Moodle


def moodle_ids(source: Path, students: list[Student]) -> dict[str, str]:
    """student id -> Moodle participant id, from the grading worksheet (a CSV whose Identifier
    column reads "Participant 123456": matched by email, else full name) or the submissions
    download (folders or files `{Full Name}_{participant id}_assignsubmission_…`: matched by
    full name). A name two students share matches neither."""
    by_email = _unique_keys(students, lambda s: s.email.strip().casefold())
    by_name = _unique_keys(students, lambda s: _plain(s.full_name))
    found: dict[str, str] = {}
    if source.is_file() and source.suffix.lower() == ".csv":
        table = read_csv(source, BundleError)
        identifier, email, full_name = _worksheet_columns(table)
        for _, cells in table.rows:
            participant = re.search(r"(\d+)\s*$", table.cell(cells, identifier))
            by = table.cell(cells, email).casefold()
            student = by_email.get(by) or by_name.get(_plain(table.cell(cells, full_name)))
            if participant and student:
                found.setdefault(student, participant.group(1))
        return found
    for name in _names(source, full_paths=True):
        for part in name.split("/"):
            info = part.split("_", 4)
            if len(info) >= 4 and info[1].isdigit() and info[2].startswith("assign"):
                student = by_name.get(_plain(info[0]))
                if student:
                    found.setdefault(student, info[1])
    return found


# The grading worksheet's columns, in English and as French, German and Spanish sites name them.
WORKSHEET_IDENTIFIER = ("Identifier", "Identifiant", "ID", "Identificador")
WORKSHEET_FULL_NAME = ("Full name", "Nom complet", "Vollständiger Name", "Nombre completo")


def _worksheet_columns(table: CsvTable) -> tuple[str, str, str]:
    """The grading worksheet's Identifier, Email address and Full name columns, as `table`
    names them ("" for one it lacks); refused without Identifier or without both of the
    others, naming the file and the columns it has."""

    def named(names: tuple[str, ...]) -> str:
        keys = {header_key(name) for name in names}
        return next((column for column in table.header if header_key(column) in keys), "")

    identifier = named(WORKSHEET_IDENTIFIER)
    email = moodle_columns(table).get(MOODLE_EMAIL, "")
    full_name = named(WORKSHEET_FULL_NAME)
    where, found = table.where(table.header_line), table.columns()
    if not identifier:
        raise BundleError(
            f"{where}: no 'Identifier' column (the columns are {found}): give Moodle's grading"
            " worksheet (View all submissions > Grading action > Download grading worksheet)"
            " as it downloads, or rename the column of 'Participant 123456' to Identifier"
        )
    if not (email or full_name):
        raise BundleError(
            f"{where}: no 'Email address' or 'Full name' column to tell the students by (the"
            f" columns are {found}): give Moodle's grading worksheet as it downloads"
        )
    return identifier, email, full_name


def _moodle_names(students, files, ids):
    named, unmatched, used = [], {}, set()
    for student in students:
        participant = ids.get(student.id)
        if participant:
            full_name = re.sub(r"[_/\\\s]+", " ", student.full_name or student.id).strip()
            folder = MOODLE_FOLDER.format(name=full_name or "Participant", participant=participant)
        else:
            unmatched[student.id] = "no participant id for them in the Moodle listing given"
            folder = f"{UNMATCHED_FOLDER}/{re.sub(r'[_/]', '-', student.id)}"
        for file_name, data in files[student.id]:
            if not participant:  # no part of the path may read as Moodle's name_id_type_plugin
                file_name = file_name.replace("_", "-")
            named.append((_unique(f"{folder}/{file_name}", used), data))
    return named, unmatched


# Shared


def _names(source: Path, full_paths: bool = False) -> list[str]:
    """The file names in a platform's download, a folder or zip read as collect reads it: base
    names, or paths inside it."""
    try:
        with Export(source) as export:
            entries = [entry for entry in export.entries if not entry.problem]
    except ValueError:
        raise BundleError(f"{source}: not a folder, a zip archive or (Moodle) a CSV file") from None
    return [entry.path if full_paths else entry.name for entry in entries]


def _plain(name: str) -> str:
    """A name compared loosely: case, accents' form and runs of spaces do not count."""
    return " ".join(unicodedata.normalize("NFC", name).casefold().split())


def _unique_keys(students: list[Student], key) -> dict[str, str]:
    """key -> student id, for the keys exactly one student has (blank keys left out)."""
    owners: dict[str, list[str]] = {}
    for student in students:
        if key(student):
            owners.setdefault(key(student), []).append(student.id)
    return {k: ids[0] for k, ids in owners.items() if len(ids) == 1}


def _unique(name: str, used: set[str]) -> str:
    """`name`, or with -2, -3 … before its extension if it is taken already."""
    stem, dot, extension = name.rpartition(".")
    candidate, number = name, 2
    while candidate in used:
        candidate = f"{stem}-{number}{dot}{extension}" if dot else f"{name}-{number}"
        number += 1
    used.add(candidate)
    return candidate
