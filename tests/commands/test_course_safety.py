"""Mistakes that used to pass silently: a command with no course, two runs at once, Ctrl-C."""

import os
import shutil

import pytest

from grader.cli import main
from grader.commands.init import init_course
from grader.course import EXAMPLE_CLASS, REPO_ROOT, lessons
from grader.grading import class_run
from grader.grading.course_lock import grading_lock

LESSON = lessons()[0]
WRITING = [
    ["collect", str(EXAMPLE_CLASS / "submitted")],
    ["autograde", "--all"],
    ["feedback", LESSON],
    ["export"],
    ["report"],
]


def _listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if ".venv" not in p.parts)


@pytest.mark.parametrize("where", ["repository", "plain folder"])
def test_a_command_that_writes_refuses_without_a_course(where, tmp_path, monkeypatch, capsys):
    """Without --course-dir, in the repository or a folder that is no course, every command that
    writes stops with one line saying to give --course-dir, and writes nothing."""
    folder = REPO_ROOT if where == "repository" else tmp_path
    monkeypatch.chdir(folder)
    before = _listing(folder) if folder == tmp_path else None
    for command in WRITING:
        assert main(command) == 2, command
        said = capsys.readouterr().err
        assert "give --course-dir DIR" in said and said.count("\n") == 1, said
    assert before is None or _listing(folder) == before
    assert not (REPO_ROOT / "grades.csv").exists() and not (REPO_ROOT / "report").exists()


@pytest.mark.parametrize("inside", [".", "example_class", "solutions/new_course"])
def test_init_refuses_a_folder_of_the_repository(inside, capsys):
    """`grader init` on the repository, or a folder in it other than build/, stops with one line
    and changes nothing there (the repository's config is every course's)."""
    config = (REPO_ROOT / "nbgrader_config.py").read_text()
    existed = (REPO_ROOT / inside).exists()
    assert main(["init", str(REPO_ROOT / inside)]) == 2
    assert "is in the kit's repository: make the course in a folder of its own" in (
        capsys.readouterr().err
    )
    assert (REPO_ROOT / "nbgrader_config.py").read_text() == config
    assert (REPO_ROOT / inside).exists() == existed
    assert inside == "." or not (REPO_ROOT / inside / "nbgrader_config.py").exists()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course with one submission."""
    course = init_course(tmp_path_factory.mktemp("safety") / "course")
    shutil.copytree(
        EXAMPLE_CLASS / "submitted" / "alice" / LESSON, course.submission("alice", LESSON)
    )
    return course


def test_a_second_autograde_of_the_same_course_refuses(course, capsys):
    """While one run holds the course's grading lock, another stops at once and says why."""
    with grading_lock(course):
        assert main(["autograde", LESSON, "--course-dir", str(course.root)]) == 2
    said = capsys.readouterr().err
    assert f"course {course.root}" in said  # the course it works on is named first
    assert "is being graded by another `grader autograde`" in said
    assert f"pid {os.getpid()}" in said


def test_ctrl_c_stops_grading_with_one_line(course, capsys, monkeypatch):
    """Ctrl-C while grading ends the command with status 130 and one line saying what was kept
    and that running again continues: no traceback; the lock is free again."""

    def interrupted(self, tasks, bar):
        raise KeyboardInterrupt

    monkeypatch.setattr(class_run.GradingSession, "grade", interrupted)
    args = ["autograde", LESSON, "--course-dir", str(course.root), "--force"]
    assert main(args) == 130
    said = capsys.readouterr().err
    assert "Traceback" not in said
    assert said.strip().splitlines()[-1] == (
        "grader: interrupted after grading 0 of 1 submissions; they are kept:"
        " run the same command again to continue"
    )
    with grading_lock(course):  # released
        pass
