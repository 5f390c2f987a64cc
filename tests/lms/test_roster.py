"""Rosters: a plain CSV or a platform's export becomes the course's students, or a message that
names the file, the line and what to do."""

from pathlib import Path

import pytest

from grader.commands.init import init_course
from grader.lms.roster import (
    COLUMNS,
    ROSTER_FILE,
    RosterError,
    Student,
    load_roster,
    read_roster,
    save_roster,
)

EXPORTS = Path(__file__).parent / "exports"


def _csv(tmp_path: Path, text: str, name: str = "roster.csv", bom: bool = False) -> Path:
    path = tmp_path / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    return path


def test_a_plain_roster_gives_every_column_trimmed(tmp_path):
    path = _csv(
        tmp_path,
        "id,first_name,last_name,email,section,shoe_size\n"
        " alice ,Alice , Archer,alice@example.edu,A,38\n"
        "bob,Bob,,,,\n",
    )
    assert read_roster(path) == [
        Student("alice", "Alice", "Archer", "alice@example.edu", section="A"),
        Student("bob", "Bob"),
    ]


def test_a_plain_roster_with_a_byte_order_mark_reads_the_same(tmp_path):
    """Excel's "CSV UTF-8" starts with a BOM: the first column is still `id`."""
    text = "id,first_name\nalice,Alice\n"
    assert read_roster(_csv(tmp_path, text, bom=True)) == [Student("alice", "Alice")]


def test_plain_column_names_are_read_in_any_case(tmp_path):
    path = _csv(tmp_path, "ID,First Name,Last_Name\nalice,Alice,Archer\n")
    assert read_roster(path) == [Student("alice", "Alice", "Archer")]


def test_the_example_class_roster_reads():
    from grader.course import EXAMPLE_CLASS

    students = read_roster(EXAMPLE_CLASS / "roster.csv")
    assert [s.id for s in students] == ["alice", "bob", "carol", "dave", "erin", "frank"]
    assert students[0].full_name == "Alice Archer"


def test_a_canvas_gradebook_export_skips_its_posting_and_points_rows():
    """Canvas's export (BOM, CRLF): "Last, First" names, ids from the SIS Login ID, the test
    student kept as a student."""
    students = read_roster(EXPORTS / "canvas_gradebook.csv")
    assert students[:2] == [
        Student("aarcher", "Alice", "Archer", "", "4101", "S1001", "aarcher", "Section A"),
        Student("bbrown", "Bob", "Brown", "", "4102", "S1002", "bbrown", "Section B and Section C"),
    ]
    assert students[2].last_name == "Prince" and students[2].first_name == ""
    assert [s.full_name for s in students] == [
        "Alice Archer",
        "Bob Brown",
        "Prince",
        "Test Student",
    ]


def test_canvas_ids_fall_back_to_the_sis_user_id_then_the_canvas_id(tmp_path):
    """The first of SIS Login ID, SIS User ID, ID that the export fills in for anyone."""
    no_login = 'Student,ID,SIS User ID,SIS Login ID,Section\n"Archer, Alice",4101,S1001,,A\n'
    assert read_roster(_csv(tmp_path, no_login, "a.csv"))[0].id == "S1001"
    no_sis = 'Student,ID,SIS Login ID,Section\n"Archer, Alice",4101,,A\n'
    assert read_roster(_csv(tmp_path, no_sis, "b.csv"))[0].id == "4101"


def test_canvas_first_and_last_name_columns_and_semicolons(tmp_path):
    """Canvas can write LastName and FirstName columns, and separate fields with semicolons."""
    text = (
        "LastName;FirstName;ID;SIS Login ID;Section\n"
        "    Points Possible;;;;\n"
        "Archer;Alice;4101;aa;A\n"
    )
    assert read_roster(_csv(tmp_path, text)) == [
        Student("aa", "Alice", "Archer", "", "4101", "", "aa", "A")
    ]


def test_a_moodle_participants_download_takes_ids_from_the_email():
    students = read_roster(EXPORTS / "moodle_participants.csv")
    assert students[0] == Student("alice.archer", "Alice", "Archer", "alice.archer@uni.example")
    assert [s.id for s in students] == ["alice.archer", "bob.brown", "chloe.chen"]
    assert students[2].full_name == "Chloé Chen"


def test_moodle_ids_come_from_the_username_then_the_id_number(tmp_path):
    text = (
        "First name,Last name,Username,ID number,Email address,Groups\n"
        "Alice,Archer,aarcher,20261001,alice@uni.example,Group 1\n"
    )
    assert read_roster(_csv(tmp_path, text, "a.csv")) == [
        Student(
            "aarcher", "Alice", "Archer", "alice@uni.example", "", "20261001", "aarcher", "Group 1"
        )
    ]
    text = "First name,Last name,ID number,Email address\nAlice,Archer,20261001,alice@uni.example\n"
    assert read_roster(_csv(tmp_path, text, "b.csv"))[0].id == "20261001"


def test_id_column_names_the_column_of_ids_in_any_form(tmp_path):
    assert read_roster(EXPORTS / "canvas_gradebook.csv", id_column="ID")[0].id == "4101"
    moodle = read_roster(EXPORTS / "moodle_participants.csv", id_column="Email address")
    assert moodle[0].id == "alice.archer@uni.example"
    plain = _csv(tmp_path, "student,first_name\nalice,Alice\n")
    assert read_roster(plain, id_column="student") == [Student("alice", "Alice")]


def _refused(tmp_path: Path, text: str, **options) -> str:
    with pytest.raises(RosterError) as raised:
        read_roster(_csv(tmp_path, text), **options)
    return str(raised.value)


def test_a_repeated_id_names_both_lines(tmp_path):
    message = _refused(tmp_path, "id\nalice\nbob\n alice\n")
    assert message.startswith(f"{tmp_path / 'roster.csv'}, line 4: ")
    assert "'alice' is also on line 2" in message


def test_a_blank_row_is_refused_with_its_line(tmp_path):
    message = _refused(tmp_path, "id,first_name\nalice,Alice\n,\nbob,Bob\n")
    assert message == f"{tmp_path / 'roster.csv'}, line 3: blank row: delete it"


def test_an_empty_line_is_a_blank_row_too(tmp_path):
    assert ", line 3: blank row" in _refused(tmp_path, "id\nalice\n\nbob\n")


def test_a_blank_id_is_refused_with_its_line(tmp_path):
    message = _refused(tmp_path, "id,first_name\nalice,Alice\n  ,Bob\n")
    assert ", line 3: no student id (column 'id' is blank)" in message
    assert "--id-column" in message


def test_a_moodle_student_without_the_id_number_chosen_is_refused(tmp_path):
    text = "First name,Last name,ID number,Email address\nA,B,1,a@x.example\nC,D,,c@x.example\n"
    message = _refused(tmp_path, text)
    assert ", line 3: no student id (column 'ID number' is blank)" in message


def test_no_id_column_says_what_was_found_and_what_to_pass(tmp_path):
    message = _refused(tmp_path, "name,mail\nAlice,a@x.example\n")
    assert message.startswith(f"{tmp_path / 'roster.csv'}, line 1: no column gives")
    assert "'name', 'mail'" in message
    assert "--id-column COLUMN" in message


def test_an_id_column_that_is_not_there_lists_the_columns(tmp_path):
    message = _refused(tmp_path, "id,name\nalice,Alice\n", id_column="login")
    assert ", line 1: no column 'login' (the columns are 'id', 'name')" in message


@pytest.mark.parametrize(
    "bad, why",
    [
        ("a/b", "separates folders"),
        ("a\\\\b", "separates folders"),
        ('"a b"', "space"),
        ('"a\tb"', "control"),
        ("a\x07b", "control"),
        ("a\u202eb", "invisible"),
        ("a*", "pattern"),
        ("a?", "pattern"),
        ("a[1]", "pattern"),
        ("..", "not a folder name"),
        ("x" * 129, "longer than"),
    ],
)
def test_an_id_no_folder_can_be_named_is_refused_with_its_line(tmp_path, bad, why):
    message = _refused(tmp_path, f"id\nalice\n{bad}\n")
    assert message.startswith(f"{tmp_path / 'roster.csv'}, line 3: student id ")
    assert why in message


def test_an_empty_file_is_refused(tmp_path):
    assert _refused(tmp_path, "") == (
        f"{tmp_path / 'roster.csv'}, line 1: the file is empty: it needs a header row,"
        " then a row each"
    )


def test_a_file_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_bytes("id,first_name\nalice,Alice\nzoe,Zoë\n".encode("latin-1"))
    with pytest.raises(RosterError, match=r"roster\.csv, line 3: not UTF-8 text"):
        read_roster(path)


def test_a_file_that_cannot_be_read_is_refused(tmp_path):
    with pytest.raises(RosterError, match=r"missing\.csv: cannot read it"):
        read_roster(tmp_path / "missing.csv")
    with pytest.raises(RosterError, match="cannot read it"):
        read_roster(tmp_path)


def test_save_and_load_give_the_same_students(tmp_path):
    students = read_roster(EXPORTS / "canvas_gradebook.csv")
    path = save_roster(tmp_path, students)
    assert path == tmp_path / ROSTER_FILE
    assert path.read_text().splitlines()[0] == ",".join(COLUMNS)
    assert load_roster(tmp_path) == students


def test_a_course_without_a_roster_loads_none(tmp_path):
    assert load_roster(tmp_path) == []


def test_init_with_a_bad_roster_writes_nothing(tmp_path):
    roster = _csv(tmp_path, "id\nalice\nalice\n")
    with pytest.raises(RosterError, match="also on line 2"):
        init_course(tmp_path / "course", roster=roster)
    assert not (tmp_path / "course").exists()


def test_id_column_without_a_roster_is_refused_before_writing(tmp_path):
    with pytest.raises(ValueError, match="give the roster too"):
        init_course(tmp_path / "course", id_column="ID")
    assert not (tmp_path / "course").exists()
