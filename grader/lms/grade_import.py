"""Grades as the platforms' gradebook imports take them: a Canvas CSV and a Moodle CSV.

Both files have a row for every student of the class (`class_list`: the roster, then anyone in
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
Moodle's import clears a grade given as a blank cell, so the student's row is left out. Either
way a line of the notes says who, which lesson and why (outcome `not final`).

Lessons: those named, else every lesson someone submitted (a lesson nobody has handed in yet
would put a column of zeros in the platform's gradebook).
"""

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from grader.course import Course
from grader.lms.roster import Student, class_list, load_canvas_columns
from grader.safe_output.text import csv_safe

NO_SUBMISSION = "no submission"  # grade_rows' outcome when the gradebook holds none
NOT_FINAL = "not final"  # the notes' outcome for a grade not sent
NOTES_COLUMNS = ["student", "name", "lesson", "score", "outcome", "detail", "review"]

CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS_ROW = "Points Possible"

# Moodle's "Identify user by" fields, named as its import screen names them.
MOODLE_IDENTIFIERS = {"email": "Email address", "username": "Username", "idnumber": "ID number"}
MOODLE_NEW_ITEM_MAXIMUM = 100.0  # a new grade item's maximum grade, unless the site raised it


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


def canvas_import(course: Course, to: Path, lessons: list[str] | None = None) -> Path:
    """Write the CSV Canvas's Grades > Import takes, and its notes; the CSV's path.

    Columns: Student ("Last, First"), ID (the Canvas user id, the roster's lms_id), SIS User ID,
    SIS Login ID (the roster's login; for a student whose roster line has no platform id, the
    course's student id), Section, then one column per lesson named with the lesson id, so
    Canvas matches an assignment of that name or makes a new one; where the roster came from
    Canvas's gradebook export and that had one column for the lesson (`canvas_column`:
    `03_backward_and_scalar_outputs (1001)`), the column is named as there, so Canvas updates
    that assignment. A "Points Possible" row under the header, as in Canvas's own export, gives
    a new assignment its points. Canvas finds each student by ID, else SIS User ID, else SIS
    Login ID, else by name.
    """
    students = class_list(course)
    grades = class_grades(course, students, lessons)
    known = load_canvas_columns(course.root)
    headers = [canvas_column(lesson, known) for lesson in grades.lessons]
    notes = list(grades.notes)
    for lesson in grades.lessons:
        same = canvas_columns_for(lesson, known)
        if known and not same:
            detail = (
                f"no assignment of the roster's Canvas export is titled like {lesson}: Canvas"
                f" will make a new one named {lesson}; to update yours, rename the column to its"
                " header in Canvas's export (title and id in brackets)"
            )
            notes.append({"lesson": lesson, "outcome": "column", "detail": detail})
        if len(same) > 1:
            detail = (
                f"Canvas's export had {len(same)} assignments of this name"
                f" ({', '.join(same)}): the column is named {lesson}; rename it to the one meant"
            )
            notes.append({"lesson": lesson, "outcome": "column", "detail": detail})
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


def canvas_column(lesson: str, known: list[str]) -> str:
    """The column for `lesson` in a Canvas import: the one header of `known` (a Canvas export's
    assignment headers) that is the lesson id followed by Canvas's id in brackets
    (`03_backward_and_scalar_outputs (1001)`), else the lesson id."""
    found = canvas_columns_for(lesson, known)
    return found[0] if len(found) == 1 else lesson


def canvas_columns_for(lesson: str, known: list[str]) -> list[str]:
    """The headers of `known` that name `lesson`'s assignment: `{title} ({digits})`, the title
    being the lesson id written as a person would title it (`03 Backward and scalar outputs`:
    the same words, whatever the case and punctuation)."""
    titled = re.compile(r"(?P<title>.*) \(\d+\)")
    found = [(header, titled.fullmatch(header)) for header in known]
    return [header for header, m in found if m and _words(m["title"]) == _words(lesson)]


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
    rows = []
    for student in students:
        key = moodle_identifier(student, field)
        if not key:
            why = f"no {MOODLE_IDENTIFIERS[field]} on the roster, which Moodle finds students by"
            notes.append(_note(student, "", "", "left out", why))
            continue
        pending = [x for x in grades.lessons if (student.id, x) in grades.not_final]
        if pending:
            why = (
                f"{', '.join(pending)} not final (see their lines), and Moodle clears a grade"
                " given as a blank cell: export the other lessons with --lesson, or wait"
            )
            notes.append(_note(student, "", "", "left out", why))
            continue
        scores = [grades.cell(student.id, x) for x in grades.lessons]
        rows.append([key, student.first_name, student.last_name] + scores)
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
    plain = not (student.lms_id or student.sis_id or student.login)
    return student.login or (student.id if plain else "")


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


def _write(to: Path, header: list[str], rows: list[list]) -> None:
    to = Path(to)
    to.parent.mkdir(parents=True, exist_ok=True)
    with open(to, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([csv_safe(cell) for cell in header])
        writer.writerows([[csv_safe(cell) for cell in row] for row in rows])
