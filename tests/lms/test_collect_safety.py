"""`collect` never puts one student's work in another's place: a notebook is checked against the
assignment by its own nbgrader cells, a match by name alone never replaces collected work
without the instructor's word, a download of another platform than the roster's is refused,
and each platform's own ids are used where its names carry them."""

import csv
import json
import shutil
import zipfile

import pytest

from grader.cli import main
from grader.commands.collect import collect
from grader.commands.init import init_course
from grader.course import Course
from grader.lms.exports import parse_time
from grader.lms.roster import COLUMNS, PLATFORM_FILE, load_roster, read_roster, save_roster

ROSTER = [
    dict(id="jsmith", first_name="John", last_name="Smith", sis_id="7001"),
    dict(id="amartin1", first_name="Anne", last_name="Martin", sis_id="7002"),
    dict(id="amartin2", first_name="Anne", last_name="Martin", sis_id="7003"),
]
WHEN = (2026, 10, 5, 12, 0, 0)


def _released(cells: dict[str, str]) -> dict:
    """A notebook whose cells carry nbgrader's metadata: grade id -> checksum."""
    return {
        "cells": [
            {
                "cell_type": "code",
                "source": "",
                "metadata": {"nbgrader": {"grade_id": grade_id, "checksum": checksum}},
                "outputs": [],
                "execution_count": None,
            }
            for grade_id, checksum in cells.items()
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


PS1 = {"squares": "a1", "test_squares": "b1"}
PS7 = {"squares": "c7", "test_squares": "d7", "sum": "e7"}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A course with two released assignments of one notebook each, ps1 and ps7, whose grade
    ids are alike but whose checksums differ (as two problem sets of one course)."""
    course = init_course(tmp_path_factory.mktemp("template") / "course")
    for name, cells in (("ps1", PS1), ("ps7", PS7)):
        for folder in ("source", "release"):
            (course.root / folder / name).mkdir(parents=True)
            notebook = course.root / folder / name / "problem1.ipynb"
            notebook.write_text(json.dumps(_released(cells)))
    return course


@pytest.fixture
def course(template, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(template.root, root, symlinks=True)
    with open(root / "roster.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerows(ROSTER)
    return Course(root)


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members:
            zf.writestr(zipfile.ZipInfo(name, WHEN), data)
    return path


def _notebook(cells: dict[str, str], tag: str = "") -> str:
    notebook = _released(cells)
    notebook["metadata"]["tag"] = tag
    return json.dumps(notebook)


def test_a_download_of_another_assignment_is_refused_naming_what_it_is(course, tmp_path):
    """`collect --lesson ps7` with ps1's download: each notebook is named as ps1's by its
    nbgrader cells and nothing is placed; a notebook of no assignment of the course is named
    as such; ps7's own notebook is placed."""
    export = _zip(tmp_path / "download.zip", [
        ("John Smith_101_assignsubmission_file_/problem1.ipynb", _notebook(PS1)),
        ("Anne Martin_102_assignsubmission_file_/problem1.ipynb", _notebook({"q1": "zz"})),
    ])  # fmt: skip
    run = collect(export, course, lesson="ps7", timezone="UTC")
    assert run.placed == []
    reasons = {r.name: r.reason for r in run.rejected}
    assert reasons["John Smith_101_assignsubmission_file_/problem1.ipynb"] == (
        "jsmith: its nbgrader cells are ps1's problem1.ipynb, not ps7's problem1.ipynb: is this"
        " the download of another assignment than ps7?"
    )
    assert not (course.submission("jsmith", "ps7")).exists()
    own = _zip(tmp_path / "ps7.zip", [
        ("John Smith_101_assignsubmission_file_/problem1.ipynb", _notebook(PS7)),
        ("John Smith_101_assignsubmission_file_/other.ipynb", _notebook({"q1": "zz"})),
    ])  # fmt: skip
    run = collect(own, course, lesson="ps7", timezone="UTC")
    assert [(p.student, p.lesson) for p in run.placed] == [("jsmith", "ps7")]
    stranger = _zip(tmp_path / "stranger.zip", [
        ("jsmith_ps1_problem1.ipynb", _notebook({"q1": "zz", "q2": "yy"})),
    ])  # fmt: skip
    (rejected,) = collect(stranger, course).rejected
    assert rejected.reason == (
        "jsmith: its nbgrader cells (q1, q2) are none of ps1's problem1.ipynb's, nor of any"
        " notebook of the course: a notebook of another course or assignment, though its name"
        " says ps1: place it by hand if it is ps1's"
    )


def test_a_download_named_for_another_assignment_is_refused_before_anything_is_placed(
    course, tmp_path
):
    """Moodle names its download after the assignment: COURSE-ps1-….zip collected as ps7 is
    refused whole, saying what its name says; ps10 in a name is not ps1, and a download named
    for ps7 is taken."""
    members = [("John Smith_101_assignsubmission_file_/problem1.ipynb", _notebook({}))]
    wrong = _zip(tmp_path / "CS101-ps1-4242.zip", members)
    with pytest.raises(ValueError, match="its name says ps1, not ps7: is it the download of ps1"):
        collect(wrong, course, lesson="ps7", timezone="UTC")
    assert not course.submission("jsmith", "ps7").exists()
    for name in ("CS101-ps10-4242.zip", "CS101-ps7-4242.zip"):
        run = collect(_zip(tmp_path / name, members), course, lesson="ps7", timezone="UTC")
        assert [p.student for p in run.placed] == ["jsmith"]


def test_a_notebook_without_nbgrader_cells_is_not_judged_by_them(course, tmp_path):
    """A notebook made anew (no nbgrader metadata) says nothing of what it is: it is placed."""
    export = _zip(tmp_path / "plain.zip", [("jsmith_ps7_problem1.ipynb", '{"cells": []}')])
    assert [p.student for p in collect(export, course).placed] == ["jsmith"]


def test_a_match_by_name_alone_never_replaces_collected_work_unasked(course, tmp_path):
    """Another download's file for a student of the same name (another participant number)
    changes nothing of theirs without --replace-by-name; the same submitter's newer file, or the
    instructor's word, replaces it."""
    name = "John Smith_{}_assignsubmission_file_/problem1.ipynb"
    first = _zip(tmp_path / "first.zip", [(name.format(101), _notebook(PS7, "first"))])
    again = _zip(tmp_path / "again.zip", [(name.format(101), _notebook(PS7, "again"))])
    other = _zip(tmp_path / "other.zip", [(name.format(555), _notebook(PS7, "other"))])
    target = course.submission("jsmith", "ps7") / "problem1.ipynb"
    assert collect(first, course, timezone="UTC").ok
    run = collect(other, course, timezone="UTC")
    assert not run.ok
    assert run.rejected[0].reason == (
        "jsmith: matched by the name 'John Smith' alone, and it would change the submission"
        " already collected in submitted/jsmith/ps7/: nothing was changed; if it is theirs,"
        " collect again with --replace-by-name"
    )
    assert json.loads(target.read_text())["metadata"]["tag"] == "first"
    assert collect(again, course, timezone="UTC").placed[0].note.startswith("replaced")
    assert json.loads(target.read_text())["metadata"]["tag"] == "again"
    assert collect(other, course, timezone="UTC", replace_by_name=True).ok
    assert json.loads(target.read_text())["metadata"]["tag"] == "other"
    record = json.loads((course.root / "collect_backup" / "sources.json").read_text())
    assert record["jsmith/ps7"]["source"] == "Moodle 555"
    assert record["jsmith/ps7"]["matched_by"] == "name"


def test_a_download_of_another_platform_than_the_rosters_is_refused(course, tmp_path, capsys):
    """A Moodle download into a course whose roster is Canvas's: a one-line error, exit 2,
    nothing placed; --other-platform takes it."""
    (course.root / PLATFORM_FILE).write_text("Canvas\n")
    export = _zip(tmp_path / "moodle.zip", [
        ("John Smith_101_assignsubmission_file_/problem1.ipynb", _notebook(PS7)),
    ])  # fmt: skip
    args = ["collect", str(export), "--course-dir", str(course.root), "--time-zone", "UTC"]
    assert main(args) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.endswith(
        "moodle.zip: a Moodle download, but the course's roster is Canvas's: is it another"
        " course's? If it is this course's, collect it with --other-platform"
    )
    assert error.startswith("grader: ") and not course.submission("jsmith", "ps7").exists()
    assert main([*args, "--other-platform"]) == 0


def test_brightspace_folder_numbers_tell_students_of_one_name_apart(course, tmp_path):
    """A number in Brightspace's folder name that is a student's id on the roster decides
    between two students of one name; a number of one student beside another's name is not
    trusted."""
    folder = "{} - {} - Oct 5, 2026 820 PM/problem1.ipynb"
    export = _zip(tmp_path / "d2l.zip", [
        (folder.format("90001-7003", "Martin Anne"), _notebook(PS7)),
        (folder.format("90002-7001", "Martin Anne"), _notebook(PS7)),
        ("index.html", "<html></html>"),
    ])  # fmt: skip
    run = collect(export, course, timezone="UTC")
    assert [(p.student, p.lesson) for p in run.placed] == [("amartin2", "ps7")]
    (rejected,) = run.rejected
    assert rejected.reason.startswith(
        "Martin Anne? the number in its name is jsmith's, its name amartin1, amartin2's:"
    )


def test_a_pattern_reads_brightspace_times():
    """`--pattern`'s timestamp group reads Brightspace's `420 PM` as 16:20."""
    assert parse_time("Oct 5, 2026 420 PM").isoformat() == "2026-10-05T16:20:00"


def test_nbgrader_layout_ids_with_underscores_are_taken_without_a_roster(template, tmp_path):
    """nbgrader's submitted/<student>/ names the whole id, `_` and all."""
    root = tmp_path / "bare"
    shutil.copytree(template.root, root, symlinks=True)
    export = _zip(tmp_path / "tree.zip", [
        ("submitted/jane_doe/ps7/problem1.ipynb", _notebook(PS7)),
        ("submitted/jane_doe/ps7/timestamp.txt", "2026-10-05 12:00:00.000000 UTC"),
    ])  # fmt: skip
    (placed,) = collect(export, Course(root)).placed
    assert (placed.student, placed.lesson) == ("jane_doe", "ps7")


def test_brightspace_and_blackboard_grade_exports_read_as_rosters(tmp_path):
    """Brightspace's grades export: ids from Username without its `#`, OrgDefinedId as the SIS
    id; Blackboard's Grade Center download: Username and Student ID; each says its platform."""
    d2l = tmp_path / "d2l.csv"
    d2l.write_text(
        "OrgDefinedId,Username,Last Name,First Name,Email,PS1 Points Grade,End-of-Line Indicator\n"
        "#7001,#kowalskaa,Kowalska,Anna,anna@uni.example,,#\n"
    )
    (student,) = roster = read_roster(d2l)
    assert (student.id, student.sis_id, student.login) == ("kowalskaa", "7001", "kowalskaa")
    assert roster.platform == "Brightspace (D2L)"
    blackboard = tmp_path / "bb.csv"
    blackboard.write_text(
        '"Last Name","First Name","Username","Student ID","Last Access","Availability"\n'
        '"Kowalska","Anna","kowalskaa","S7001","2026-10-01","Available"\n'
    )
    (student,) = roster = read_roster(blackboard)
    assert (student.id, student.sis_id, student.first_name) == ("kowalskaa", "S7001", "Anna")
    assert roster.platform == "Blackboard"
    # as Blackboard downloads it by default: a .xls file of UTF-16 text, tab-separated
    download = tmp_path / "gc_download.xls"
    download.write_text(blackboard.read_text().replace(",", "\t"), encoding="utf-16")
    (same,) = read_roster(download)
    assert same == student


def test_roster_csv_is_safe_to_open_in_a_spreadsheet(tmp_path):
    """A name that starts like a formula is written with a `'` before it and read back as
    it was; the platform of the roster is kept beside it."""
    roster = read_roster(_plain(tmp_path, "id,first_name,last_name\nev1,=HYPERLINK(1),-Lee\n"))
    roster.platform = "Moodle"
    save_roster(tmp_path, roster)
    text = (tmp_path / "roster.csv").read_text()
    assert "'=HYPERLINK(1)" in text and "'-Lee" in text
    (student,) = load_roster(tmp_path)
    assert (student.first_name, student.last_name) == ("=HYPERLINK(1)", "-Lee")
    assert (tmp_path / PLATFORM_FILE).read_text() == "Moodle\n"


def _plain(tmp_path, text):
    path = tmp_path / "given.csv"
    path.write_text(text)
    return path


def test_a_zip_inside_a_folder_is_read_as_nbgrader_zip_collect_extracts_it(course, tmp_path):
    """nbgrader's zip_collect example: the archive folder holds the LMS's zip; its members are
    read as unpacked into a folder named as it, with the pattern nbgrader's docs give."""
    folder = tmp_path / "archive"
    folder.mkdir()
    _zip(folder / "notebooks.zip", [
        ("ps7_jsmith_attempt_2016-01-30-20-30-10_problem1.ipynb", _notebook(PS7)),
        ("../escape.ipynb", _notebook(PS7)),
    ])  # fmt: skip
    pattern = r".+_(?P<student_id>\w+)_attempt_(?P<timestamp>[0-9\-]+)_(?P<file_id>\w+)"
    run = collect(folder, course, lesson="ps7", pattern=pattern, timezone="UTC")
    (placed,) = run.placed
    assert placed.name == "notebooks/ps7_jsmith_attempt_2016-01-30-20-30-10_problem1.ipynb"
    assert (placed.student, placed.notebook) == ("jsmith", "problem1.ipynb")
    assert placed.time.isoformat() == "2016-01-30T20:30:10+00:00"
    (refused,) = run.rejected
    assert refused.reason.startswith("its path leaves the export")


def test_released_lessons_are_known_by_their_own_cells(course, tmp_path):
    """A student's copy of a lesson as `init` released it (answers typed in) is placed as that
    lesson, and refused as another that its name says."""
    first, third = "01_tensors_and_requires_grad", "03_backward_and_scalar_outputs"
    notebook = json.loads((course.root / "release" / first / f"{first}.ipynb").read_text())
    for cell in notebook["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("solution"):
            cell["source"] = "x = 1"  # the student's answer: the checksum in metadata stays
    export = _zip(tmp_path / "lessons.zip", [
        (f"jsmith_{first}.ipynb", json.dumps(notebook)),
        (f"amartin1_{third}.ipynb", json.dumps(notebook)),
    ])  # fmt: skip
    run = collect(export, course)
    assert [(p.student, p.lesson) for p in run.placed] == [("jsmith", first)]
    assert run.rejected[0].reason == (
        f"amartin1: its nbgrader cells are {first}'s {first}.ipynb, not {third}'s {third}.ipynb,"
        f" though its name says {third}: place it by hand if it is {third}'s"
    )


def test_moodle_participant_numbers_from_the_grading_worksheet_tell_students_of_one_name_apart(
    course, tmp_path
):
    """Two students named Anne Martin: without the worksheet their files are refused, and the
    hint names --worksheet; with it, each file goes to the student its participant number is
    (by email); a number the worksheet gives someone of another name (a worksheet of another
    assignment) is refused."""
    rows = [dict(row, email=f"{row['id']}@uni.example") for row in ROSTER]
    with open(course.root / "roster.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    folder = "Anne Martin_{}_assignsubmission_file_/problem1.ipynb"
    members = [(folder.format(n), _notebook(PS7, f"participant {n}")) for n in (201, 202)]
    export = _zip(tmp_path / "moodle.zip", members)
    run = collect(export, course, lesson="ps7", timezone="UTC")
    assert not run.placed and all("--worksheet" in r.reason for r in run.rejected)
    worksheet = tmp_path / "worksheet.csv"
    worksheet.write_text(
        "Identifier,Full name,Email address\n"
        "Participant 201,Anne Martin,amartin2@uni.example\n"
        "Participant 202,Anne Martin,amartin1@uni.example\n"
        "Participant 203,John Smith,jsmith@uni.example\n",
        encoding="utf-8",
    )
    args = ["--lesson", "ps7", "--time-zone", "UTC", "--course-dir", str(course.root)]
    assert main(["collect", str(export), "--worksheet", str(worksheet), *args]) == 0
    for student, number in (("amartin2", 201), ("amartin1", 202)):
        placed = course.submission(student, "ps7") / "problem1.ipynb"
        assert json.loads(placed.read_text())["metadata"]["tag"] == f"participant {number}"
    other = _zip(tmp_path / "other.zip", [(folder.format(203), _notebook(PS7))])
    run = collect(other, course, lesson="ps7", timezone="UTC", worksheet=worksheet)
    assert run.rejected[0].reason == (
        "Anne Martin? the worksheet's participant 203 is John Smith (jsmith): is the worksheet"
        " of another assignment?"
    )
