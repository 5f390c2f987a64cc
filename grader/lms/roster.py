"""The course's roster: who the students are, and how each platform knows them.

`grader init --roster` reads a plain CSV or a platform's own export (`read_roster`) and keeps
the students in the course folder (`roster.csv`, written by `save_roster`) and in the gradebook.
Collecting matches files to students through it; exporting grades writes the platform's columns
from it.

The forms read, told apart by their columns:

- plain: an `id` column, and any of first_name, last_name, email, lms_id, sis_id, login,
  section (column names in any case, spaces for underscores);
- a Canvas gradebook export (Grades → Export): `Student` ("Last, First") or `LastName` and
  `FirstName`, then `ID`, `SIS User ID`, `SIS Login ID`, `Section` and the assignments. The
  "Points Possible" row under the header, and the "Manual Posting" row Canvas adds above it,
  are skipped; Canvas's test student is a student like the others. The id is the first of
  `SIS Login ID`, `SIS User ID` and `ID` that the export fills in for anyone: the login is what
  students and platforms' submission files are named by, the numeric `ID` the last resort;
- a Moodle participants download (Participants → select all → "Download table data as" CSV):
  `First name`, `Last name` and the site's identity fields (`Email address`, and where shown
  `Username`, `ID number`); also `Groups`, read as the section, where a file has it. The id is
  the `Username`, else the `ID number`, else the part of the `Email address` before the `@`.

`--id-column COLUMN` (`id_column`) names the column that gives the ids instead, in any form.
Files may start with a byte-order mark and may be separated by semicolons or tabs (as Canvas
writes for some languages). Anything that cannot become a course's student list is refused
with the file, the line and what to do: a blank row, a blank or repeated id, an id that is not
a possible folder name.
"""

import csv
import io
import unicodedata
from dataclasses import dataclass, fields
from pathlib import Path

ROSTER_FILE = "roster.csv"  # in the course folder
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


def read_csv(path: Path, error: type[ValueError] = RosterError) -> CsvTable:
    """The CSV file at `path` as platforms and spreadsheets write it: UTF-8 with or without a
    byte-order mark, separated by commas, semicolons or tabs (whichever splits the header
    most). A file that cannot be read, is not UTF-8, is empty or is not CSV raises `error`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as problem:
        raise error(f"{path}: cannot read it ({problem.strerror or problem})") from None
    try:
        text = data.decode("utf-8-sig")
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
    (header_line, header), rows = rows[0], rows[1:]
    return CsvTable(path, header, rows, header_line)


def read_roster(path: Path, id_column: str | None = None) -> list[Student]:
    """The students in the roster at `path`, a plain CSV or a Canvas or Moodle export (see the
    module's docstring), in the file's order; `id_column` names the column that holds the ids.
    Raises RosterError, naming the file and line, for anything that cannot be a class list."""
    table = read_csv(Path(path))
    form = _form_of(table)
    rows = [(line, cells) for line, cells in table.rows if not form.skips(table, cells)]
    column = _id_column(table, form, rows, id_column)
    students, seen = [], {}
    for line, cells in rows:
        if not any(cells):
            raise RosterError(f"{table.where(line)}: blank row: delete it")
        student_id = table.cell(cells, column)
        if column == MOODLE_EMAIL and id_column is None:
            student_id = student_id.partition("@")[0].strip()
        if not student_id:
            raise RosterError(
                f"{table.where(line)}: no student id (column {column!r} is blank): fill it"
                " in, delete the row, or name another column with --id-column"
            )
        problem = id_problem(student_id)
        if problem:
            raise RosterError(f"{table.where(line)}: student id {student_id!r} {problem}")
        if student_id in seen:
            raise RosterError(
                f"{table.where(line)}: student id {student_id!r} is also on line"
                f" {seen[student_id]}: each student once"
            )
        seen[student_id] = line
        students.append(Student(student_id, **form.details(table, cells)))
    return students


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


def save_roster(course_root: Path, students: list[Student]) -> Path:
    """Write the course's roster, `roster.csv` in `course_root`, with COLUMNS; its path."""
    path = Path(course_root) / ROSTER_FILE
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for student in students:
            writer.writerow([getattr(student, column) for column in COLUMNS])
    return path


def load_roster(course_root: Path) -> list[Student]:
    """The course's students as `grader init --roster` saved them ([] if it was given none)."""
    path = Path(course_root) / ROSTER_FILE
    return read_roster(path) if path.is_file() else []


# The forms: how each finds its students' details, and which rows are not students.

CANVAS_IDS = ("SIS Login ID", "SIS User ID", "ID")  # the first filled in gives the ids
MOODLE_IDS = ("Username", "ID number", "Email address")
MOODLE_EMAIL = "Email address"


def _plain_name(column: str) -> str:
    return "_".join(column.lower().replace("_", " ").split())


@dataclass(frozen=True)
class _Form:
    name: str
    id_columns: tuple[str, ...]  # in the order of preference

    def skips(self, table: CsvTable, cells: list[str]) -> bool:
        """Whether the row is not a student (Canvas's points-possible and posting rows)."""
        if self.name != "Canvas gradebook export":
            return False
        name = _canvas_name(table, cells)
        if name == ("", "Points Possible"):
            return True
        blank = not any(name) and not table.cell(cells, "ID")
        return blank and any(cell.startswith("Manual Posting") for cell in cells)

    def details(self, table: CsvTable, cells: list[str]) -> dict[str, str]:
        """Everything but the id, from one student's row."""
        if self.name == "Canvas gradebook export":
            first, last = _canvas_name(table, cells)
            column = {"lms_id": "ID", "sis_id": "SIS User ID", "login": "SIS Login ID"}
            found = {field: table.cell(cells, name) for field, name in column.items()}
            return dict(
                first_name=first, last_name=last, section=table.cell(cells, "Section"), **found
            )
        if self.name == "Moodle participants download":
            column = {
                "first_name": "First name",
                "last_name": "Last name",
                "email": MOODLE_EMAIL,
                "sis_id": "ID number",
                "login": "Username",
                "section": "Groups",
            }
            return {field: table.cell(cells, name) for field, name in column.items()}
        plain = {_plain_name(column): column for column in reversed(table.header)}
        return {field: table.cell(cells, plain[field]) for field in COLUMNS[1:] if field in plain}


def _canvas_name(table: CsvTable, cells: list[str]) -> tuple[str, str]:
    """(first, last) from Canvas's "Last, First" `Student`, or its FirstName and LastName; a
    name with no comma is taken as the last name."""
    if table.has("Student"):
        last, _, first = table.cell(cells, "Student").partition(",")
        return first.strip(), last.strip()
    return table.cell(cells, "FirstName"), table.cell(cells, "LastName")


CANVAS = _Form("Canvas gradebook export", CANVAS_IDS)
MOODLE = _Form("Moodle participants download", MOODLE_IDS)


def _form_of(table: CsvTable) -> _Form:
    """Which form the file is, from its header."""
    canvas_name = table.has("Student") or (table.has("LastName") and table.has("FirstName"))
    if canvas_name and table.has("ID") and table.has("SIS Login ID"):
        return CANVAS
    if table.has("First name") and table.has("Last name"):
        return MOODLE
    plain_id = next((c for c in table.header if _plain_name(c) == "id"), None)
    return _Form("roster", (plain_id,) if plain_id else ())


def _id_column(table: CsvTable, form: _Form, rows, id_column: str | None) -> str:
    """The column the ids are read from: `id_column`, else the form's first that is there
    and filled in for someone."""
    header = table.where(table.header_line)
    found = ", ".join(repr(column) for column in table.header)
    if id_column is not None:
        if id_column.strip() in table.header:
            return id_column.strip()
        raise RosterError(
            f"{header}: no column {id_column!r} (the columns are {found}):"
            " name one of them with --id-column"
        )
    present = [column for column in form.id_columns if table.has(column)]
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
        if form.id_columns
        else "a roster has an 'id' column, or is a Canvas gradebook export or a Moodle"
        " participants download"
    )
    raise RosterError(
        f"{header}: no column gives the students' ids (the columns are {found}{hint}): {wanted};"
        " or name the column that holds them with --id-column COLUMN"
    )
