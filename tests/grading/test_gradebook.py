"""The fast engine's gradebook writes are stock nbgrader's, row for row: for a first grading, a
late submission with a penalty, a manual grade the instructor gave, and a second grading."""

import shutil

import pytest
from gradebook_rows import gradebook_rows
from sqlalchemy import event

from grader.commands.init import init_course
from grader.course import EXAMPLE_CLASS, lessons
from grader.grading import outcomes
from grader.grading.class_run import autograde
from grader.grading.database import sqlalchemy_engine
from grader.grading.gradebook import add_student, ensure_student

pytestmark = pytest.mark.integration

LESSON = lessons()[0]
ON_TIME, LATE = "alice", "erin"  # erin submitted after the due date


def _course(root):
    course = init_course(root, due_dates=EXAMPLE_CLASS / "due_dates.csv")
    with open(course.root / "nbgrader_config.py", "a") as config:
        config.write('c.LateSubmissionPlugin.penalty_method = "zero"\n')
    for student in (ON_TIME, LATE):
        source = EXAMPLE_CLASS / "submitted" / student / LESSON
        shutil.copytree(source, course.root / "submitted" / student / LESSON)
    return course


def _grade_by_hand(course, student: str, cell: str, score: float) -> None:
    """What an instructor does in the formgrader: a manual score for one cell."""
    with course.api().gradebook as gb:
        gb.find_grade(cell, LESSON, LESSON, student).manual_score = score
        gb.db.commit()


def test_gradings_write_what_stock_nbgrader_writes(tmp_path):
    stock, fast = _course(tmp_path / "stock"), _course(tmp_path / "fast")
    for course, engine in ((stock, "nbgrader"), (fast, "fast")):
        autograde(course, LESSON, engine=engine)
    first = gradebook_rows(fast)
    assert first == gradebook_rows(stock)
    notebooks = {row[1]: row for row in first["notebook"]}
    assert notebooks[LATE][4] > 0  # the "zero" penalty: every point the late one earned
    assert notebooks[ON_TIME][4] is None

    cell = next(row[3] for row in first["grade"] if row[1] == ON_TIME)
    for course, engine in ((stock, "nbgrader"), (fast, "fast")):
        _grade_by_hand(course, ON_TIME, cell, 0.5)
        autograde(course, LESSON, engine=engine, force=True)  # graded a second time
    second = gradebook_rows(fast)
    assert second == gradebook_rows(stock)
    assert len(second["grade"]) == len(first["grade"])  # updated, not added again
    manual = next(row for row in second["grade"] if row[1] == ON_TIME and row[3] == cell)
    assert manual[5] == 0.5 and manual[7]  # kept, and flagged for the instructor's review


def test_a_student_the_other_grading_process_added_meanwhile_is_not_an_error(tmp_path):
    """In a class of one, both grading processes may add the same student, each for another
    lesson: the one that adds it second finds it there and goes on."""
    from sqlalchemy import text

    course = init_course(tmp_path / "course")
    engine = sqlalchemy_engine(course.db_url)
    ensure_student(engine, "dana")
    add_student(engine, "dana")  # as if looked for before the other process committed
    ensure_student(engine, "dana")
    with engine.connect() as db:
        assert db.execute(text("SELECT id FROM student")).scalars().all() == ["dana"]


def test_a_notebooks_grade_and_comment_rows_are_found_without_reading_the_whole_table(tmp_path):
    """nbgrader indexes these rows by cell first; the fast engine adds an index by notebook,
    or each graded notebook would read every row of the class."""
    course = _course(tmp_path / "course")
    engine = sqlalchemy_engine(course.db_url)
    plans = {}
    for when in ("before", "after"):
        if when == "after":
            autograde(course, LESSON, jobs=1)
        with engine.connect() as db:
            for table in ("grade", "comment"):
                query = f"EXPLAIN QUERY PLAN SELECT id FROM {table} WHERE notebook_id = 'x'"
                plans[when, table] = " ".join(str(row[-1]) for row in db.exec_driver_sql(query))
    assert plans["before", "grade"] == "SCAN grade", plans  # as nbgrader makes the gradebook
    assert plans["after", "grade"].startswith("SEARCH grade USING INDEX ix_grade_notebook_id")
    assert plans["after", "comment"].startswith("SEARCH comment USING INDEX ix_comment_")


def test_a_grading_stopped_while_its_outcome_is_written_leaves_the_gradebook_as_it_was(
    tmp_path, monkeypatch, grading_session
):
    """A submission's grades and its outcome are committed together: an instructor's Ctrl-C
    while the outcome is written leaves no grade behind, and the next run grades it."""
    course = _course(tmp_path / "course")
    before = gradebook_rows(course)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(outcomes.OUTCOMES, "insert", interrupted)
        with pytest.raises(KeyboardInterrupt):
            autograde(course, LESSON, [ON_TIME], session=grading_session)
    assert gradebook_rows(course)["submission"] == before["submission"] == []
    assert gradebook_rows(course)["grade"] == before["grade"]
    assert outcomes.read_all(course.db_url) == {}

    [result] = autograde(course, LESSON, [ON_TIME], session=grading_session)  # no --force
    assert result.outcome == "graded" and result.score > 0
    assert (LESSON, ON_TIME) in outcomes.read_all(course.db_url)


def test_grading_a_submission_again_commits_once(tmp_path, grading_session):
    """Grades, comments, lateness and outcome go to the gradebook in one transaction: one
    commit, and one wait for the disk, per graded notebook (a grading call makes a few more
    of its own, however many notebooks it grades)."""
    course = _course(tmp_path / "course")
    autograde(course, LESSON, session=grading_session)  # adds the students' rows
    engine = sqlalchemy_engine(course.db_url)
    commits = {}
    for students in ([ON_TIME], [ON_TIME, LATE]):
        counted = []

        def count(connection, counted=counted):
            counted.append(connection)

        event.listen(engine, "commit", count)
        try:
            results = autograde(course, LESSON, students, session=grading_session, force=True)
        finally:
            event.remove(engine, "commit", count)
        assert {r.outcome for r in results} == {"graded"}
        commits[len(students)] = len(counted)
    assert commits[2] - commits[1] == 1, commits
