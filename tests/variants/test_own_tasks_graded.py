"""A course that gives each student their own task: one released notebook, each student graded
against the task of the student who submitted it, wherever they worked (a hub's key, a key set in
the notebook, another student's key), and told plainly when an answer solves another's task."""

import nbformat
import pytest

from grader.cells import grade_id
from grader.commands.feedback import generate_feedback
from grader.commands.init import init_course
from grader.commands.tasks import write_keys
from grader.course import solution_notebook
from grader.course_keys import SECRET_NAME, key_for
from grader.grading.class_run import grade_submissions
from grader.grading.results import scores_of
from grader.judging.hand_solutions import solution
from grader.variants import TASK_LIST, TASKS, params
from grader.variants.families import FAMILIES

pytestmark = pytest.mark.integration

LESSON = "03_backward_and_scalar_outputs"
FAMILY = FAMILIES[LESSON, "dz_dx"]
EXAMPLES = TASKS[LESSON, "unbroadcast"]  # visible examples of each student's own
SECRET = b"the secret of a course in the tests"
POINTS = 2  # of test_dz_dx


def _task(student: str):
    return params(LESSON, "dz_dx", key_for(SECRET, student))


def _submission(key: str, answer_for: str) -> bytes:
    """The solution, worked under `key` ("" for none, as on a hub), with dz_dx derived for the
    task of `answer_for`."""
    nb = nbformat.read(solution_notebook(LESSON), as_version=4)
    for cell in nb.cells:
        if 'use_course_key("")' in cell.source:
            cell.source = cell.source.replace('use_course_key("")', f'use_course_key("{key}")')
        if grade_id(cell) == "dz_dx":
            cell.source = solution(FAMILY, _task(answer_for))
    return nbformat.writes(nb).encode()


STUDENTS = {  # student: (the key their notebook sets, whose task their answer solves)
    "alice": (key_for(SECRET, "alice"), "alice"),  # Colab: her key set in the notebook
    "bob": ("", "bob"),  # a hub: the key comes from the environment, none in the notebook
    "carol": ("", "alice"),  # alice's answer, copied
    "dave": (key_for(SECRET, "alice"), "alice"),  # worked under alice's key, handed in as dave
    "erin": (key_for(SECRET, "alice"), "erin"),  # alice's key set, but erin's own task solved
}


@pytest.fixture(scope="module")
def course(tmp_path_factory, grading_session):
    """The class, graded once for the module's tests."""
    tasks = {student: _task(student) for student in STUDENTS}
    assert len({tasks["alice"], tasks["bob"], tasks["carol"], tasks["dave"]}) == 4
    assert tasks["erin"] != tasks["alice"]
    course = init_course(tmp_path_factory.mktemp("course"), variants=LESSON)
    (course.root / SECRET_NAME).write_bytes(SECRET + b"\n")
    for student, (key, answer_for) in STUDENTS.items():
        folder = course.root / "submitted" / student / LESSON
        folder.mkdir(parents=True)
        (folder / f"{LESSON}.ipynb").write_bytes(_submission(key, answer_for))
    grade_submissions(course, [LESSON], session=grading_session, force=True)
    return course


def _test_cell(course, student: str):
    path = course.root / "autograded" / student / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, as_version=4)
    return next(c for c in nb.cells if grade_id(c) == "test_dz_dx")


def _score(course, student: str, test: str = "test_dz_dx") -> float:
    from gradebook_rows import gradebook_rows

    rows = gradebook_rows(course)["grade"]
    return next(r[4] for r in rows if r[1] == student and r[3] == test)


@pytest.mark.parametrize("student", ["alice", "bob", "erin"])
def test_each_student_earns_the_points_with_their_own_answer(course, student):
    assert _score(course, student) == POINTS
    shown = _test_cell(course, student).metadata["grader_own_task"]
    assert shown.startswith(FAMILY.shown(_task(student), plain=True))


def test_an_answer_for_another_students_task_earns_nothing_and_says_so(course):
    assert _score(course, "carol") == 0
    said = _test_cell(course, "carol").metadata["grader_verdict"]
    assert "it solves a different task" in said, said
    assert FAMILY.shown(_task("carol"), plain=True) in said  # her own task, to derive
    (carol,) = scores_of(course, LESSON, ["carol"])
    assert carol.review == ""  # no key of another in her notebook: nothing to say of it


def test_a_notebook_worked_under_another_key_is_graded_as_its_submitters_and_said(course):
    assert _score(course, "dave") == 0
    said = _test_cell(course, "dave").metadata["grader_verdict"]
    assert "worked under the course key of alice, but dave submitted it" in said, said
    assert "it solves a different task" in said
    dave, erin = scores_of(course, LESSON, ["dave", "erin"])
    assert "worked under the course key of alice, but dave submitted it" in dave.review
    assert "worked under the course key of alice, but erin submitted it" in erin.review


def test_the_feedback_page_shows_the_students_own_task(course):
    """Under the test, and in the cell that shows the task: carol never set a key, so the task
    she saw there was the class-wide one."""
    run = generate_feedback(course, LESSON)
    pages = {path.parts[-3]: path.read_text() for path in run.pages}
    for student in ("bob", "carol"):
        assert f"Your task: {FAMILY.shown(_task(student), plain=True)}" in pages[student]
        shown = f"the task you were graded on: {FAMILY.shown(_task(student), plain=True)}"
        assert shown in pages[student]
        assert "(the class-wide task)" not in pages[student]  # the cell's stored output


def _examples_cell(course, student: str):
    path = course.root / "autograded" / student / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, as_version=4)
    return next(c for c in nb.cells if f'my_task("{LESSON}", "unbroadcast")' in c.source)


@pytest.mark.parametrize("student", ["alice", "bob", "dave"])
def test_each_student_is_graded_on_their_own_examples_of_a_general_exercise(course, student):
    """unbroadcast is answered with general code: every student's answer earns its points, on
    the visible examples of the student who submitted it (dave's, though he worked under
    alice's key), which the graded notebook shows."""
    solutions = nbformat.read(solution_notebook(LESSON), as_version=4)
    test = next(c for c in solutions.cells if grade_id(c) == "test_unbroadcast")
    assert _score(course, student, "test_unbroadcast") == test.metadata.nbgrader.points > 0
    (shown,) = _examples_cell(course, student).outputs
    mine = EXAMPLES.shown(params(LESSON, "unbroadcast", key_for(SECRET, student)), plain=True)
    assert shown["data"] == {"text/plain": f"Your examples: {mine}"}  # kept as text, for safety
    others = {params(LESSON, "unbroadcast", key_for(SECRET, s)) for s in ("alice", "bob", "dave")}
    assert len(others) == 3


def test_the_instructor_sees_any_students_task_and_every_key(course, tmp_path, capsys):
    from grader.cli import main

    assert main(["tasks", "bob", "--course-dir", str(course.root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert key_for(SECRET, "bob") in lines[0]
    assert f"  {LESSON}, dz_dx: {FAMILY.shown(_task('bob'), plain=True)}" in lines
    bobs = params(LESSON, "unbroadcast", key_for(SECRET, "bob"))
    assert f"  {LESSON}, unbroadcast: {EXAMPLES.shown(bobs, plain=True)}" in lines
    assert main(["tasks", "bobb", "--course-dir", str(course.root)]) == 2  # a typo: no key
    assert "'bobb' is not a student of" in capsys.readouterr().err
    assert main(["tasks", "bob", "--lesson", "01_x", "--course-dir", str(course.root)]) == 2
    assert "01_x: no tasks of each student's own in this course" in capsys.readouterr().err
    path, count = write_keys(course, tmp_path / "keys.csv")
    assert count == len(STUDENTS)
    assert f"alice,{key_for(SECRET, 'alice')}" in path.read_text()


def test_the_instructors_notebook_says_whose_tasks_it_was_graded_with(course):
    path = course.root / "autograded" / "bob" / LESSON / f"{LESSON}.ipynb"
    key_cell = next(c for c in nbformat.read(path, 4).cells if "use_course_key" in c.source)
    shown = "".join(out.get("text", "") for out in key_cell.outputs)
    assert shown == "Graded with the tasks of bob, who submitted this notebook.\n"


def test_a_passing_notebook_worked_under_another_key_says_so_on_its_page(course):
    run = generate_feedback(course, LESSON)
    page = next(path.read_text() for path in run.pages if path.parts[-3] == "erin")
    assert "worked under the course key of alice, but erin submitted it" in page


def test_the_stock_engine_grades_against_the_submitters_task_too(course):
    """Last: it grades bob and carol again, with stock nbgrader (their kernels given the
    submitter's key)."""
    grade_submissions(course, [LESSON], ["bob", "carol"], engine="nbgrader", force=True)
    assert (_score(course, "bob"), _score(course, "carol")) == (POINTS, 0)


def test_turning_tasks_off_grades_the_lesson_again_class_wide(course):
    """Last of all: `init --variants off` marks the lesson's graded submissions to be graded
    again; a refresh without the option keeps the setting; the secret stays."""
    from grader.course_keys import varied_lessons
    from grader.grading import outcomes

    init_course(course.root, variants="off")
    assert varied_lessons(course.config()) == set()
    marked = outcomes.read_regrade(course.db_url)
    assert {student for lesson, student in marked if lesson == LESSON} == set(STUDENTS)
    assert "tasks changed" in marked[LESSON, "bob"]
    init_course(course.root)
    assert varied_lessons(course.config()) == set()
    init_course(course.root, variants="all")
    assert varied_lessons(course.config()) == {family.lesson for family in TASK_LIST}
    assert (course.root / SECRET_NAME).read_bytes() == SECRET + b"\n"
