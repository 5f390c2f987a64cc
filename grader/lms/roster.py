"""The course's roster: who the students are, and how each platform knows them.

`grader init --roster` reads a plain CSV or a platform's own export (`read_roster`) and keeps
the students in the course folder (`roster.csv`, written by `save_roster`) and in the gradebook.
Collecting matches files to students through it; exporting grades writes the platform's columns
from it.

The forms read, told apart by their columns:

- a Canvas gradebook export (Grades → Export): `Student` ("Last, First") or `LastName` and
  `FirstName`, and `ID`; then, where the person who exported it may see them, `SIS User ID`
  and `SIS Login ID`; `Section` and the assignments. The "Points Possible" row under the
  header, and the "Manual Posting" row Canvas adds above it, are skipped. The id is the first
  of `SIS Login ID`, `SIS User ID` and `ID` that the export fills in for a student: the login
  is what students and platforms' submission files are named by, the numeric `ID` the last
  resort; every id comes from that one column. `ID` is always the Canvas user id (lms_id).
  Canvas's test student ("Student, Test" or "Test Student") is a student like the others when
  its row has an id in that column; Canvas gives it no SIS ids, so where the ids are SIS ids it
  is left out, and `Roster.notes` says so (a real student with a blank id is an error). The
  assignment columns' headers (`03_backward_and_scalar_outputs (1001)`: Canvas's name, then its
  id) are kept (`Roster.canvas_columns`, saved beside the roster by `save_roster`) so that the
  grades exported for Canvas update those assignments rather than make new ones;
- a Moodle participants download (Participants → select all → "Download table data as" CSV):
  `First name`, `Last name` and the site's identity fields (`Email address`, and where shown
  `Username`, `ID number`); also `Groups`, read as the section, where a file has it; with no
  `id` column. The id is the `Username`, else the `ID number`, else the part of the
  `Email address` before the `@`. A download from a site in French, German or Spanish reads
  the same (`Prénom;Nom;Adresse de courriel`, `Vorname;Nachname;E-Mail-Adresse`,
  `Nombre;Apellido(s);Dirección de correo`, … : `MOODLE_HEADERS`);
- plain: an `id` column, and any of first_name, last_name, email, lms_id, sis_id, login,
  section (column names in any case, spaces for underscores).

`--id-column COLUMN` (`id_column`) names the column that gives the ids instead, in any form.
Files may start with a byte-order mark and may be separated by semicolons or tabs (as Canvas
and Excel write for some languages); empty rows at the end of the file (Excel writes `,,,`) are
ignored. Anything that cannot become a course's student list is refused with the file, the line
and what to do: a blank row between students, a blank or repeated id, two ids that differ only
in case (collect matches ids without case, and macOS and Windows keep them in one folder), an
id that is not a possible folder name.
"""

import codecs
import csv
import io
import json
import re
import unicodedata
from dataclasses import dataclass, fields
from pathlib import Path

ROSTER_FILE = "roster.csv"  # in the course folder
CANVAS_COLUMNS_FILE = "canvas_columns.json"  # beside it: the Canvas export's assignment headers
PLATFORM_FILE = "roster_platform.txt"  # beside it: the platform whose export the roster was
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads such a cell as a formula
ID_LENGTH = 128  # nbgrader's gradebook keeps at most this many characters of a student id
GLOB_CHARACTERS = "*?["  # nbgrader finds submissions with glob patterns made of the ids
DELIMITERS = ",;\t"


class RosterError(ValueError):
    """A roster that cannot be read: the message names the file, the line and the problem."""


@dataclass(frozen=True)
class Student:
    """One student: the course's id (nbgrader's student id) and what the platforms call them."""

    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_id: str = ""  # the platform's own user id (Canvas "ID", Moodle's user id)
    sis_id: str = ""  # Canvas "SIS User ID", Moodle "ID number"
    login: str = ""  # Canvas "SIS Login ID", Moodle "Username"
    section: str = ""

    @property
    def full_name(self) -> str:
        """First and last name, as platforms print them ("" if neither is known)."""
        return " ".join(part for part in (self.first_name, self.last_name) if part)


COLUMNS = [field.name for field in fields(Student)]


class Roster(list):
    """The students of a roster file, in its order (a list of Student), and what else the file
    said: `notes`, lines about rows left out (for the person who gave the file), and
    `canvas_columns`, a Canvas export's assignment headers (`"Lesson 3 (1001)"`), and
    `platform`, the platform whose export it is."""

    def __init__(self, students=(), notes=(), canvas_columns=(), platform=""):
        super().__init__(students)
        self.notes = list(notes)
        self.canvas_columns = list(canvas_columns)
        self.platform = platform  # the platform whose export it is ("" for a plain roster)


@dataclass(frozen=True)
class CsvTable:
    """A CSV file as read: its header and its rows, every cell trimmed, each row with the line
    it starts on."""

    path: Path
    header: list[str]
    rows: list[tuple[int, list[str]]]
    header_line: int = 1

    def has(self, column: str) -> bool:
        """Whether the header has `column`."""
        return column in self.header

    def cell(self, cells: list[str], column: str) -> str:
        """A row's cell in `column` ("" where the header has no such column or the row ends
        before it)."""
        if column not in self.header:
            return ""
        at = self.header.index(column)
        return cells[at] if at < len(cells) else ""

    def where(self, line: int) -> str:
        """The file and line, as every message about the file starts."""
        return f"{self.path}, line {line}"

    def columns(self) -> str:
        """The header's columns, quoted, for messages: `'id', 'name'`."""
        return ", ".join(repr(column) for column in self.header)


def read_csv(path: Path, error: type[ValueError] = RosterError) -> CsvTable:
    """The CSV file at `path` as platforms and spreadsheets write it: UTF-8 with or without a
    byte-order mark (or UTF-16 with one, as Blackboard writes its downloads), separated by
    commas, semicolons or tabs (whichever splits the header most); empty rows after the last one
    with something in it are dropped. A file that cannot be read, is not UTF-8, is empty or is
    not CSV raises `error`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as problem:
        raise error(f"{path}: cannot read it ({problem.strerror or problem})") from None
    # Blackboard's Grade Center download (.xls) is UTF-16 text with a byte-order mark, tabbed
    utf16 = data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
    try:
        text = data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as problem:
        line = data.count(b"\n", 0, problem.start) + 1
        raise error(
            f"{path}, line {line}: not UTF-8 text: save it as CSV UTF-8 (comma-separated)"
        ) from None
    if not text.strip():
        raise error(f"{path}, line 1: the file is empty: it needs a header row, then a row each")
    first_line = text.splitlines()[0]
    delimiter = max(DELIMITERS, key=lambda d: len(next(csv.reader([first_line], delimiter=d))))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows, line = [], 1
    try:
        for cells in reader:
            rows.append((line, [cell.strip() for cell in cells]))
            line = reader.line_num + 1
    except csv.Error as problem:
        raise error(f"{path}, line {line}: not CSV ({problem})") from None
    while not any(rows[0][1]):  # blank lines above the header; the file has a non-blank one
        rows.pop(0)
    while not any(rows[-1][1]):  # and below the last row (`,,,` as Excel writes them)
        rows.pop()
    (header_line, header), rows = rows[0], rows[1:]
    return CsvTable(path, header, rows, header_line)


def read_roster(path: Path, id_column: str | None = None) -> Roster:
    """The students in the roster at `path`, a plain CSV or a Canvas or Moodle export (see the
    module's docstring), in the file's order; `id_column` names the column that holds the ids.
    Raises RosterError, naming the file and line, for anything that cannot be a class list."""
    table = read_csv(Path(path))
    form = _form_of(table)
    rows = [(line, cells) for line, cells in table.rows if not form.skips(table, cells)]
    tests = [line for line, cells in rows if form.is_test_student(table, cells)]
    students_rows = [(line, cells) for line, cells in rows if line not in tests]
    column = _id_column(table, form, students_rows, id_column)
    roster = Roster(canvas_columns=form.assignment_columns(table), platform=form.platform)
    seen: dict[str, tuple[int, str]] = {}
    for line, cells in rows:
        if not any(cells):
            raise RosterError(f"{table.where(line)}: blank row: delete it")
        student_id = table.cell(cells, column).removeprefix(form.prefix)
        if column == form.columns.get("Email") and form.platform.startswith("Brightspace"):
            student_id = student_id.partition("@")[0].strip()
        if column == form.columns.get(MOODLE_EMAIL) and id_column is None:
            student_id = student_id.partition("@")[0].strip()
        if not student_id and line in tests:
            roster.notes.append(
                f"{table.where(line)}: Canvas's test student left out: it has no {column!r},"
                " which gives the others' ids"
            )
            continue
        if not student_id:
            raise RosterError(
                f"{table.where(line)}: no student id (column {column!r} is blank): fill it"
                " in, delete the row, or name another column with --id-column"
            )
        problem = id_problem(student_id)
        if problem:
            raise RosterError(f"{table.where(line)}: student id {student_id!r} {problem}")
        key = _folded(student_id)
        if key in seen:
            other_line, other = seen[key]
            if other == student_id:
                raise RosterError(
                    f"{table.where(line)}: student id {student_id!r} is also on line"
                    f" {other_line}: each student once"
                )
            how = "case" if student_id.casefold() == other.casefold() else "case or accents' form"
            raise RosterError(
                f"{table.where(line)}: student id {student_id!r} and {other!r} on line"
                f" {other_line} differ only in {how}: collect matches ids without case, and"
                " macOS and Windows keep them in one folder: give each student an id of"
                " their own"
            )
        seen[key] = (line, student_id)
        roster.append(Student(student_id, **form.details(table, cells)))
    return roster


def _folded(student_id: str) -> str:
    """An id as case-insensitive matching and file systems compare it."""
    return unicodedata.normalize("NFC", student_id).casefold()


def id_problem(student_id: str) -> str | None:
    """What makes `student_id` unusable as nbgrader's student id (a folder name, a part of
    glob patterns, a gradebook key), or None."""
    if student_id in (".", ".."):
        return "is not a folder name"
    if len(student_id) > ID_LENGTH:
        return f"is longer than the {ID_LENGTH} characters the gradebook keeps"
    for character in student_id:
        if unicodedata.category(character) in ("Cc", "Cf"):
            return f"has a control or invisible character (U+{ord(character):04X})"
        if character.isspace():
            return "has a space in it: ids become folder names and file name prefixes"
        if character in "/\\":
            return f"has {character!r}, which separates folders in a path"
        if character in GLOB_CHARACTERS:
            return f"has {character!r}, which nbgrader reads as a file name pattern"
    return None


def save_roster(
    course_root: Path, students: list[Student], canvas_columns: list[str] | None = None
) -> Path:
    """Write the course's roster, `roster.csv` in `course_root`, with COLUMNS; its path.
    `canvas_columns` (default: those of `students`, a Roster read from a Canvas export) are
    kept beside it in `canvas_columns.json`, which is removed when there are none."""
    course_root = Path(course_root)
    path = course_root / ROSTER_FILE
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for student in students:
            writer.writerow([_inert(getattr(student, column)) for column in COLUMNS])
    platform = getattr(students, "platform", "")
    if platform:
        (course_root / PLATFORM_FILE).write_text(platform + "\n", encoding="utf-8")
    else:
        (course_root / PLATFORM_FILE).unlink(missing_ok=True)
    if canvas_columns is None:
        canvas_columns = getattr(students, "canvas_columns", [])
    kept = course_root / CANVAS_COLUMNS_FILE
    if canvas_columns:
        kept.write_text(json.dumps(list(canvas_columns), indent=1) + "\n", encoding="utf-8")
    else:
        kept.unlink(missing_ok=True)
    return path


def _inert(cell: str) -> str:
    """`cell` as a spreadsheet shows it, never runs it: one that starts like a formula
    (`=HYPERLINK(…)`, `+1`, `@SUM`) gets a `'` before it, which `load_roster` removes."""
    return f"'{cell}" if cell.startswith(FORMULA_STARTS) else cell


def _as_written(cell: str) -> str:
    """`cell` as it was before `_inert`."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS) else cell


def load_roster(course_root: Path) -> list[Student]:
    """The course's students as `grader init --roster` saved them ([] if it was given none)."""
    path = Path(course_root) / ROSTER_FILE
    if not path.is_file():
        return []
    return [
        Student(**{column: _as_written(getattr(student, column)) for column in COLUMNS})
        for student in read_roster(path)
    ]


def load_roster_platform(course_root: Path) -> str:
    """The platform whose export the course's roster was ("" for a plain one, or none)."""
    try:
        return (Path(course_root) / PLATFORM_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def load_canvas_columns(course_root: Path) -> list[str]:
    """The assignment headers of the Canvas export the course's roster came from ([] if it
    came from none, or the file is unreadable)."""
    try:
        found = json.loads((Path(course_root) / CANVAS_COLUMNS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(header) for header in found] if isinstance(found, list) else []


# The forms: how each finds its students' details, and which rows are not students.

CANVAS_IDS = ("SIS Login ID", "SIS User ID", "ID")  # the first filled in gives the ids
CANVAS_FIELDS = {"lms_id": "ID", "sis_id": "SIS User ID", "login": "SIS Login ID"}
CANVAS_ASSIGNMENT = re.compile(r".+ \((\d+)\)")  # "Lesson 3 (1001)": a name, then the id
CANVAS_TEST_STUDENT = {("test", "student"), ("", "test student")}  # (first, last), casefolded
MOODLE_IDS = ("Username", "ID number", "Email address")
MOODLE_EMAIL = "Email address"
MOODLE_FIELDS = {
    "first_name": "First name",
    "last_name": "Last name",
    "email": MOODLE_EMAIL,
    "sis_id": "ID number",
    "login": "Username",
    "section": "Groups",
}
# Moodle's column names in English (as Moodle writes them), French, German and Spanish.
MOODLE_HEADERS = {
    "First name": ("First name", "Prénom", "Vorname", "Nombre"),
    "Last name": ("Last name", "Nom", "Nom de famille", "Nachname", "Apellido(s)", "Apellidos"),
    MOODLE_EMAIL: (
        MOODLE_EMAIL,
        "Adresse de courriel",
        "Adresse courriel",
        "Adresse e-mail",
        "E-Mail-Adresse",
        "E-Mail",
        "Dirección de correo",
        "Dirección de correo electrónico",
        "Dirección Email",
        "Correo electrónico",
    ),
    "Username": ("Username", "Nom d'utilisateur", "Anmeldename", "Nombre de usuario"),
    "ID number": ("ID number", "Numéro d'identification", "ID-Nummer", "Número de ID"),
    "Groups": ("Groups", "Groupes", "Gruppen", "Grupos"),
}


def header_key(column: str) -> str:
    """A column name compared loosely: case, accents' form, curly apostrophes and runs of spaces
    do not count."""
    text = unicodedata.normalize("NFC", column).replace("\u2019", "'").casefold()
    return " ".join(text.split())


_MOODLE_NAMES = {
    header_key(name): english for english, names in MOODLE_HEADERS.items() for name in names
}


def moodle_columns(table: CsvTable) -> dict[str, str]:
    """Moodle's columns in `table`, in any of the languages of MOODLE_HEADERS: English name ->
    the file's own (the first of each)."""
    found: dict[str, str] = {}
    for column in table.header:
        english = _MOODLE_NAMES.get(header_key(column))
        if english:
            found.setdefault(english, column)
    return found


def _plain_name(column: str) -> str:
    return "_".join(column.lower().replace("_", " ").split())


@dataclass(frozen=True)
class _Form:
    name: str
    id_columns: tuple[str, ...]  # in the order of preference, as the form names them
    columns: dict  # the form's name for a column that may give the ids -> the file's
    fields: dict  # a Student field (but the id) -> the file's column that gives it
    platform: str = ""  # the platform whose export it is, as collect names its layouts
    prefix: str = ""  # what the platform writes before ids (Brightspace's `#`)

    @property
    def canvas(self) -> bool:
        return self.name == CANVAS_NAME

    def skips(self, table: CsvTable, cells: list[str]) -> bool:
        """Whether the row is not a student (Canvas's points-possible and posting rows)."""
        if not self.canvas:
            return False
        name = _canvas_name(table, cells)
        if name == ("", "Points Possible"):
            return True
        blank = not any(name) and not table.cell(cells, "ID")
        return blank and any(cell.startswith("Manual Posting") for cell in cells)

    def is_test_student(self, table: CsvTable, cells: list[str]) -> bool:
        """Whether the row is Canvas's test student."""
        if not self.canvas:
            return False
        return tuple(part.casefold() for part in _canvas_name(table, cells)) in CANVAS_TEST_STUDENT

    def assignment_columns(self, table: CsvTable) -> list[str]:
        """A Canvas export's assignment headers, with Canvas's ids; [] for other forms."""
        if not self.canvas:
            return []
        return [column for column in table.header if CANVAS_ASSIGNMENT.fullmatch(column)]

    def details(self, table: CsvTable, cells: list[str]) -> dict[str, str]:
        """Everything but the id, from one student's row."""
        found = {field: table.cell(cells, column) for field, column in self.fields.items()}
        for field in ("sis_id", "login", "lms_id"):
            if self.prefix and field in found:
                found[field] = found[field].removeprefix(self.prefix)
        if self.canvas:
            found["first_name"], found["last_name"] = _canvas_name(table, cells)
        return found


def _canvas_name(table: CsvTable, cells: list[str]) -> tuple[str, str]:
    """(first, last) from Canvas's "Last, First" `Student`, or its FirstName and LastName; a
    name with no comma is taken as the last name."""
    if table.has("Student"):
        last, _, first = table.cell(cells, "Student").partition(",")
        return first.strip(), last.strip()
    return table.cell(cells, "FirstName"), table.cell(cells, "LastName")


CANVAS_NAME = "Canvas gradebook export"
MOODLE_NAME = "Moodle participants download"
BRIGHTSPACE_NAME = "Brightspace grades export"
BLACKBOARD_NAME = "Blackboard Grade Center download"
# Brightspace (Grades → Export): `#` before each OrgDefinedId and Username, which it removes on
# import; Blackboard (Grade Center → Work Offline → Download).
BRIGHTSPACE_IDS = ("Username", "OrgDefinedId", "Email")
BRIGHTSPACE_FIELDS = {
    "first_name": "First Name",
    "last_name": "Last Name",
    "email": "Email",
    "sis_id": "OrgDefinedId",
    "login": "Username",
}
BLACKBOARD_IDS = ("Username", "Student ID")
BLACKBOARD_MARKS = ("Last Access", "Availability", "Student ID")  # besides Username
BLACKBOARD_FIELDS = {
    "first_name": "First Name",
    "last_name": "Last Name",
    "email": "Email",
    "sis_id": "Student ID",
    "login": "Username",
}


def _form_of(table: CsvTable) -> _Form:
    """Which form the file is, from its header."""
    canvas_name = table.has("Student") or (table.has("LastName") and table.has("FirstName"))
    if canvas_name and table.has("ID"):
        canvas_fields = CANVAS_FIELDS | {"section": "Section"}
        return _Form(CANVAS_NAME, CANVAS_IDS, {c: c for c in CANVAS_IDS}, canvas_fields, "Canvas")
    plain_id = next((c for c in table.header if _plain_name(c) == "id"), None)
    if table.has("OrgDefinedId") or table.has("End-of-Line Indicator"):
        columns = {column: column for column in BRIGHTSPACE_IDS if table.has(column)}
        found = {f: c for f, c in BRIGHTSPACE_FIELDS.items() if table.has(c)}
        return _Form(BRIGHTSPACE_NAME, BRIGHTSPACE_IDS, columns, found, "Brightspace (D2L)", "#")
    if table.has("Username") and any(table.has(c) for c in BLACKBOARD_MARKS):
        columns = {column: column for column in BLACKBOARD_IDS if table.has(column)}
        found = {f: c for f, c in BLACKBOARD_FIELDS.items() if table.has(c)}
        return _Form(BLACKBOARD_NAME, BLACKBOARD_IDS, columns, found, "Blackboard")
    moodle = moodle_columns(table)
    if not plain_id and "First name" in moodle and "Last name" in moodle:
        found = {field: moodle[name] for field, name in MOODLE_FIELDS.items() if name in moodle}
        return _Form(MOODLE_NAME, MOODLE_IDS, moodle, found, "Moodle")
    plain = {_plain_name(column): column for column in reversed(table.header)}
    found = {field: plain[field] for field in COLUMNS[1:] if field in plain}
    return _Form("roster", ("id",), {"id": plain_id} if plain_id else {}, found)


def _id_column(table: CsvTable, form: _Form, rows, id_column: str | None) -> str:
    """The column the ids are read from: `id_column`, else the form's first that is there
    and filled in for someone of `rows`."""
    header = table.where(table.header_line)
    found = table.columns()
    if id_column is not None:
        if id_column.strip() in table.header:
            return id_column.strip()
        raise RosterError(
            f"{header}: no column {id_column!r} (the columns are {found}):"
            " name one of them with --id-column"
        )
    present = [form.columns[column] for column in form.id_columns if column in form.columns]
    for column in present:
        if any(table.cell(cells, column) for _, cells in rows):
            return column
    if present:  # blank for everyone: each row says so
        return present[0]
    hint = ""
    if len(table.header) == 1 and any(d in table.header[0] for d in DELIMITERS + "|"):
        hint = " (is the file separated by something other than commas, semicolons or tabs?)"
    wanted = (
        f"a {form.name} has one of {', '.join(map(repr, form.id_columns))}"
        if form.name != "roster"
        else "a roster has an 'id' column, or is a Canvas gradebook export or a Moodle"
        " participants download (its columns in English, French, German or Spanish)"
    )
    raise RosterError(
        f"{header}: no column gives the students' ids (the columns are {found}{hint}): {wanted};"
        " or name the column that holds them with --id-column COLUMN"
    )


def class_list(course) -> list[Student]:
    """The class of `course` (a Course): the roster's students (roster.csv), then those in the
    gradebook that are not on it (all of them, for a course made without a roster), sorted as
    the platforms list students: by last name, first name, then id."""
    listed = load_roster(course.root)
    known = {student.id for student in listed}
    with course.api().gradebook as gb:
        others = [
            Student(
                id=s.id,
                first_name=s.first_name or "",
                last_name=s.last_name or "",
                email=s.email or "",
                lms_id=s.lms_user_id or "",
            )
            for s in gb.students
            if s.id not in known
        ]
    return sorted(
        listed + others, key=lambda s: (s.last_name.casefold(), s.first_name.casefold(), s.id)
    )
