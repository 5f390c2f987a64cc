"""A course whose gradebook is a PostgreSQL database grades, reruns and exports as with SQLite.

The test starts its own PostgreSQL server on a Unix socket in a temporary folder (the server
programs come from Debian's postgresql package, which .ci/run installs).
"""

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

import pytest
from pinned_scores import PINNED

from grader.commands.export import export
from grader.commands.init import init_course
from grader.course import EXAMPLE_CLASS, Course
from grader.grading.class_run import autograde
from grader.grading.database import sqlalchemy_engine
from grader.grading.results import Result

pytestmark = pytest.mark.integration  # grades or serves whole courses through the real pipeline

LESSONS = ["01_tensors_and_requires_grad", "04_retain_graph_and_accumulation"]


def _program(name: str) -> str:
    found = shutil.which(name) or next(iter(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")), None)
    assert found, f"{name} is missing: apt-get install postgresql"
    return found


def _as_server_user(folder: Path) -> list[str]:
    """Run as the postgres user when we are root: the server refuses to run as root."""
    if os.geteuid() != 0:
        return []
    shutil.chown(folder, "postgres")
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]


@pytest.fixture(scope="module")
def postgres_url():
    """A throwaway PostgreSQL server and database; its SQLAlchemy URL."""
    folder = Path(tempfile.mkdtemp(prefix="pg", dir="/tmp"))
    user = _as_server_user(folder)
    data = folder / "data"
    quiet = {"check": True, "capture_output": True}
    initdb = [*user, _program("initdb"), "-D", data, "-U", "postgres", "-A", "trust"]
    subprocess.run(initdb, **quiet)
    options = f"-k {folder} -c listen_addresses=''"
    pg_ctl = _program("pg_ctl")
    start = [*user, pg_ctl, "-D", data, "-o", options, "-w", "-l", folder / "log", "start"]
    subprocess.run(start, **quiet)
    try:
        createdb = [_program("createdb"), "-h", folder, "-U", "postgres", "gradebook"]
        subprocess.run(createdb, **quiet)
        yield f"postgresql+psycopg2://postgres@/gradebook?host={folder}"
    finally:
        subprocess.run([*user, pg_ctl, "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


class Graded(NamedTuple):
    """A course graded into PostgreSQL, and its results."""

    course: Course
    results: list[Result]


@pytest.fixture(scope="module")
def graded(postgres_url, tmp_path_factory):
    """The example class's first and fourth lessons, graded into PostgreSQL with two jobs."""
    course = init_course(
        tmp_path_factory.mktemp("pg_course") / "course",
        roster=EXAMPLE_CLASS / "roster.csv",
        due_dates=EXAMPLE_CLASS / "due_dates.csv",
        db_url=postgres_url,
    )
    for student in (EXAMPLE_CLASS / "submitted").iterdir():
        for lesson in LESSONS:
            shutil.copytree(student / lesson, course.root / "submitted" / student.name / lesson)
    results = autograde(course, LESSONS, jobs=2)
    return Graded(course, results)


def test_the_gradebook_is_the_postgresql_database(graded):
    """No SQLite file appears: nbgrader and the outcomes table both use the URL."""
    course, _ = graded
    assert not (course.root / "gradebook.db").exists()


def test_postgresql_gets_the_notebook_indexes_too(graded):
    """The fast engine's indexes of grade and comment rows by notebook are made there as well."""
    course, _ = graded
    with sqlalchemy_engine(course.db_url).connect() as db:
        names = {row[0] for row in db.exec_driver_sql("SELECT indexname FROM pg_indexes")}
    assert {"ix_grade_notebook_id", "ix_comment_notebook_id"} <= names


def test_grades_in_postgresql_are_the_pinned_scores(graded):
    """Two workers writing at once give every submission its pinned score and one outcome."""
    _, results = graded
    assert {(r.lesson, r.student): r.score for r in results} == {
        key: score for key, score in PINNED.items() if key[0] in LESSONS
    }
    assert {r.outcome for r in results} == {"graded"}


def test_a_rerun_against_postgresql_grades_nothing_again(graded):
    """Outcomes recorded in PostgreSQL let a second run skip every submission."""
    course, results = graded
    notebooks = sorted((course.root / "autograded").glob(f"*/{LESSONS[0]}/*.ipynb"))
    written = [p.stat().st_mtime_ns for p in notebooks]
    again = autograde(course, LESSONS[0], jobs=2)
    assert [p.stat().st_mtime_ns for p in notebooks] == written
    assert again == [r for r in results if r.lesson == LESSONS[0]]


def test_export_reads_the_grades_from_postgresql(graded, tmp_path):
    """The grades CSV comes out of the PostgreSQL gradebook."""
    course, results = graded
    out = tmp_path / "grades.csv"
    export(course, out)
    text = out.read_text()
    for result in results:
        assert result.student in text
