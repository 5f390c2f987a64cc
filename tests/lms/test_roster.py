"""Rosters: a plain CSV or a platform's export becomes the course's students, or a message that
names the file, the line and what to do."""

from pathlib import Path

import pytest

from grader.commands.init import init_course
from grader.lms.roster import (
    CANVAS_COLUMNS_FILE,
    COLUMNS,
    ROSTER_FILE,
    RosterError,
    Student,
    load_canvas_columns,
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


def test_a_canvas_export_without_the_sis_columns_takes_ids_from_the_canvas_id():
    """What a TA who may not see SIS data exports: Student, ID, Section and the assignments.
    Its Points Possible row is skipped, the names kept, the ID is the id and the lms_id, and the
    test student (who has an ID) is a student like the others."""
    students = read_roster(EXPORTS / "canvas_gradebook_no_sis.csv")
    assert students == [
        Student("4101", "Alice", "Archer", lms_id="4101", section="Section A"),
        Student("4102", "José", "Núñez", lms_id="4102", section="Section B"),
        Student("4199", "Test", "Student", lms_id="4199", section="Section A"),
    ]
    assert students.notes == []


def test_a_canvas_export_without_sis_columns_or_points_row_is_still_canvas(tmp_path):
    """Without its Points Possible row, `ID` must not make it a plain roster, which would drop
    the names and leave lms_id empty."""
    text = 'Student,ID,Section,Lesson 3 (1001)\n"Garcia, Maria",111,Sec A,\n'
    assert read_roster(_csv(tmp_path, text)) == [
        Student("111", "Maria", "Garcia", lms_id="111", section="Sec A")
    ]


def test_canvas_test_student_without_the_sis_ids_is_left_out_and_said_so(tmp_path):
    """Canvas gives its test student no SIS ids: where the ids are SIS logins it is left out
    (ids come from one column), with a note naming its line, rather than refusing the roster."""
    text = (
        "Student,ID,SIS User ID,SIS Login ID,Section,Lesson 3 (1001)\n"
        ",,,,,Manual Posting\n"
        "    Points Possible,,,,,10\n"
        '"Garcia, Maria",111,S111,garciamaria,Sec A,\n'
        '"Student, Test",555,,,Sec A,\n'
        '"Lee, John",112,S112,jlee,Sec A,\n'
    )
    roster = read_roster(_csv(tmp_path, text))
    assert [student.id for student in roster] == ["garciamaria", "jlee"]
    assert roster.notes == [
        f"{tmp_path / 'roster.csv'}, line 5: Canvas's test student left out: it has no"
        " 'SIS Login ID', which gives the others' ids"
    ]


def test_a_real_canvas_student_without_the_sis_login_is_still_refused(tmp_path):
    text = (
        "Student,ID,SIS User ID,SIS Login ID,Section\n"
        '"Garcia, Maria",111,S111,garciamaria,Sec A\n'
        '"Test, Student",556,,,Sec A\n'
    )
    message = _refused(tmp_path, text)
    assert ", line 3: no student id (column 'SIS Login ID' is blank)" in message


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


@pytest.mark.parametrize(
    "header, groups",
    [
        ("Prénom;Nom;Numéro d’identification;Adresse de courriel;Rôles;Groupes", "Groupes"),
        ("Vorname;Nachname;ID-Nummer;E-Mail-Adresse;Rollen;Gruppen", "Gruppen"),
        ("Nombre;Apellido(s);Número de ID;Dirección de correo;Roles;Grupos", "Grupos"),
    ],
)
def test_a_moodle_download_in_french_german_or_spanish_reads_as_in_english(
    tmp_path, header, groups
):
    text = f"{header}\nZoë;Ångström;;zoe.angstrom@uni.example;Student;G1\n"
    assert read_roster(_csv(tmp_path, text)) == [
        Student("zoe.angstrom", "Zoë", "Ångström", "zoe.angstrom@uni.example", section="G1")
    ]


def test_a_french_moodle_download_takes_ids_from_its_id_number(tmp_path):
    text = "Prénom;Nom;Numéro d'identification;Adresse de courriel\nZoë;Ångström;2026;z@u.example\n"
    assert read_roster(_csv(tmp_path, text))[0] == Student(
        "2026", "Zoë", "Ångström", "z@u.example", sis_id="2026"
    )


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


@pytest.mark.parametrize("first, second", [("Zoe", "zoe"), ("Zoë", "ZOË"), ("Zoë", "zoe\u0308")])
def test_ids_that_differ_only_in_case_are_refused_naming_both_lines(tmp_path, first, second):
    """collect matches ids without case, and macOS keeps Zoe/ and zoe/ (and an accent written
    either way Unicode allows) in one folder."""
    message = _refused(tmp_path, f"id\n{first}\nbob\n{second}\n")
    assert message.startswith(f"{tmp_path / 'roster.csv'}, line 4: student id {second!r}")
    assert f" and {first!r} on line 2 differ only in case" in message
    assert "give each student an id of their own" in message


@pytest.mark.parametrize("trailing", [",\n", ",\n,,\n\n", "\n\n", " , \r\n"])
def test_empty_rows_at_the_end_are_ignored(tmp_path, trailing):
    """Excel writes `,,,` rows below the last student."""
    path = _csv(tmp_path, f"id,first_name\nalice,Alice\nbob,Bob\n{trailing}")
    assert [student.id for student in read_roster(path)] == ["alice", "bob"]


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


def test_a_canvas_exports_assignment_columns_are_kept_beside_the_roster(tmp_path):
    """So that `export --lms canvas` names its columns as Canvas's assignments are named; a
    roster without them removes the file."""
    students = read_roster(EXPORTS / "canvas_gradebook_no_sis.csv")
    assert students.canvas_columns == [
        "01_tensors_and_requires_grad (1201)",
        "02_grad_fn_and_the_graph (1202)",
    ]
    save_roster(tmp_path, students)
    assert load_canvas_columns(tmp_path) == students.canvas_columns
    save_roster(tmp_path, read_roster(EXPORTS / "moodle_participants.csv"))
    assert not (tmp_path / CANVAS_COLUMNS_FILE).exists()
    assert load_canvas_columns(tmp_path) == []


def test_init_with_a_canvas_export_keeps_its_assignment_columns(tmp_path):
    course = init_course(tmp_path / "course", roster=EXPORTS / "canvas_gradebook_no_sis.csv")
    assert load_canvas_columns(course.root)[0] == "01_tensors_and_requires_grad (1201)"
    assert [student.lms_id for student in load_roster(course.root)] == ["4101", "4102", "4199"]


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
