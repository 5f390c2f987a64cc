"""Grades as Canvas's and Moodle's gradebook imports take them: every student of the class, the
score after the late penalty, and why a score is 0 written beside the file."""

import csv

import pytest

from grader.commands.init import init_course
from grader.course import NoSuchLesson
from grader.grading import outcomes
from grader.lms.grade_import import canvas_column, canvas_import, moodle_import, notes_for
from grader.lms.roster import CANVAS_COLUMNS_FILE, COLUMNS, ROSTER_FILE
from grader.outcome import Outcome

L1 = "01_tensors_and_requires_grad"  # 3 exercises, 6 points
L2 = "02_grad_fn_and_the_graph"  # 4 exercises, 9 points
MALFORMED = f"{L1}.ipynb is not JSON: JSONDecodeError"
ROSTER = [
    {
        "id": "cjones",
        "first_name": "Casey",
        "last_name": "Jones",
        "email": "casey@uni.example",
        "lms_id": "4101",
        "sis_id": "S-77",
        "login": "cjones",
        "section": "Lab A",
    },
    {"id": "pat", "first_name": "Pat", "last_name": "Lee"},  # a plain roster's line
    {"id": "nora", "first_name": "Nora", "last_name": "Body", "email": "nora@uni.example"},
]


def _grade(gb, lesson: str, student: str, scores: list[float], penalty: float = 0.0) -> None:
    """Enter a submission with these exercise scores, as a grading run leaves it."""
    notebook = gb.update_or_create_submission(lesson, student).notebooks[0]
    for grade, score in zip(sorted(notebook.grades, key=lambda g: g.name), scores, strict=True):
        grade.auto_score = score
        grade.needs_manual_grade = False  # as nbgrader's SaveAutoGrades leaves a scored cell
    notebook.late_submission_penalty = penalty
    gb.db.commit()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Casey (all Canvas ids, late), Pat (plain roster line, malformed), Nora (on the roster,
    nothing handed in, not in the gradebook) and Wally (in the gradebook, not on the roster)."""
    course = init_course(tmp_path_factory.mktemp("grade_import") / "c")
    with open(course.root / ROSTER_FILE, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(ROSTER)
    with course.api().gradebook as gb:
        for row in ROSTER[:2]:
            gb.update_or_create_student(
                row["id"], first_name=row["first_name"], last_name=row["last_name"]
            )
        gb.update_or_create_student("walkin", first_name="Wally", last_name="Kin")
        _grade(gb, L1, "cjones", [2, 2, 2], penalty=1.5)
        _grade(gb, L2, "cjones", [3, 2, 0, 0])
        _grade(gb, L1, "pat", [0, 0, 0])
        _grade(gb, L1, "walkin", [2, 0, 1])
    outcomes.record(course.db_url, L1, "pat", Outcome.MALFORMED, MALFORMED)
    return course


def _read(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _notes(path) -> dict[tuple[str, str], tuple[str, str]]:
    with open(notes_for(path), newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {(r["student"], r["lesson"]): (r["outcome"], r["detail"]) for r in rows}


# Every (student, lesson) that is not simply graded, and why; Casey has nothing to explain.
EXPECTED_NOTES = {
    ("nora", L1): ("no submission", "not in the gradebook"),
    ("nora", L2): ("no submission", "not in the gradebook"),
    ("pat", L1): ("malformed", MALFORMED),
    ("pat", L2): ("no submission", ""),
    ("walkin", L2): ("no submission", ""),
    ("cjones", L1): ("graded", "late penalty 1.5 off the raw score 6"),  # why 4.5, not 6
}


def test_canvas_file_has_every_student_with_the_late_penalty_applied(course, tmp_path):
    """Canvas's columns, its Points Possible row, a row per student (roster then gradebook),
    the lessons someone handed in: Casey's 6 points late by 1.5 are 4.5, the rest 0."""
    path = canvas_import(course, tmp_path / "canvas.csv")
    assert _read(path) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", L1, L2],
        ["Points Possible", "", "", "", "", "6", "9"],
        ["Body, Nora", "", "", "nora", "", "0", "0"],
        ["Jones, Casey", "4101", "S-77", "cjones", "Lab A", "4.5", "5"],
        ["Kin, Wally", "", "", "walkin", "", "3", "0"],
        ["Lee, Pat", "", "", "pat", "", "0", "0"],
    ]
    assert _notes(path) == EXPECTED_NOTES


def test_canvas_file_takes_the_lessons_named(course, tmp_path):
    """Only the lessons asked for are columns; an unknown one is refused."""
    rows = _read(canvas_import(course, tmp_path / "canvas.csv", lessons=[L2]))
    assert rows[0][5:] == [L2]
    assert [row[5] for row in rows[1:]] == ["9", "0", "5", "0", "0"]
    with pytest.raises(NoSuchLesson):
        canvas_import(course, tmp_path / "other.csv", lessons=["99_no_such_lesson"])


def test_canvas_file_names_a_lesson_column_as_the_roster_export_named_it(course, tmp_path):
    """A roster from Canvas's gradebook export had `L1 (1201)`: the import uses that header,
    so Canvas updates that assignment instead of making a second one named L1."""
    kept = course.root / CANVAS_COLUMNS_FILE
    kept.write_text(f'["{L1} (1201)", "{L2}x (1202)", "Other (1203)"]')
    try:
        path = canvas_import(course, tmp_path / "canvas.csv")
    finally:
        kept.unlink()
    assert _read(path)[0][5:] == [f"{L1} (1201)", L2]
    new_column = (
        f"no assignment of Canvas's export is titled like {L2}: Canvas will make a new one named"
        f" {L2}; to update yours, give its assignment id with --column {L2}=ID (the number in"
        " brackets in its gradebook export's header)"
    )
    assert _notes(path) == {**EXPECTED_NOTES, ("", L2): ("column", new_column)}


def test_a_canvas_column_is_the_lesson_followed_by_one_canvas_id():
    assert canvas_column("ps1", ["ps10 (5)", "ps1 (7)"]) == "ps1 (7)"
    assert canvas_column("ps1", ["ps10 (5)", "ps1 (x)", "ps1"]) == "ps1"
    assert canvas_column("ps1", ["ps1 (5)", "ps1 (6)"]) == "ps1"  # two: which is meant?
    assert canvas_column("ps1", []) == "ps1"
    titled = ["03 Backward and scalar outputs (23403)", "Lesson 4: retain_graph (23404)"]
    assert canvas_column("03_backward_and_scalar_outputs", titled) == titled[0]  # same words
    assert canvas_column("04_retain_graph_and_accumulation", titled) == (
        "04_retain_graph_and_accumulation"  # other words: a new assignment, and a note says so
    )


def test_moodle_file_matches_on_an_identifier_every_student_has(course, tmp_path):
    """Not everyone has an email, so the file identifies students by username (the login, or
    the course's id for a plain roster line): one identifier column, names, one per lesson."""
    path = moodle_import(course, tmp_path / "moodle.csv")
    assert _read(path) == [
        ["Username", "First name", "Last name", L1, L2],
        ["nora", "Nora", "Body", "0", "0"],
        ["cjones", "Casey", "Jones", "4.5", "5"],
        ["walkin", "Wally", "Kin", "3", "0"],
        ["pat", "Pat", "Lee", "0", "0"],
    ]
    assert _notes(path) == EXPECTED_NOTES


def test_moodle_file_leaves_out_students_without_the_identifier_asked_for(course, tmp_path):
    """Matching on email, Pat and Wally (no email) are not in the file, and the notes say why:
    Moodle would give a row with a blank identifier to the student above it."""
    path = moodle_import(course, tmp_path / "moodle.csv", match_on="email")
    assert [row[:2] for row in _read(path)] == [
        ["Email address", "First name"],
        ["nora@uni.example", "Nora"],
        ["casey@uni.example", "Casey"],
    ]
    notes = _notes(path)
    for student in ("pat", "walkin"):
        outcome, detail = notes[(student, "")]
        assert (outcome, detail.split(" on")[0]) == ("left out", "no Email address")
    with pytest.raises(ValueError, match="no Moodle identifier 'login'"):
        moodle_import(course, tmp_path / "other.csv", match_on="login")
