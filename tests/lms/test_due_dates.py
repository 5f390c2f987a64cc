"""Due dates: each names one moment, or is refused with its file, line and what to write."""

from datetime import datetime
from pathlib import Path

import pytest

from grader.commands.init import init_course
from grader.compat import UTC
from grader.course import EXAMPLE_CLASS, lessons
from grader.lms.due_dates import DueDateError, parse_moment, read_due_dates, zone_named

L1, L2 = lessons()[:2]
UTC_2159 = datetime(2026, 10, 5, 21, 59, tzinfo=UTC)


def _file(tmp_path: Path, rows: str, bom: bool = False) -> Path:
    path = tmp_path / "due.csv"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + f"lesson,due\n{rows}".encode())
    return path


@pytest.mark.parametrize(
    "written",
    [
        "2026-10-05T23:59:00+02:00",
        "2026-10-05 23:59:00+02:00",
        "2026-10-05T23:59+02:00",
        "2026-10-05T23:59:00+0200",
        "2026-10-05 23:59:00 +02:00",
        "2026-10-05T21:59:00Z",
        "2026-10-05 21:59:00 Z",
        "2026-10-05 21:59:00 UTC",
        "2026-10-05 21:59:00 GMT",
        "2026-10-05T17:59-04",
        "2026-10-05T23:59:00+02",
        "2026-10-05 23:59:00 Europe/Berlin",
        "  2026-10-05T17:59:00-04:00  ",
    ],
)
def test_each_form_with_a_zone_names_the_same_moment(written):
    moment = parse_moment(written)
    assert moment == UTC_2159
    assert moment.tzinfo == UTC


def test_fractions_of_a_second_are_kept():
    assert parse_moment("2026-10-05T21:59:00.25Z") == UTC_2159.replace(microsecond=250000)


def test_a_time_without_a_zone_is_read_in_the_course_time_zone():
    assert parse_moment("2026-10-05 23:59", "Europe/Berlin") == UTC_2159  # summer time
    winter = parse_moment("2026-12-05T23:59:00", "Europe/Berlin")
    assert winter == datetime(2026, 12, 5, 22, 59, tzinfo=UTC)


def test_the_example_class_due_dates_read(tmp_path):
    due = read_due_dates(EXAMPLE_CLASS / "due_dates.csv", lessons())
    assert set(due) == set(lessons())
    assert due[L1] == datetime(2026, 10, 5, 23, 59, tzinfo=UTC)


def test_a_file_with_a_byte_order_mark_reads(tmp_path):
    path = _file(tmp_path, f"{L1},2026-10-05T21:59:00Z\n{L2},2026-10-12T21:59:00Z\n", bom=True)
    assert read_due_dates(path, lessons()) == {
        L1: UTC_2159,
        L2: datetime(2026, 10, 12, 21, 59, tzinfo=UTC),
    }


def test_the_file_time_zone_applies_to_times_without_one(tmp_path):
    path = _file(tmp_path, f"{L1},2026-10-05 17:59\n{L2},2026-10-05T23:59:00+02:00\n")
    found = read_due_dates(path, lessons(), time_zone="America/Toronto")
    assert found == {L1: UTC_2159, L2: UTC_2159}


@pytest.mark.parametrize(
    "written, said, hint",
    [
        ("2026-10-05 11:59 PM", "12-hour time", "write a 24-hour time"),
        ("2026-10-05 11:59pm", "12-hour time", "write a 24-hour time"),
        ("10/05/2026 23:59", "ambiguous", "write year-month-day"),
        ("05.10.2026 23:59", "ambiguous", "write year-month-day"),
        ("05-10-2026 23:59", "ambiguous", "write year-month-day"),
        ("2026-10-05", "it would mean midnight, the start of that day", "2026-10-05T23:59"),
        ("2026-10-05 23:59 EDT", "abbreviations such as 'EDT' are ambiguous", "write the offset"),
        ("2026-10-05 23:59 CET", "abbreviations such as 'CET' are ambiguous", "write the offset"),
        ("2026-10-05 23:59 Europe/Berln", "unknown time zone", "did you mean Europe/Berlin?"),
        ("2026-10-05 23:59", "has no time zone", "--time-zone"),
        ("2026-02-30T12:00:00Z", "no such date or time", "day is out of range"),
        ("2026-10-05T24:00:00Z", "no such date or time", "hour"),
        ("2026-10-05T23:59:00+25:00", "not an offset from UTC", ""),
        ("2026-10-05T23:59:00-23:59", "not an offset from UTC", "14 hours"),
        ("2026-10-05T23:59:00+14:30", "not an offset from UTC", "14 hours"),
        ("2026-10-05 23:59 Etc/GMT+4", "4 hours behind UTC, the reverse", "-04:00"),
        ("2026-10-05 23:59 Etc/GMT-2", "2 hours ahead of UTC, the reverse", "+02:00"),
        ("2026-10-05 23:59 UTC+2", "write the offset alone", "2026-10-05T23:59:00+02:00"),
        ("next Friday", "not a date and time as ISO 8601 writes them", "2026-10-05T23:59:00"),
    ],
)
def test_a_refused_due_date_names_its_line_and_what_to_write(tmp_path, written, said, hint):
    path = _file(tmp_path, f"{L2},2026-10-12T21:59:00Z\n{L1},{written}\n")
    with pytest.raises(DueDateError) as raised:
        read_due_dates(path, lessons())
    message = str(raised.value)
    assert message.startswith(f"{path}, line 3: ")
    assert said in message and hint in message


def test_offsets_up_to_14_hours_either_way_are_accepted():
    assert parse_moment("2026-10-05T23:59+14:00") == datetime(2026, 10, 5, 9, 59, tzinfo=UTC)
    assert parse_moment("2026-10-05T23:59-14:00") == datetime(2026, 10, 6, 13, 59, tzinfo=UTC)


def test_an_unquoted_comma_in_a_date_is_reported_as_extra_cells(tmp_path):
    """`Oct 5, 2026 11:59 PM` unquoted splits the row: say so, not "'Oct 5' is not a date"."""
    path = _file(tmp_path, f"{L2},2026-10-12T21:59:00Z\n{L1},Oct 5, 2026 11:59 PM\n")
    with pytest.raises(DueDateError) as raised:
        read_due_dates(path, lessons())
    message = str(raised.value)
    assert message.startswith(f"{path}, line 3: this row has 3 cells, not 2: ")
    assert "quote the date" in message and "'Oct 5'" not in message


def test_empty_cells_after_the_row_and_empty_rows_at_the_end_are_ignored(tmp_path):
    path = _file(tmp_path, f"{L1},2026-10-05T21:59:00Z,,\n,,\n,\n\n")
    assert read_due_dates(path, lessons()) == {L1: UTC_2159}


def test_etc_gmt_zones_are_refused_as_the_course_time_zone():
    """`Etc/GMT+4` is UTC-4: POSIX's sign, the reverse of what it seems."""
    with pytest.raises(DueDateError, match=r"'Etc/GMT\+4' is 4 hours behind UTC.*-04:00"):
        zone_named("Etc/GMT+4")
    assert zone_named("Etc/GMT").key == "Etc/GMT"
    assert zone_named("GMT").key == "GMT"


@pytest.mark.parametrize(
    "local, said",
    [("2026-03-29 02:30", "never happens"), ("2026-10-25 02:30", "happens twice")],
)
def test_a_local_time_the_clocks_skip_or_repeat_is_refused(local, said):
    with pytest.raises(DueDateError, match=said) as raised:
        parse_moment(local, "Europe/Berlin")
    assert "+01:00" in str(raised.value)


def test_an_unknown_lesson_suggests_the_closest(tmp_path):
    path = _file(tmp_path, f"{L1[:-2]},2026-10-05T21:59:00Z\n")
    with pytest.raises(DueDateError) as raised:
        read_due_dates(path, lessons())
    assert str(raised.value) == f"{path}, line 2: no lesson {L1[:-2]!r}: did you mean {L1}?"


def test_a_lesson_listed_twice_names_both_lines(tmp_path):
    path = _file(
        tmp_path,
        f"{L1},2026-10-05T21:59:00Z\n{L2},2026-10-05T21:59:00Z\n{L1},2026-10-06T21:59:00Z\n",
    )
    with pytest.raises(DueDateError, match=rf"due\.csv, line 4: {L1} is also on line 2"):
        read_due_dates(path, lessons())


@pytest.mark.parametrize("blank", [",\n", "\n", " , \n"])
def test_a_blank_row_is_refused(tmp_path, blank):
    path = _file(tmp_path, f"{L1},2026-10-05T21:59:00Z\n{blank}{L2},2026-10-05T21:59:00Z\n")
    with pytest.raises(DueDateError, match=r"due\.csv, line 3: blank row"):
        read_due_dates(path, lessons())


def test_a_lesson_without_a_date_is_refused(tmp_path):
    path = _file(tmp_path, f"{L1},\n")
    with pytest.raises(DueDateError, match=rf"line 2: no due date for {L1}"):
        read_due_dates(path, lessons())


def test_a_file_without_the_columns_says_which_it_has(tmp_path):
    path = tmp_path / "due.csv"
    path.write_text("assignment,deadline\nx,y\n")
    with pytest.raises(
        DueDateError, match=r"line 1: .* \(the columns are 'assignment', 'deadline'\)"
    ):
        read_due_dates(path, lessons())


@pytest.mark.parametrize(
    "name, said",
    [("EST", "not a time zone's IANA name"), ("CET", "abbreviations"), ("Mars/Olympus", "unknown")],
)
def test_a_course_time_zone_is_an_iana_name(name, said):
    with pytest.raises(DueDateError, match=said):
        zone_named(name)
    assert zone_named("America/Toronto").key == "America/Toronto"
    assert zone_named("UTC").key == "UTC"


def test_init_with_a_bad_due_date_writes_nothing(tmp_path):
    path = _file(tmp_path, f"{L1},10/05/2026 23:59\n")
    with pytest.raises(DueDateError, match="ambiguous"):
        init_course(tmp_path / "course", due_dates=path)
    assert not (tmp_path / "course").exists()


def test_init_with_a_bad_time_zone_writes_nothing(tmp_path):
    path = _file(tmp_path, f"{L1},2026-10-05 23:59\n")
    with pytest.raises(DueDateError, match="IANA"):
        init_course(tmp_path / "course", due_dates=path, time_zone="EDT")
    assert not (tmp_path / "course").exists()


def test_the_first_init_takes_due_dates_for_the_courses_own_assignments(tmp_path):
    """A course made with its own assignment already in source/ takes that assignment's due
    date at its first init, beside a lesson's, and records both in its gradebook."""
    notebook = EXAMPLE_CLASS / "submitted" / "alice" / lessons()[0] / f"{lessons()[0]}.ipynb"
    (tmp_path / "course" / "source" / "ps1").mkdir(parents=True)
    (tmp_path / "course" / "source" / "ps1" / "problem1.ipynb").write_bytes(notebook.read_bytes())
    dues = tmp_path / "due.csv"
    dues.write_text(f"lesson,due\nps1,2026-12-01T12:00:00Z\n{lessons()[0]},2026-12-02T12:00:00Z\n")
    course = init_course(tmp_path / "course", due_dates=dues)
    with course.api().gradebook as gb:
        assert gb.find_assignment("ps1").duedate == datetime(2026, 12, 1, 12, 0)
        assert gb.find_assignment(lessons()[0]).duedate == datetime(2026, 12, 2, 12, 0)
