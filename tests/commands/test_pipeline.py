"""The instructor pipeline on the example class: grades, feedback, export and report agree."""

import csv
import html
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from feedback_secrets import secret_lines, secrets_shown
from nbgrader.apps import NbGraderAPI
from pinned_scores import PINNED

from grader.cli import main
from grader.commands.export import NBGRADER_COLUMNS
from grader.commands.init import init_course
from grader.commands.report import failure_explanations
from grader.course import EXAMPLE_CLASS, Course, lessons
from grader.grading.results import Result
from grader.judging.verdict import CELL_FAILED

pytestmark = pytest.mark.integration  # grades or serves whole courses through the real pipeline


class Demo(NamedTuple):
    """The demo's course folder, and the results it printed."""

    folder: Path
    results: list[Result]


@pytest.fixture(scope="session")
def demo(tmp_path_factory) -> Demo:
    """The demo's course folder and the score table it printed."""
    out = tmp_path_factory.mktemp("demo") / "course"
    from grader.commands.demo import run_demo

    return Demo(out, run_demo(out))


def test_demo_gives_every_example_submission_its_pinned_score(demo):
    """Each student of the example class gets the pinned score in every lesson."""
    _, results = demo
    assert {(r.lesson, r.student): r.score for r in results} == PINNED


def test_demo_leaves_every_artifact(demo):
    """Gradebook, autograded notebooks, feedback HTML, grades CSV and the report are written."""
    out, results = demo
    assert (out / "gradebook.db").exists() and (out / "grades.csv").exists()
    for r in results:
        assert (out / "autograded" / r.student / r.lesson / f"{r.lesson}.ipynb").exists()
        assert (out / "feedback" / r.student / r.lesson / f"{r.lesson}.html").exists()
    assert {p.name for p in (out / "report").iterdir()} == {
        "index.html",
        "scores.png",
        "pass_rates.png",
    }


def test_feedback_explains_failures_without_hidden_tests(demo):
    """bob's feedback gives each test its score and says why it failed, with no hidden test."""
    out, _ = demo
    page = out / "feedback/bob/01_tensors_and_requires_grad/01_tensors_and_requires_grad.html"
    text = html.unescape(page.read_text())
    assert "Score: 0 / 2\n" + CELL_FAILED in text
    assert "BEGIN HIDDEN TESTS" not in text and "random.randint" not in text
    assert "hidden tests ran here" in text


def test_stock_generate_feedback_writes_the_same_safe_pages(demo):
    """The formgrader's button runs stock `nbgrader generate_feedback`: in the demo course it
    uses the kit's steps, so its pages show no hidden test and no line of the probes."""
    out, results = demo
    lesson = "01_tensors_and_requires_grad"
    nbgrader = Path(sys.executable).parent / "nbgrader"
    done = subprocess.run(
        [str(nbgrader), "generate_feedback", lesson, "--force"], cwd=out, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    secrets = secret_lines(lesson)
    for student in {r.student for r in results if r.lesson == lesson}:
        page = (out / f"feedback/{student}/{lesson}/{lesson}.html").read_text()
        assert "### BEGIN HIDDEN TESTS" not in page and "Score: " in page
        assert secrets_shown(page, secrets) == [], student


def test_the_formgraders_generate_feedback_writes_the_same_safe_pages(demo):
    """The formgrader's Generate Feedback button calls NbGraderAPI.generate_feedback, per
    student, with the course's configuration: the page it writes is the kit's safe page."""
    out, results = demo
    lesson = "01_tensors_and_requires_grad"
    api = Course(out).api()
    secrets = secret_lines(lesson)
    for student in sorted({r.student for r in results if r.lesson == lesson}):
        page = out / f"feedback/{student}/{lesson}/{lesson}.html"
        page.unlink(missing_ok=True)
        done = api.generate_feedback(lesson, student)
        assert done["success"], done.get("error", "")[-2000:]
        text = page.read_text()
        assert "hidden tests ran here" in text and "Score: " in text, student
        assert secrets_shown(text, secrets) == [], student


def test_the_formgraders_button_behind_make_instructor_writes_the_same_safe_page(demo, tmp_path):
    """The button's request, sent to the formgrader that `make instructor` serves on the demo
    course: the server, with the configuration it loads itself, writes the kit's safe page."""
    import json
    import urllib.request

    from browser_tools import Lab

    from grader.course import REPO_ROOT

    out, _ = demo
    lesson, student = "01_tensors_and_requires_grad", "bob"
    page = out / f"feedback/{student}/{lesson}/{lesson}.html"
    page.unlink(missing_ok=True)
    lab = Lab(REPO_ROOT, "instructor", f"COURSE={out}", home=tmp_path)
    try:
        request = urllib.request.Request(
            f"{lab.url}/formgrader/api/assignment/{lesson}/{student}/generate_feedback",
            data=b"",
            method="POST",
            headers={"Authorization": f"token {lab.token}"},
        )
        with urllib.request.urlopen(request, timeout=300) as answer:
            done = json.loads(answer.read())
    finally:
        lab.stop()
    assert done["success"], done.get("error", "")[-2000:]
    text = page.read_text()
    assert "hidden tests ran here" in text and "Score: " in text
    assert secrets_shown(text, secret_lines(lesson)) == []


def test_export_matches_stock_nbgrader_export(demo, tmp_path):
    """`grader export` has nbgrader's columns with the same values, plus outcome and exercises."""
    out, _ = demo
    ours, stock = tmp_path / "ours.csv", tmp_path / "stock.csv"
    assert main(["export", "--course-dir", str(out), "--to", str(ours)]) == 0
    subprocess.run(
        [sys.executable, "-m", "nbgrader", "export", "--to", str(stock)],
        cwd=out,
        check=True,
        capture_output=True,
    )
    our_rows = list(csv.DictReader(ours.open()))
    stock_rows = list(csv.DictReader(stock.open()))
    key = lambda r: (r["assignment"], r["student_id"])  # noqa: E731
    assert sorted(stock_rows, key=key) == [
        {c: r[c] for c in NBGRADER_COLUMNS} for r in sorted(our_rows, key=key)
    ]
    bob = next(r for r in our_rows if key(r) == ("01_tensors_and_requires_grad", "bob"))
    assert bob["outcome"] == "graded" and bob["test_snapshot"] == "0.0"
    dave = next(r for r in our_rows if key(r) == ("01_tensors_and_requires_grad", "dave"))
    assert dave["test_make_leaf"] == "2.0" and dave["test_int_error"] == "0.0"


def test_formgrader_sees_the_same_scores(demo):
    """The formgrader's API (NbGraderAPI) reports the scores `grader` printed."""
    out, results = demo
    api = NbGraderAPI(Course(out).api().coursedir)
    for lesson in {r.lesson for r in results}:
        seen = {s["student"]: s["score"] for s in api.get_submissions(lesson)}
        assert seen == {r.student: r.score for r in results if r.lesson == lesson}


def test_report_names_the_common_failures(demo):
    """The report's table lists the failure explanations students got."""
    out, _ = demo
    page = (out / "report" / "index.html").read_text()
    assert "Most common failure explanations" in page
    (lesson, exercise, text), count = failure_explanations(Course(out)).most_common(1)[0]
    assert count >= 2
    assert f"<tr><td>{count}</td><td>{lesson}</td><td>{exercise}</td>" in page


def test_late_submission_is_marked(demo):
    """erin submitted after the due date: the outcome says how late."""
    _, results = demo
    erin = [r for r in results if r.student == "erin"]
    assert erin and all("late" in r.detail for r in erin)


@pytest.fixture(scope="module")
def fresh_course(tmp_path_factory):
    """A course made by `grader init`."""
    return init_course(tmp_path_factory.mktemp("init") / "course")


def test_init_makes_an_nbgrader_course_with_every_lesson(fresh_course):
    """The stock nbgrader API sees every lesson in the new course's gradebook."""
    with fresh_course.api().gradebook as gb:
        assert sorted(a.name for a in gb.assignments) == lessons()
    assert (fresh_course.root / "submitted").is_dir()


def test_solution_scores_full_marks_and_untouched_notebook_zero(
    fresh_course, lesson, grading_session
):
    """In a course made by init, the solution earns full marks and the blank notebook none."""
    from grader.course import solution_notebook, student_notebook
    from grader.grading.class_run import autograde

    for student, notebook in [
        ("ref", solution_notebook(lesson)),
        ("blank", student_notebook(lesson)),
    ]:
        folder = fresh_course.root / "submitted" / student / lesson
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{lesson}.ipynb").write_bytes(notebook.read_bytes())
    results = {
        r.student: r
        for r in autograde(fresh_course, lesson, ["ref", "blank"], session=grading_session)
    }
    assert results["ref"].score == results["ref"].max_score > 0
    assert results["blank"].score == 0
    assert results["ref"].outcome == results["blank"].outcome == "graded"


def test_unknown_lesson_and_non_course_are_clear_errors(fresh_course, tmp_path, capsys):
    """Naming a lesson that does not exist, or a folder that is no course, exits 2 and says so."""
    assert main(["autograde", "99_nope", "--course-dir", str(fresh_course.root)]) == 2
    assert "no such lesson: 99_nope" in capsys.readouterr().err
    assert main(["export", "--course-dir", str(tmp_path)]) == 2
    assert f"{tmp_path} is not a course: make it one with `grader init" in capsys.readouterr().err


def test_autograde_command_prints_the_score_table(fresh_course, capsys):
    """`grader autograde LESSON --student ID` grades one student and prints the table."""
    lesson = "01_tensors_and_requires_grad"
    folder = fresh_course.root / "submitted" / "alice" / lesson
    folder.mkdir(parents=True, exist_ok=True)
    source = EXAMPLE_CLASS / "submitted" / "alice" / lesson / f"{lesson}.ipynb"
    (folder / f"{lesson}.ipynb").write_bytes(source.read_bytes())
    args = ["autograde", lesson, "--course-dir", str(fresh_course.root), "--student", "alice"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    header = ["lesson", "student", "score", "max", "outcome", "review", "final"]
    assert lines[0].split() == header
    full = str(PINNED[(lesson, "alice")])  # alice answers everything right
    assert lines[1].split() == [lesson, "alice", full, full, "graded", "yes"]


def test_autograde_grades_several_lessons_or_all_in_one_call(tmp_path, capsys):
    """`grader autograde L1 L2` grades both lessons into one table; `--all` grades every lesson
    that has submissions; naming lessons and --all together is refused."""
    course = init_course(tmp_path / "course")
    first, second = lessons()[:2]
    for lesson in (first, second):
        folder = course.submission("alice", lesson)
        folder.mkdir(parents=True)
        source = EXAMPLE_CLASS / "submitted" / "alice" / lesson / f"{lesson}.ipynb"
        (folder / f"{lesson}.ipynb").write_bytes(source.read_bytes())
    where = ["--course-dir", str(course.root), "--jobs", "1"]
    assert main(["autograde", first, second, *where]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        (lesson, "alice", str(PINNED[(lesson, "alice")]), "graded") for lesson in (first, second)
    ]
    assert main(["autograde", "--all", "--force", *where]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [(r[0], r[1], r[4]) for r in rows] == [
        (first, "alice", "graded"),
        (second, "alice", "graded"),
    ]
    assert main(["autograde", first, "--all", *where]) == 2
    assert "name the lessons to grade, or give --all" in capsys.readouterr().err


def test_release_command_rejects_an_unknown_lesson(capsys):
    """`grader release` with a lesson that does not exist exits 2 and lists the known ones."""
    assert main(["release", "99_nope"]) == 2
    assert "no such lesson: 99_nope (known: 01_tensors_and_requires_grad" in capsys.readouterr().err


def test_the_instructor_sees_the_pinned_scores_in_the_formgrader(demo, tmp_path):
    """`make instructor COURSE=…` opens JupyterLab with the formgrader on the graded demo course,
    and each lesson's submissions page shows every student's pinned score."""
    from browser_tools import CHROMIUM, CHROMIUM_ARGS, Lab, Steps
    from playwright.sync_api import sync_playwright

    from grader.course import REPO_ROOT

    out, _ = demo
    lab = Lab(REPO_ROOT, "instructor", f"COURSE={out}", home=tmp_path)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            steps = Steps(page, "test_the_instructor_sees_the_pinned_scores_in_the_formgrader")
            with steps.step("open the lab"):
                page.goto(lab.link("/lab"))
                page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").wait_for()
            for lesson in lessons():
                with steps.step(f"scores of {lesson}"):
                    page.goto(f"{lab.url}/formgrader/manage_submissions/{lesson}")
                    page.locator("table tbody tr", has_text="alice").wait_for(timeout=60_000)
                    rows = page.locator("table tbody tr").all_inner_texts()
                    shown = {row.split("\t")[1]: row.split("\t")[4] for row in rows}
                    wanted = {s: f"{v:g} / " for (ls, s), v in PINNED.items() if ls == lesson}
                    assert set(shown) == set(wanted), shown
                    for student, prefix in wanted.items():
                        assert shown[student].startswith(prefix), (student, shown[student])
            browser.close()
    finally:
        lab.stop()


def test_feedback_tells_an_untouched_exercise_it_has_no_response(demo):
    """carol handed in the untouched notebook: her feedback says, in the gradebook's comment, that
    an answer has no response, and that each test did not pass, with its score."""
    out, _ = demo
    lesson = "01_tensors_and_requires_grad"
    text = html.unescape((out / f"feedback/carol/{lesson}/{lesson}.html").read_text())
    assert "Comments:</b> <p>No response.</p>" in text
    assert text.count("Score: 0 / 2\n" + CELL_FAILED) == 3


def test_autograde_enters_a_lesson_added_after_the_course_was_made(tmp_path, capsys):
    """A lesson the course's gradebook does not hold yet (added to the kit after `grader init`)
    is entered when it is graded, instead of failing with nbgrader's "No such assignment"."""
    from grader.cli import main

    course = init_course(tmp_path / "course")
    newest = lessons()[-1]
    with course.api().gradebook as gb:
        gb.remove_assignment(newest)
    assert main(["autograde", newest, "--course-dir", str(course.root)]) == 0
    assert f"entered {newest}" in capsys.readouterr().out
    with course.api().gradebook as gb:
        assert sorted(a.name for a in gb.assignments) == lessons()
