"""`grader init` with a roster, due dates, a time zone and a late policy, and `grader extend`:
what lands in the course, and an extension's effect on lateness and regrading."""

from datetime import datetime, timedelta

import pytest

from grader.commands.extend import ExtensionError, extend, mark_for_regrading
from grader.commands.init import init_course
from grader.compat import UTC
from grader.course import NoSuchLesson, lessons
from grader.grading import outcomes
from grader.lms.due_dates import DueDateError, course_time_zone
from grader.lms.late_policy import (
    CourseLatePolicy,
    describe_late_policy,
    late_penalty_plugin,
    parse_policy,
    policy_in_force,
)
from grader.lms.roster import RosterError, Student, load_roster
from grader.outcome import Outcome

L1, L2 = lessons()[:2]
DUE = datetime(2026, 10, 6, 3, 59, tzinfo=UTC)  # 23:59 in Toronto, summer time


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """alice and bob on a plain roster; L1 due at 23:59 Toronto time, L2 with no due date;
    10% off per day late."""
    files = tmp_path_factory.mktemp("files")
    roster = files / "roster.csv"
    roster.write_text(
        "id,first_name,last_name,email,lms_id\nalice,Alice,Archer,a@x.edu,4101\nbob,Bob,,,\n"
    )
    due = files / "due.csv"
    due.write_text(f"lesson,due\n{L1},2026-10-05 23:59\n")
    return init_course(
        tmp_path_factory.mktemp("extend") / "course",
        roster=roster,
        due_dates=due,
        time_zone="America/Toronto",
        late_policy="per-day:10%",
    )


def test_init_enters_the_roster_in_the_gradebook_and_keeps_it(course):
    assert load_roster(course.root) == [
        Student("alice", "Alice", "Archer", "a@x.edu", "4101"),
        Student("bob", "Bob"),
    ]
    with course.api().gradebook as gb:
        alice = gb.find_student("alice")
        assert (alice.first_name, alice.last_name, alice.email) == ("Alice", "Archer", "a@x.edu")
        assert alice.lms_user_id == "4101"
        assert gb.find_student("bob").email is None


def test_init_sets_due_dates_in_utc_read_in_the_course_time_zone(course):
    assert course_time_zone(course) == "America/Toronto"
    with course.api().gradebook as gb:
        assert gb.find_assignment(L1).duedate == DUE.replace(tzinfo=None)
        assert gb.find_assignment(L2).duedate is None


def test_init_writes_the_late_policy_both_engines_use(course):
    config = course.config()
    assert policy_in_force(config) == parse_policy("per-day:10%")
    plugin = late_penalty_plugin(config)
    assert isinstance(plugin, CourseLatePolicy)
    assert plugin.late_submission_penalty("alice", 10.0, 30 * 3600) == pytest.approx(2.0)
    assert describe_late_policy(course).startswith("late policy: per-day:10%")


def test_a_failed_init_leaves_the_course_as_it_was(course, tmp_path):
    before = {p: p.read_bytes() for p in course.root.rglob("*") if p.is_file()}
    bad = tmp_path / "roster.csv"
    bad.write_text("id\ncarol\ncarol\n")
    with pytest.raises(RosterError):
        init_course(course.root, roster=bad, late_policy="zero")
    due = tmp_path / "due.csv"
    due.write_text(f"lesson,due\n{L1},2026-10-05\n")
    with pytest.raises(DueDateError):
        init_course(course.root, due_dates=due, late_policy="zero")
    after = {p: p.read_bytes() for p in course.root.rglob("*") if p.is_file()}
    assert after == before


def test_extend_sets_nbgrader_extension_past_the_due_date(course):
    given = extend(course, "alice", L1, DUE + timedelta(days=2))
    assert given == timedelta(days=2)
    with course.api().gradebook as gb:
        assert gb.find_submission(L1, "alice").extension == timedelta(days=2)


def test_an_extension_given_before_anything_is_handed_in_is_no_submission(course):
    """The gradebook row an extension makes before the student submits is exported as no
    submission, not as work graded 0."""
    from grader.commands.export import grade_rows

    extend(course, "alice", L1, DUE + timedelta(days=2))
    (row,) = [
        r for r in grade_rows(course)[1] if (r["assignment"], r["student_id"]) == (L1, "alice")
    ]
    assert row["outcome"] == "no submission"


def test_extend_reads_text_in_the_course_time_zone(course):
    assert extend(course, "bob", L1, "2026-10-06 23:59") == timedelta(days=1)
    with pytest.raises(DueDateError, match="12-hour"):
        extend(course, "bob", L1, "2026-10-06 11:59 PM")


def test_an_extension_makes_a_late_submission_on_time(course):
    extend(course, "bob", L1, DUE)  # whatever other tests gave him
    with course.api().gradebook as gb:
        gb.update_or_create_submission(L1, "bob", timestamp=DUE + timedelta(hours=30))
        assert gb.find_submission(L1, "bob").total_seconds_late > 0
    extend(course, "bob", L1, DUE + timedelta(hours=30))
    with course.api().gradebook as gb:
        assert gb.find_submission(L1, "bob").total_seconds_late == 0
    extend(course, "bob", L1, DUE)  # at the due date: the extension is taken back
    with course.api().gradebook as gb:
        submission = gb.find_submission(L1, "bob")
        assert submission.extension is None
        assert submission.total_seconds_late == 30 * 3600


def test_extend_marks_a_graded_submission_for_regrading(course):
    outcomes.record(course.db_url, L1, "alice", Outcome.GRADED, "submitted 5.0 h late", "abc")
    extend(course, "alice", L1, DUE + timedelta(days=1))
    assert outcomes.read_all(course.db_url)[(L1, "alice")] == (
        "graded",
        "submitted 5.0 h late",
        "",
    )
    assert mark_for_regrading(course, "nobody", L1) is False


@pytest.mark.parametrize(
    "student, assignment, until, error, said",
    [
        ("alicia", L1, DUE, ExtensionError, "no student 'alicia'.*did you mean alice"),
        ("zed", L1, DUE, ExtensionError, "no student 'zed' in the course's gradebook"),
        ("alice", "99_nope", DUE, NoSuchLesson, "no such lesson: 99_nope"),
        ("alice", L2, DUE, ExtensionError, f"{L2} has no due date"),
        ("alice", L1, DUE - timedelta(minutes=1), ExtensionError, "is before"),
        ("alice", L1, DUE.replace(tzinfo=None), ExtensionError, "no time zone"),
    ],
)
def test_extend_refuses(course, student, assignment, until, error, said):
    with pytest.raises(error, match=said):
        extend(course, student, assignment, until)


def test_refreshing_the_course_keeps_its_time_zone_and_policy(course):
    init_course(course.root)
    assert course_time_zone(course) == "America/Toronto"
    assert policy_in_force(course.config()) == parse_policy("per-day:10%")
    with course.api().gradebook as gb:
        assert gb.find_assignment(L1).duedate == DUE.replace(tzinfo=None)


def test_the_extend_command_says_the_new_deadline(course, capsys):
    """`grader extend` prints the deadline it set, in UTC, and how far past the due date."""
    from grader.cli import main

    args = ["extend", "bob", L1, "--until", "2026-10-07T23:59-04:00"]
    assert main([*args, "--course-dir", str(course.root)]) == 0
    said = capsys.readouterr().out
    assert f"bob: {L1} now due 2026-10-08 03:59 UTC (48 h after its due date)" in said
