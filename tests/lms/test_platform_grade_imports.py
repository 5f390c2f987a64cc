"""Grades as Blackboard's and Brightspace's imports take them, and an LMS column named by the
platform's own id: students by the platform's ids, columns by the ids of its grade export, and
no grade that is not final."""

import csv

import pytest

from grader.cli import main
from grader.commands.init import init_course
from grader.lms.grade_import import (
    blackboard_import,
    brightspace_import,
    canvas_import,
    notes_for,
)
from grader.lms.roster import COLUMNS, ROSTER_FILE

L1 = "01_tensors_and_requires_grad"  # 3 exercises, 6 points
L2 = "02_grad_fn_and_the_graph"  # 4 exercises, 9 points
ROSTER = [
    {"id": "cjones", "first_name": "Casey", "last_name": "Jones", "sis_id": "00417",
     "login": "cjones"},
    {"id": "dana", "first_name": "Dana", "last_name": "Ruiz", "login": "druiz"},
    {"id": "kim", "first_name": "Kim", "last_name": "Lo", "lms_id": "777"},  # no username
    {"id": "pat", "first_name": "Pat", "last_name": "Lee"},  # a plain roster's line
]  # fmt: skip
PENDING = "2 points await a manual grade"
# The headers of each platform's own grade export, with its ids for the lessons.
BLACKBOARD_DOWNLOAD = [
    "Last Name", "First Name", "Username", "Student ID", "Last Access", "Availability",
    "Weighted Total [Total Pts: up to 0 Percentage] |1001",
    "01 Tensors and requires grad [Total Pts: 6 Score] |1002",
]  # fmt: skip
BRIGHTSPACE_EXPORT = [
    "OrgDefinedId", "Username", "Last Name", "First Name", "Email",
    "01 Tensors and Requires Grad Points Grade <Numeric MaxPoints:6 Weight:10>",
    "End-of-Line Indicator",
]  # fmt: skip


def _grade(gb, lesson: str, student: str, scores, penalty: float = 0.0, pending=()) -> None:
    """Enter a submission as a grading run leaves it; cells `pending` await a manual grade."""
    notebook = gb.update_or_create_submission(lesson, student).notebooks[0]
    for i, (grade, score) in enumerate(
        zip(sorted(notebook.grades, key=lambda g: g.name), scores, strict=True)
    ):
        grade.auto_score = score
        grade.needs_manual_grade = i in pending
    notebook.late_submission_penalty = penalty
    gb.db.commit()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Casey (a Brightspace OrgDefinedId with a leading zero, late on L1), Dana (a cell of L1
    awaiting a manual grade), Kim (a platform user id, no username), Pat (plain roster line)."""
    course = init_course(tmp_path_factory.mktemp("platform_imports") / "c")
    with open(course.root / ROSTER_FILE, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(ROSTER)
    with course.api().gradebook as gb:
        for row in ROSTER:
            gb.update_or_create_student(row["id"], last_name=row["last_name"])
        _grade(gb, L1, "cjones", [2, 2, 2], penalty=1.5)
        _grade(gb, L2, "cjones", [3, 2, 0, 0])
        _grade(gb, L1, "dana", [2, 0, 2], pending={1})
        _grade(gb, L2, "dana", [3, 3, 3, 0])
        _grade(gb, L1, "kim", [2, 2, 2])
        _grade(gb, L1, "pat", [1, 1, 1])
    return course


def _read(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _notes(path) -> dict[tuple[str, str], tuple[str, str]]:
    with open(notes_for(path), newline="", encoding="utf-8") as handle:
        return {(r["student"], r["outcome"]): r["detail"] for r in csv.DictReader(handle)}


def test_blackboard_file_finds_students_by_username_and_columns_by_id(course, tmp_path):
    """L1's column is the Grade Center download's (its id after `|`), L2's the id given; every
    cell quoted, as Blackboard asks. Dana's L1 is not final and Kim has no Username: both rows
    are left out, and the notes say why."""
    path = blackboard_import(
        course, tmp_path / "bb.csv", columns={L2: "2002"}, known=BLACKBOARD_DOWNLOAD
    )
    assert _read(path) == [
        ["Last Name", "First Name", "Username", "Student ID",
         "01 Tensors and requires grad [Total Pts: 6 Score] |1002", f"{L2} |2002"],
        ["Jones", "Casey", "cjones", "00417", "4.5", "5"],
        ["Lee", "Pat", "pat", "", "3", "0"],
    ]  # fmt: skip
    assert path.read_text().splitlines()[1] == '"Jones","Casey","cjones","00417","4.5","5"'
    notes = _notes(path)
    assert notes[("dana", "not final")] == PENDING
    assert notes[("dana", "left out")].startswith(f"{L1} not final (see their lines), and Black")
    assert notes[("kim", "left out")] == (
        "no Username on the roster, which Blackboard finds students by"
    )


def test_blackboard_column_without_an_id_is_a_new_column_and_the_notes_say_so(course, tmp_path):
    path = blackboard_import(course, tmp_path / "bb.csv", lessons=[L1])
    assert _read(path)[0][4:] == [L1]
    assert _notes(path)[("", "column")].startswith(
        f"no Blackboard Grade Center column id for {L1}: Blackboard will add a new text column"
        " worth 0 points"
    )


def test_brightspace_file_has_its_ids_items_and_end_of_line_indicator(course, tmp_path):
    """OrgDefinedId and Username with `#` before them, as Brightspace's export writes them (the
    leading zero kept); L1's item named as in Brightspace's export, L2's as given; `#` ends each
    row. Dana (not final) and Kim (no id Brightspace knows) are left out."""
    path = brightspace_import(
        course, tmp_path / "d2l.csv", columns={L2: "Problem set 2"}, known=BRIGHTSPACE_EXPORT
    )
    assert _read(path) == [
        ["OrgDefinedId", "Username", "01 Tensors and Requires Grad Points Grade",
         "Problem set 2 Points Grade", "End-of-Line Indicator"],
        ["#00417", "#cjones", "4.5", "5", "#"],
        ["", "#pat", "3", "0", "#"],
    ]  # fmt: skip
    notes = _notes(path)
    assert notes[("dana", "not final")] == PENDING
    assert "Brightspace does not document" in notes[("dana", "left out")]
    assert notes[("kim", "left out")].startswith("no OrgDefinedId or Username on the roster")


def test_a_canvas_column_is_the_assignment_whose_id_is_given(course, tmp_path):
    """Canvas's column for L1 is its export's header with the id given, whatever its title;
    an id the export does not have is written `lesson (id)`, which Canvas matches by id."""
    known = ["Problem set one (1201)", f"{L1} (1299)"]
    path = canvas_import(course, tmp_path / "c.csv", columns={L1: "1201", L2: "1303"}, known=known)
    assert _read(path)[0][5:] == ["Problem set one (1201)", f"{L2} (1303)"]
    with pytest.raises(ValueError, match=f"--column {L1}=ps1: a Canvas assignment id is a number"):
        canvas_import(course, tmp_path / "x.csv", columns={L1: "ps1"})
    with pytest.raises(ValueError, match="--column 03_x=…: 03_x is not a lesson of this export"):
        canvas_import(course, tmp_path / "x.csv", columns={"03_x": "5"})


def test_cli_reads_the_platform_export_and_refuses_options_a_platform_has_no_use_for(
    course, tmp_path, capsys
):
    download = tmp_path / "gc.csv"
    with open(download, "w", newline="") as handle:
        csv.writer(handle).writerows([BLACKBOARD_DOWNLOAD, ["Jones", "Casey", "cjones"]])
    to = tmp_path / "bb.csv"
    args = ["export", "--course-dir", str(course.root), "--lms", "blackboard", "--to", str(to)]
    assert main(args + ["--gradebook", str(download), "--column", f"{L2}=2002"]) == 0
    assert _read(to)[0][4:] == ["01 Tensors and requires grad [Total Pts: 6 Score] |1002",
                                f"{L2} |2002"]  # fmt: skip
    capsys.readouterr()
    moodle = ["export", "--course-dir", str(course.root), "--lms", "moodle"]
    assert main(moodle + ["--column", f"{L1}=5"]) == 2
    assert capsys.readouterr().err == (
        "grader: --column: for --lms canvas, blackboard or brightspace\n"
    )
    assert main(args + ["--column", L1]) == 2
    assert "write LESSON=ID" in capsys.readouterr().err
