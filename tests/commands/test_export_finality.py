"""Every number that leaves says where it comes from: export, the LMS imports and the score table
mark (or hold back) a grade that is not final, and say why; a changed late policy or due date is
applied by the next autograde, and nothing is exported with the old penalty meanwhile."""

import csv
import shutil
import zipfile
from datetime import datetime

import pytest

from grader.commands.collect import collect
from grader.commands.export import export, grade_rows
from grader.commands.init import init_course, set_due_dates
from grader.commands.report import _pass_rates, write_report
from grader.commands.score_table import score_table
from grader.compat import UTC
from grader.course import EXAMPLE_CLASS
from grader.grading import outcomes
from grader.grading.class_run import autograde, fingerprint
from grader.grading.finality import finality_of, late_by
from grader.grading.results import scores_of
from grader.lms.grade_import import canvas_import, moodle_import, notes_for
from grader.lms.roster import COLUMNS, ROSTER_FILE
from grader.lms.time_estimates import DOWNLOAD, estimated_from
from grader.outcome import Outcome

L1 = "01_tensors_and_requires_grad"  # 3 exercises, 6 points
L2 = "02_grad_fn_and_the_graph"
L3 = "03_backward_and_scalar_outputs"
DUE = datetime(2026, 10, 5, 23, 59, tzinfo=UTC)


def _submit(course, student: str, lesson: str = L1, stamp: str | None = None) -> None:
    """Collect the example class's alice's notebook of `lesson` as `student`'s."""
    folder = course.submission(student, lesson)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE_CLASS / "submitted" / "alice" / lesson / f"{lesson}.ipynb", folder)
    if stamp:
        (folder / "timestamp.txt").write_text(stamp)


def _enter(course, student: str, scores, *, pending=(), penalty=0.0, stamp=None) -> None:
    """Enter `student`'s L1 as a grading run leaves it: these scores, the cells in `pending`
    awaiting a manual grade, the outcome recorded for the files now collected."""
    with course.api().gradebook as gb:
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(L1, student, timestamp=stamp)
        notebook = submission.notebooks[0]
        for grade, score in zip(sorted(notebook.grades, key=lambda g: g.name), scores, strict=True):
            grade.auto_score = score
            grade.needs_manual_grade = grade.name in pending
        notebook.late_submission_penalty = penalty
        gb.db.commit()
    stamp_of = fingerprint(course.submission(student, L1))
    outcomes.record(course.db_url, L1, student, Outcome.GRADED, "", stamp_of)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Five students of L1: ann graded and final; ben collected, never graded; cat graded, then
    a newer file collected; dan graded with a cell awaiting a manual grade; eve graded late,
    her time Canvas's download's (an estimate), as collect found it."""
    course = init_course(tmp_path_factory.mktemp("finality") / "c", late_policy="per-day:10%")
    set_due_dates(course, {L1: DUE})
    for student in ("ann", "ben", "cat", "dan"):
        _submit(course, student)
    _collect_late_from_canvas(course, tmp_path_factory.mktemp("download"))
    _enter(course, "ann", [2, 2, 2])
    _enter(course, "cat", [2, 0, 2])
    _enter(course, "dan", [2, 2, 0], pending={_cells(course)[2]})
    _enter(course, "eve", [2, 2, 2], penalty=1.2, stamp=datetime(2026, 10, 7, 9, 30))
    notebook = course.submission("cat", L1) / f"{L1}.ipynb"
    notebook.write_text(notebook.read_text().replace("requires_grad", "requires_grad "))
    return course


def _cells(course) -> list[str]:
    with course.api().gradebook as gb:
        return sorted(cell.name for cell in gb.find_notebook(L1, L1).grade_cells)


def _collect_late_from_canvas(course, tmp_path) -> None:
    """eve's L1 from a Canvas download made 2026-10-07 09:30 UTC (33 h 31 min after DUE), her
    file marked late: Canvas's download holds no submission time, so collect gives it the
    download's."""
    with open(course.root / ROSTER_FILE, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerow({"id": "eve", "first_name": "Eve", "last_name": "Adams", "lms_id": "4242"})
    notebook = (EXAMPLE_CLASS / "submitted" / "alice" / L1 / f"{L1}.ipynb").read_bytes()
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        entry = zipfile.ZipInfo(f"adamseve_late_4242_777_{L1}.ipynb", (2026, 10, 7, 9, 30, 0))
        archive.writestr(entry, notebook)
    run = collect(download, course, timezone="UTC")
    assert [p.student for p in run.placed] == ["eve"], run.lines()


def _rows(course) -> dict:
    return {r["student_id"]: r for r in grade_rows(course)[1] if r["assignment"] == L1}


def test_each_grade_says_whether_it_is_final_and_why_not(course):
    """ann is final; ben has no score (not 0); cat's was computed from an older file; dan has
    2 points awaiting a manual grade; eve's lateness is the download's time."""
    rows = _rows(course)
    assert (rows["ann"]["final"], rows["ann"]["why_not_final"], rows["ann"]["score"]) == (
        "yes",
        "",
        6.0,
    )
    ben = rows["ben"]
    assert (ben["final"], ben["outcome"], ben["score"], ben["raw_score"]) == (
        "no",
        "not graded",
        "",
        "",
    )
    assert ben["why_not_final"] == "not graded yet: run grader autograde"
    assert rows["cat"]["final"] == "no" and rows["cat"]["score"] == 4.0
    assert rows["cat"]["why_not_final"].startswith(
        "graded from an older file than the one collected"
    )
    assert rows["dan"]["why_not_final"] == "2 points await a manual grade"
    assert rows["eve"]["why_not_final"].startswith(
        f"lateness estimated from {DOWNLOAD} (1 d 9 h 31 min late by it)"
    )


def test_the_grades_csv_holds_no_zero_for_a_grade_not_given(course, tmp_path):
    """In the file a spreadsheet opens: ben's score cells are empty, and the why is there."""
    with open(export(course, tmp_path / "grades.csv"), newline="") as handle:
        ben = next(r for r in csv.DictReader(handle) if r["student_id"] == "ben")
    assert (ben["raw_score"], ben["score"], ben["final"]) == ("", "", "no")


def test_the_lms_imports_send_no_grade_that_is_not_final(course, tmp_path):
    """Canvas keeps what it holds for a blank cell: cat's, dan's and eve's cells are blank.
    Moodle clears a grade given blank: their rows are left out. The notes say who and why."""
    canvas = canvas_import(course, tmp_path / "canvas.csv", lessons=[L1])
    with open(canvas, newline="") as handle:
        cells = {row[1] or row[3]: row[5] for row in list(csv.reader(handle))[2:]}
    assert cells == {"ann": "6", "cat": "", "dan": "", "4242": ""}  # ben: in no gradebook yet
    with open(notes_for(canvas), newline="") as handle:
        notes = {(r["student"], r["outcome"]): r["detail"] for r in csv.DictReader(handle)}
    assert notes[("dan", "not final")] == "2 points await a manual grade"
    assert notes[("ben", "not final")] == "not graded yet: run grader autograde"
    moodle = moodle_import(course, tmp_path / "moodle.csv", lessons=[L1])
    with open(moodle, newline="") as handle:
        assert [row[0] for row in csv.reader(handle)] == ["Username", "ann"]
    with open(notes_for(moodle), newline="") as handle:
        left_out = {r["student"] for r in csv.DictReader(handle) if r["outcome"] == "left out"}
    assert left_out == {"cat", "dan", "eve"}


def test_the_score_table_marks_what_is_not_final(course):
    """With the course, the table shows `-` for a score not given yet and why each is not final."""
    results = scores_of(course, L1, ["ann", "ben", "dan"])
    table = {line.split()[1]: line for line in score_table(results, course).splitlines()[1:]}
    assert table["ann"].endswith("yes")
    assert table["ben"].split()[2] == "-" and "no: not graded yet" in table["ben"]
    assert table["dan"].endswith("no: 2 points await a manual grade")


def test_an_estimate_written_over_by_hand_is_no_longer_one(course):
    """Once the real time replaces the download's in timestamp.txt, it is no estimate."""
    assert estimated_from(course.root, "eve", L1) == DOWNLOAD
    stamp = course.submission("eve", L1) / "timestamp.txt"
    collected = stamp.read_text()
    try:
        stamp.write_text("2026-10-06 08:00:00 UTC")
        assert estimated_from(course.root, "eve", L1) is None
    finally:
        stamp.write_text(collected)


def test_only_the_assignments_the_course_uses_have_rows(course):
    """L1 was handed in; the kit's other lessons, with no due date and no submission, are not
    listed for every student."""
    assert {r["assignment"] for r in grade_rows(course)[1]} == {L1}


def test_the_report_says_how_many_grades_are_not_final(course, tmp_path):
    """The report counts the graded submissions and says how many grades are not final."""
    page = write_report(course, tmp_path / "report").read_text()
    assert "4 graded submissions. 4 grades are not final yet" in page


def test_the_pass_rate_chart_names_each_exercise_with_its_assignment():
    """Two assignments with an exercise of one name are two bars, each named with its own."""
    rows = [
        {"assignment": "ps1", "squares": 1.0},
        {"assignment": "ps1", "squares": 0.0},
        {"assignment": "ps2", "squares": 2.0},
    ]
    assert _pass_rates(rows, ["squares"]) == {"ps1: squares": 0.5, "ps2: squares": 1.0}


def test_autograde_says_a_lateness_from_the_downloads_time_is_an_estimate(course):
    """eve's time is Canvas's download's: the outcome's lateness says it is estimated, and
    from what; written over by hand in timestamp.txt, it no longer does."""
    from grader.grading.class_run import _late
    from grader.grading.tasks import GradingTask

    task = GradingTask(course, L1, "eve", None, None)
    assert _late(33 * 3600 + 31 * 60, task) == (
        "submitted 1 d 9 h 31 min late (estimated from the download's time)"
    )
    assert _late(0, task) == ""


def test_lateness_is_shown_to_the_minute():
    """A part of a minute counts as one, as a late policy counts it: 30 s late is not 0 h."""
    assert late_by(30) == "1 min"
    assert late_by(38 * 3600 + 12 * 60) == "1 d 14 h 12 min"
    assert late_by(3 * 3600) == "3 h"


def test_a_changed_late_policy_is_applied_by_the_next_autograde(tmp_path, grading_session):
    """erin is 33 h late: graded under per-day:10% she loses 2 of 6 × 10 %; init with zero marks
    her, export gives no penalty nor score until autograde has graded her again, with 0."""
    course = init_course(tmp_path / "c", late_policy="per-day:10%")
    set_due_dates(course, {L1: DUE})
    late = course.submission("erin", L1)
    shutil.copytree(EXAMPLE_CLASS / "submitted" / "erin" / L1, late)
    _submit(course, "ann", stamp="2026-10-04 18:00:00.000000 UTC")  # on time: not marked
    (before,) = autograde(course, L1, ["erin"], session=grading_session)
    autograde(course, L1, ["ann"], session=grading_session)
    assert before.penalty > 0 and before.final < before.score
    assert "submitted 1 d 9 h 31 min late" in before.detail and "estimated" not in before.detail

    init_course(course.root, late_policy="zero")
    rows = _rows(course)
    erin = rows["erin"]
    assert (erin["final"], erin["late_submission_penalty"], erin["score"]) == ("no", "", "")
    assert erin["raw_score"] == before.score
    assert erin["why_not_final"] == (
        "to be graded again: the late policy changed from per-day:10% to zero"
    )
    assert rows["ann"]["final"] == "yes"

    (after,) = autograde(course, L1, ["erin"], session=grading_session)
    assert (after.final, after.penalty) == (0.0, before.score)
    assert _rows(course)["erin"]["final"] == "yes"
    assert finality_of(course)[(L1, "erin")].final


def test_a_changed_due_date_marks_the_submissions_it_makes_late(tmp_path):
    """Moving the due date marks a graded submission late by the old or the new one; one on
    time by both is left as it is."""
    course = init_course(tmp_path / "c", late_policy="per-day:10%")
    set_due_dates(course, {L1: DUE})
    for student, stamp in (("early", datetime(2026, 10, 1)), ("mid", datetime(2026, 10, 5))):
        _submit(course, student)
        _enter(course, student, [2, 2, 2], stamp=stamp)
    marked = set_due_dates(course, {L1: datetime(2026, 10, 3, 12, 0, tzinfo=UTC)})
    assert marked == [(L1, "mid")]
    why = finality_of(course)[(L1, "mid")].reasons
    assert why == (
        f"to be graded again: {L1}'s due date changed from 2026-10-05 23:59 UTC to"
        " 2026-10-03 12:00 UTC",
    )
