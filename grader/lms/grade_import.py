"""Grades as the platforms' gradebook imports take them: Canvas, Moodle, Blackboard Learn's
Grade Center upload and Brightspace's (D2L) grades import, each a CSV.

The files have a row for every student of the class (`class_list`: the roster, then anyone in
the gradebook who is not on it) and a column per lesson, holding the lesson's score after the
late penalty, as `grader export` computes it (`grade_rows`). A student with no submission, or
with a submission that could not be graded, has 0, as in nbgrader's own export: a blank cell
would leave whatever the platform held. Why is written beside the file, in `<name>-notes.csv`
(`notes_for`): one line per student and lesson that was not simply graded (no submission,
malformed, missing notebook, timed out, …, with the detail), or has answer cells to review, and
one per student the file could not hold. The platforms' imports read every column they do not
know as an assignment (Canvas) or ask for a mapping of it (Moodle), so the reasons are not in
the import file itself.

A grade that is not final (grader/grading/finality.py: not graded yet, graded from an older
file, its late penalty to be computed again, points awaiting a manual grade, lateness estimated)
is never sent as one. Canvas's import leaves a blank cell as it was, so its cell is blank;
Moodle's import clears a grade given as a blank cell, and Blackboard's and Brightspace's do not
document what a blank cell does, so in theirs the student's row is left out. Either way a line
of the notes says who, which lesson and why (outcome `not final`).

A lesson's column names the platform's assignment (`lesson_columns`): the one whose id the
instructor gives (`columns`: lesson -> Canvas assignment id, Blackboard Grade Center column id
or Brightspace grade item name), else the one of the platform's own grade export (`known`: its
column headers, which carry the ids) titled with the lesson's words, else the lesson id, which
the platform takes for a new assignment (the notes say so).

Lessons: those named, else every lesson someone submitted (a lesson nobody has handed in yet
would put a column of zeros in the platform's gradebook).
"""

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from grader.course import Course
from grader.lms.roster import Student, class_list, load_canvas_columns, read_csv
from grader.safe_output.text import csv_safe

NO_SUBMISSION = "no submission"  # grade_rows' outcome when the gradebook holds none
NOT_FINAL = "not final"  # the notes' outcome for a grade not sent
NOTES_COLUMNS = ["student", "name", "lesson", "score", "outcome", "detail", "review"]

CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS_ROW = "Points Possible"

# Moodle's "Identify user by" fields, named as its import screen names them.
MOODLE_IDENTIFIERS = {"email": "Email address", "username": "Username", "idnumber": "ID number"}
MOODLE_NEW_ITEM_MAXIMUM = 100.0  # a new grade item's maximum grade, unless the site raised it
MOODLE_BLANK = "Moodle clears a grade given as a blank cell"

# Blackboard Learn, Grade Center → Work Offline → Upload: students by Username; a column by the
# id after `|` in its header, else a new text column worth 0 points.
BLACKBOARD_STUDENT_COLUMNS = ["Last Name", "First Name", "Username", "Student ID"]
BLACKBOARD_BLANK = "Blackboard does not document what a blank cell does to a grade it holds"
# Brightspace, Grades → Import: students by OrgDefinedId or Username (`#` before each, as its
# export writes them: Brightspace removes it, and a spreadsheet keeps leading zeros); a column
# per grade item, `<name> Points Grade`; each row ends with the End-of-Line Indicator `#`.
BRIGHTSPACE_STUDENT_COLUMNS = ["OrgDefinedId", "Username"]
BRIGHTSPACE_END = ("End-of-Line Indicator", "#")
BRIGHTSPACE_BLANK = "Brightspace does not document what a blank cell does to a grade it holds"


@dataclass(frozen=True)
class Grades:
    """The scores to import: lessons (columns), their maximum, and each student's row."""

    lessons: list[str]
    maximum: dict[str, float]
    score: dict[tuple[str, str], float]  # (student id, lesson) -> score after the late penalty
    notes: list[dict]  # NOTES_COLUMNS
    not_final: dict[tuple[str, str], str]  # (student id, lesson) -> why its grade is not final

    def cell(self, student: str, lesson: str) -> str:
        """The score to import (blank where the grade is not final)."""
        if (student, lesson) in self.not_final:
            return ""
        return points(self.score.get((student, lesson), 0.0))


def canvas_import(
    course: Course,
    to: Path,
    lessons: list[str] | None = None,
    columns: dict[str, str] | None = None,
    known: list[str] | None = None,
) -> Path:
    """Write the CSV Canvas's Grades > Import takes, and its notes; the CSV's path.

    Columns: Student ("Last, First"), ID (the Canvas user id, the roster's lms_id), SIS User ID,
    SIS Login ID (the roster's login; for a student whose roster line has no platform id, the
    course's student id), Section, then one column per lesson named with the lesson id, so
    Canvas matches an assignment of that name or makes a new one; where the roster came from
    Canvas's gradebook export and that had one column for the lesson (`canvas_column`:
    `03_backward_and_scalar_outputs (1001)`), the column is named as there, so Canvas updates
    that assignment. A "Points Possible" row under the header, as in Canvas's own export, gives
    a new assignment its points. Canvas finds each student by ID, else SIS User ID, else SIS
    Login ID, else by name. `columns` (lesson -> Canvas assignment id) names the assignment
    to update, as `{title} ({id})`; `known`: the headers of a Canvas gradebook export (default:
    those kept from the roster's).
    """
    students = class_list(course)
    grades = class_grades(course, students, lessons)
    if known is None:
        known = load_canvas_columns(course.root)
    headers, column_notes = lesson_columns("canvas", grades, known, columns or {})
    notes = grades.notes + column_notes
    rows = [
        [CANVAS_POINTS_ROW, "", "", "", ""] + [points(grades.maximum[x]) for x in grades.lessons]
    ]
    for student in students:
        plain = not (student.lms_id or student.sis_id or student.login)
        identity = [
            sortable_name(student),
            student.lms_id,
            student.sis_id,
            student.login or (student.id if plain else ""),
            student.section,
        ]
        rows.append(identity + [grades.cell(student.id, x) for x in grades.lessons])
    _write(to, CANVAS_STUDENT_COLUMNS + headers, rows)
    _write_notes(to, notes)
    return Path(to)


# Each platform's assignment column: how its grade export writes the title and id, how an
# import file names an assignment by id, and what it calls the id.
@dataclass(frozen=True)
class ColumnForm:
    platform: str
    titled: re.Pattern  # a grade export's header: the title, and the id where it has one
    header: str  # an import's header for (title, id)
    new: str  # the header for a new assignment titled like the lesson
    what: str  # what the platform calls the id given with --column
    hint: str  # where the instructor finds it
    metavar: str
    digits: bool  # whether that id is a number


COLUMN_FORMS = {
    "canvas": ColumnForm(
        "Canvas",
        re.compile(r"(?P<title>.*) \((?P<id>\d+)\)"),  # "Lesson 3 (1001)"
        "{title} ({id})",
        "{title}",
        "assignment id",
        "the number in brackets in its gradebook export's header",
        "ID",
        True,
    ),
    "blackboard": ColumnForm(
        "Blackboard",
        # "Lesson 3 [Total Pts: 10 Score] |1234": the column id after the bar
        re.compile(r"(?P<title>.*?)(?: \[Total Pts:[^\]]*\])? ?\|(?P<id>\d+)"),
        "{title} |{id}",
        "{title}",
        "Grade Center column id",
        "the number after '|' in its Grade Center download's header",
        "ID",
        True,
    ),
    "brightspace": ColumnForm(
        "Brightspace",
        # "Lesson 3 Points Grade <Numeric MaxPoints:10 …>": items are known by name
        re.compile(r"(?P<id>(?P<title>.*)) Points Grade(?: <[^>]*>)?"),
        "{title} Points Grade",
        "{title} Points Grade",
        "grade item name",
        "as its Grades page shows it",
        "NAME",
        False,
    ),
}


def lesson_columns(
    platform: str, grades: "Grades", known: list[str], given: dict[str, str]
) -> tuple[list[str], list[dict]]:
    """The import's header for each lesson of `grades` on `platform`, and notes on those that
    will make a new assignment or could name several: the one of `known` (the platform's
    grade export's headers) with the id `given` for the lesson, else the one of `known` titled
    with the lesson's words, else a new assignment named with the lesson id."""
    form = COLUMN_FORMS[platform]
    unknown = sorted(set(given) - set(grades.lessons))
    if unknown:
        raise ValueError(
            f"--column {unknown[0]}=…: {unknown[0]} is not a lesson of this export"
            f" (its lessons: {', '.join(grades.lessons)}; name it with --lesson)"
        )
    headers, notes = [], []
    for lesson in grades.lessons:
        if lesson in given:
            headers.append(_given_column(form, lesson, given[lesson], known))
            continue
        same = columns_titled(form, lesson, known)
        headers.append(same[0] if len(same) == 1 else form.new.format(title=lesson))
        where = f"--column {lesson}={form.metavar} ({form.hint})"
        if known and not same:
            detail = (
                f"no assignment of {form.platform}'s export is titled like {lesson}:"
                f" {form.platform} will make a new one named {lesson}; to update yours, give"
                f" its {form.what} with {where}"
            )
            notes.append({"lesson": lesson, "outcome": "column", "detail": detail})
        elif not known and form.digits and platform != "canvas":
            detail = (
                f"no {form.platform} {form.what} for {lesson}: {form.platform}"
                " will add a new text column worth 0 points; to update yours, give its id"
                f" with {where} or the Grade Center download with --gradebook"
            )
            notes.append({"lesson": lesson, "outcome": "column", "detail": detail})
        if len(same) > 1:
            detail = (
                f"{form.platform}'s export had {len(same)} assignments of this name"
                f" ({', '.join(same)}): the column is named {lesson}; give the one meant"
                f" with {where}"
            )
            notes.append({"lesson": lesson, "outcome": "column", "detail": detail})
    return headers, notes


def _given_column(form: ColumnForm, lesson: str, given: str, known: list[str]) -> str:
    """The header naming the assignment whose id (or Brightspace name) is `given`: the one of
    `known` with it, else `form.header` made of the lesson id and it."""
    given = given.strip()
    if form.digits and not given.isdigit():
        raise ValueError(
            f"--column {lesson}={given}: a {form.platform} {form.what} is a number ({form.hint})"
        )
    if not given:
        raise ValueError(f"--column {lesson}=: give the {form.platform} {form.what}")
    for header in known:
        m = form.titled.fullmatch(header)
        if m and (m["id"] == given if form.digits else _words(m["id"]) == _words(given)):
            return header if form.digits else form.header.format(title=m["title"])
    return form.header.format(title=lesson if form.digits else given, id=given)


def columns_titled(form: ColumnForm, lesson: str, known: list[str]) -> list[str]:
    """The headers of `known` that name `lesson`'s assignment, titled with the lesson id's
    words (`03 Backward and scalar outputs`: the same words, whatever the case and
    punctuation), as an import names them."""
    found = [form.titled.fullmatch(header) for header in known]
    return [
        m[0] if form.digits else form.header.format(title=m["title"])
        for m in found
        if m and _words(m["title"]) == _words(lesson)
    ]


def canvas_column(lesson: str, known: list[str]) -> str:
    """The column for `lesson` in a Canvas import: the one header of `known` (a Canvas export's
    assignment headers) titled like the lesson with Canvas's id in brackets
    (`03_backward_and_scalar_outputs (1001)`), else the lesson id."""
    found = columns_titled(COLUMN_FORMS["canvas"], lesson, known)
    return found[0] if len(found) == 1 else lesson


def parse_columns(specs: list[str] | None) -> dict[str, str]:
    """`--column LESSON=ID` options as {lesson: id}; one without `=`, or a lesson twice, is
    refused."""
    found: dict[str, str] = {}
    for spec in specs or []:
        lesson, equals, given = spec.partition("=")
        if not equals or not lesson.strip():
            raise ValueError(f"--column {spec}: write LESSON=ID (the platform's id for it)")
        if lesson.strip() in found:
            raise ValueError(f"--column {lesson.strip()}: given twice")
        found[lesson.strip()] = given.strip()
    return found


def gradebook_headers(path: Path) -> list[str]:
    """The column headers of a platform's grade export (`--gradebook`), read as rosters are."""
    return read_csv(Path(path), ValueError).header


def _words(text: str) -> str:
    """`text`'s words, lower case, one space apart (`03_Backward-and` -> `03 backward and`)."""
    return " ".join(re.sub(r"[\W_]+", " ", text.casefold()).split())


def moodle_import(
    course: Course, to: Path, lessons: list[str] | None = None, match_on: str = "auto"
) -> Path:
    """Write the CSV Moodle's Grades > Import > CSV file takes, and its notes; the CSV's path.

    Columns: one identifier, then First name and Last name, then one column per lesson named
    with the lesson id. The identifier is `match_on`: "email" (Email address, the roster's
    email), "username" (Username: the roster's login, or for a student whose roster line has
    no platform id, the course's student id) or "idnumber" (ID number: the roster's sis_id);
    "auto" takes the first of these that every student has.

    In Moodle's import screen: "Identify user by" Map from = the first column, Map to = the
    field of the same name (Email address, Username or ID number); "Grade item mappings": each
    lesson column to "New grade item" (the first time) or to the lesson's grade item, and
    First name and Last name to "Ignore".

    A student without the identifier is left out of the file and listed in the notes: Moodle
    skips a blank identifier and gives the row's grades to the student of the row above.
    A new grade item's maximum is 100 unless the site allows more; a lesson worth more is
    noted (make its grade item first).
    """
    students = class_list(course)
    grades = class_grades(course, students, lessons)
    field = _moodle_field(students, match_on)
    notes = list(grades.notes)
    why_missing = f"no {MOODLE_IDENTIFIERS[field]} on the roster, which Moodle finds students by"
    identified = _identified(
        students, grades, lambda s: moodle_identifier(s, field), why_missing, MOODLE_BLANK
    )
    rows = []
    for student, key, scores in identified.rows:
        rows.append([key, student.first_name, student.last_name] + scores)
    notes += identified.notes
    for lesson in grades.lessons:
        if grades.maximum[lesson] > MOODLE_NEW_ITEM_MAXIMUM:
            detail = (
                f"worth {points(grades.maximum[lesson])}: a new Moodle grade item is out of 100"
            )
            notes.append({"lesson": lesson, "outcome": "maximum", "detail": detail})
    header = [MOODLE_IDENTIFIERS[field], "First name", "Last name"] + grades.lessons
    _write(to, header, rows)
    _write_notes(to, notes)
    return Path(to)


def blackboard_import(
    course: Course,
    to: Path,
    lessons: list[str] | None = None,
    columns: dict[str, str] | None = None,
    known: list[str] | None = None,
) -> Path:
    """Write the CSV Blackboard Learn's Grade Center upload takes (Work Offline > Upload), and
    its notes; the CSV's path.

    Columns: Last Name, First Name, Username (the roster's login, or for a student whose
    roster line has no platform id, the course's student id: Blackboard finds students by it),
    Student ID (the roster's sis_id), then one per lesson, every cell quoted as Blackboard
    asks of a comma-separated file. A lesson's column is the Grade Center column whose id
    `columns` gives (lesson -> column id), else the one of `known` (the headers of the Grade
    Center download, Work Offline > Download) titled like the lesson; else it is named with the
    lesson id and Blackboard adds a text column worth 0 points (the notes say so). A student
    with no Username, or with a grade that is not final, is left out and noted.
    """
    students = class_list(course)
    grades = class_grades(course, students, lessons)
    headers, column_notes = lesson_columns("blackboard", grades, known or [], columns or {})
    why_missing = "no Username on the roster, which Blackboard finds students by"
    identified = _identified(students, grades, _username, why_missing, BLACKBOARD_BLANK)
    rows = [
        [student.last_name, student.first_name, key, student.sis_id] + scores
        for student, key, scores in identified.rows
    ]
    _write(to, BLACKBOARD_STUDENT_COLUMNS + headers, rows, csv.QUOTE_ALL)
    _write_notes(to, grades.notes + column_notes + identified.notes)
    return Path(to)


def brightspace_import(
    course: Course,
    to: Path,
    lessons: list[str] | None = None,
    columns: dict[str, str] | None = None,
    known: list[str] | None = None,
) -> Path:
    """Write the CSV Brightspace's grades import takes (Grades > Enter Grades > Import), and its
    notes; the CSV's path.

    Columns: OrgDefinedId (the roster's sis_id) and Username (the roster's login, or for a
    student whose roster line has no platform id, the course's student id), each written with
    `#` before it as Brightspace's export writes them; then `<item> Points Grade` per lesson;
    then `End-of-Line Indicator`, `#` on every row. A lesson's item is the one whose name
    `columns` gives (lesson -> grade item name), else the one of `known` (the headers of
    Brightspace's grades export) named like the lesson, else one named with the lesson id,
    which the import offers to create. A student with neither id, or with a grade that is not
    final, is left out and noted.
    """
    students = class_list(course)
    grades = class_grades(course, students, lessons)
    headers, column_notes = lesson_columns("brightspace", grades, known or [], columns or {})
    why_missing = "no OrgDefinedId or Username on the roster, which Brightspace finds students by"
    identified = _identified(
        students, grades, lambda s: s.sis_id or _username(s), why_missing, BRIGHTSPACE_BLANK
    )
    rows = [
        [_hashed(student.sis_id), _hashed(_username(student)), *scores, BRIGHTSPACE_END[1]]
        for student, _, scores in identified.rows
    ]
    header = BRIGHTSPACE_STUDENT_COLUMNS + headers + [BRIGHTSPACE_END[0]]
    _write(to, header, rows)
    _write_notes(to, grades.notes + column_notes + identified.notes)
    return Path(to)


def _hashed(platform_id: str) -> str:
    return f"#{platform_id}" if platform_id else ""


def _username(student: Student) -> str:
    """The platform's username: the roster's login, or the course's id for a student whose
    roster line has no platform id (a plain roster's)."""
    plain = not (student.lms_id or student.sis_id or student.login)
    return student.login or (student.id if plain else "")


@dataclass(frozen=True)
class _Identified:
    rows: list[tuple[Student, str, list[str]]]  # (student, identifier, scores)
    notes: list[dict]


def _identified(students, grades: "Grades", identify, why_missing: str, blank: str):
    """The rows of an import that finds students by `identify(student)`: those without it, and
    those with a grade that is not final (`blank`: why a blank cell will not do), are left out
    and noted."""
    rows, notes = [], []
    for student in students:
        key = identify(student)
        if not key:
            notes.append(_note(student, "", "", "left out", why_missing))
            continue
        pending = [x for x in grades.lessons if (student.id, x) in grades.not_final]
        if pending:
            why = (
                f"{', '.join(pending)} not final (see their lines), and {blank}: export the"
                " other lessons with --lesson, or wait"
            )
            notes.append(_note(student, "", "", "left out", why))
            continue
        rows.append((student, key, [grades.cell(student.id, x) for x in grades.lessons]))
    return _Identified(rows, notes)


def notes_for(import_file: Path) -> Path:
    """The notes written beside an import file: `grades.csv` -> `grades-notes.csv`."""
    import_file = Path(import_file)
    return import_file.with_name(f"{import_file.stem}-notes.csv")


def moodle_identifier(student: Student, field: str) -> str:
    """The student's value for Moodle's identifier `field` (email, username or idnumber)."""
    if field == "email":
        return student.email
    if field == "idnumber":
        return student.sis_id
    return _username(student)


def _moodle_field(students: list[Student], match_on: str) -> str:
    if match_on in MOODLE_IDENTIFIERS:
        return match_on
    if match_on != "auto":
        known = ", ".join(["auto", *MOODLE_IDENTIFIERS])
        raise ValueError(f"no Moodle identifier {match_on!r} (known: {known})")
    for field in MOODLE_IDENTIFIERS:
        if all(moodle_identifier(student, field) for student in students):
            return field
    return max(
        MOODLE_IDENTIFIERS, key=lambda f: sum(bool(moodle_identifier(s, f)) for s in students)
    )


def class_grades(
    course: Course, students: list[Student], lessons: list[str] | None = None
) -> Grades:
    """Each score per student and lesson (after the late penalty), and the notes on those that
    were not simply graded; `students`: the class (`class_list`)."""
    from grader.commands.export import grade_rows

    _, rows = grade_rows(course)
    if lessons is None:
        submitted = {row["assignment"] for row in rows if row["outcome"] != NO_SUBMISSION}
        lessons = [lesson for lesson in course.lessons if lesson in submitted]
        lessons += sorted(submitted - set(lessons))
    else:
        course.known(lessons)
    maximum = {lesson: 0.0 for lesson in lessons}
    score, notes, seen, not_final = {}, [], set(), {}
    by_id = {student.id: student for student in students}
    for row in rows:
        lesson, sid = row["assignment"], row["student_id"]
        if lesson not in maximum:
            continue
        maximum[lesson] = float(row["max_score"] or 0.0)
        seen.add((sid, lesson))
        student = by_id.get(sid, Student(sid, row["first_name"], row["last_name"]))
        if row["final"] != "yes":
            not_final[(sid, lesson)] = row["why_not_final"]
            notes.append(_note(student, lesson, "", NOT_FINAL, row["why_not_final"]))
            continue
        score[(sid, lesson)] = float(row["score"] or 0.0)
        outcome, review = str(row["outcome"]), row.get("review", "")
        penalty = float(row.get("late_submission_penalty") or 0.0)
        if outcome != "graded" or review or penalty:
            shown = points(score[(sid, lesson)])
            detail = row["detail"]
            if penalty:
                raw = points(float(row["raw_score"] or 0.0))
                late = f"late penalty {points(penalty)} off the raw score {raw}"
                detail = f"{late}; {detail}" if detail else late
            notes.append(_note(student, lesson, shown, outcome, detail, review))
    for student in students:  # on the roster, never entered in the gradebook
        for lesson in lessons:
            if (student.id, lesson) not in seen:
                notes.append(_note(student, lesson, "0", NO_SUBMISSION, "not in the gradebook"))
    if any(not value for value in maximum.values()):  # a lesson no student of the gradebook has
        with course.api().gradebook as gb:
            for assignment in gb.assignments:
                if assignment.name in maximum:
                    maximum[assignment.name] = float(assignment.max_score or 0.0)
    return Grades(lessons, maximum, score, notes, not_final)


def sortable_name(student: Student) -> str:
    """ "Last, First", as Canvas sorts and matches names (one of them alone, else the id)."""
    if student.last_name and student.first_name:
        return f"{student.last_name}, {student.first_name}"
    return student.last_name or student.first_name or student.id


def points(value: float) -> str:
    """A score as the platforms read it: at most two decimals, no trailing zeros."""
    text = f"{round(float(value), 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _note(
    student: Student, lesson: str, score: str, outcome: str, detail: str = "", review: str = ""
) -> dict:
    return {
        "student": student.id,
        "name": student.full_name,
        "lesson": lesson,
        "score": score,
        "outcome": outcome,
        "detail": detail,
        "review": review,
    }


def _write_notes(import_file: Path, notes: list[dict]) -> None:
    rows = [[note.get(column, "") for column in NOTES_COLUMNS] for note in notes]
    _write(notes_for(import_file), NOTES_COLUMNS, rows)


def _write(to: Path, header: list[str], rows: list[list], quoting=csv.QUOTE_MINIMAL) -> None:
    to = Path(to)
    to.parent.mkdir(parents=True, exist_ok=True)
    with open(to, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, quoting=quoting)
        writer.writerow([csv_safe(cell) for cell in header])
        writer.writerows([[csv_safe(cell) for cell in row] for row in rows])
