"""Visible examples of each student's own, for the exercises answered with general code: drawn
from the student's key, of the exercise's structure, shown just before the answer, checked by the
visible test, which the solution passes on every student's examples and the usual slips fail
with the message that names them."""

import ast
import random
import sys
from pathlib import Path

import nbformat
import pytest
import torch
import yaml
from own_examples import LESSON_CODE, SLIPS, STRUCTURE

import grader.variants as variants
from grader.cells import OWN_TASK, grade_id, is_test
from grader.checks import CheckFailed
from grader.course import solution_notebook
from grader.course_keys import key_for
from grader.variants.examples import EXAMPLE_LIST

SECRET = b"a course's secret"
CLASS = [f"student{i:02d}" for i in range(40)]
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"


@pytest.fixture(autouse=True)
def process_kept():
    """Answers run here, in the test's process, and some change it (an alternative answer raises
    the recursion limit, lessons seed torch): each test hands the process back as it found it,
    for the tests that run after it there."""
    limit, grad, dtype = sys.getrecursionlimit(), torch.is_grad_enabled(), torch.get_default_dtype()
    rng = torch.get_rng_state()
    yield
    sys.setrecursionlimit(limit)
    torch.set_grad_enabled(grad)
    torch.set_default_dtype(dtype)
    torch.set_rng_state(rng)


def _cells(family):
    """The solution's answer cell and the visible part of its test, and the cell before them."""
    cells = nbformat.read(solution_notebook(family.lesson), as_version=4).cells
    answer = next(i for i, c in enumerate(cells) if grade_id(c) == family.answer_cell)
    test = next(c for c in cells[answer:] if grade_id(c) == f"test_{family.answer_cell}")
    return cells[answer - 1], cells[answer].source, test.source.split(BEGIN_HIDDEN)[0]


def _lesson_code(family) -> dict:
    """What a family's answers and visible test use of the lesson's code above the answer: its
    imports, and for those in LESSON_CODE its code cells run, but the setup, tests, cells that
    raise, own-task cells and IPython's magics."""
    cells = nbformat.read(solution_notebook(family.lesson), as_version=4).cells
    answer = next(i for i, c in enumerate(cells) if grade_id(c) == family.answer_cell)
    above = [
        "\n".join(line for line in c.source.splitlines() if not line.startswith("%"))
        for c in cells[:answer]
        if c.cell_type == "code"
        and c.get("id") != "colab-setup"
        and not is_test(c)
        and not {"raises-exception", OWN_TASK} & set(c.metadata.get("tags", []))
    ]
    if (family.lesson, family.exercise) not in LESSON_CODE:
        imports = [
            node
            for source in above
            for node in ast.parse(source).body
            if isinstance(node, ast.Import | ast.ImportFrom)
        ]
        above = [ast.unparse(ast.Module(body=imports, type_ignores=[]))]
    namespace = {"torch": torch}
    exec(compile("\n\n".join(above), "<the lesson's cells above>", "exec"), namespace)
    return namespace


def _visible_test(lesson_code: dict, answer: str, test: str) -> None:
    namespace = dict(lesson_code)
    exec(compile(answer, "<answer>", "exec"), namespace)
    exec(compile(test, "<visible test>", "exec"), namespace)


@pytest.mark.parametrize("family", EXAMPLE_LIST, ids=lambda f: f"{f.lesson}/{f.exercise}")
def test_each_student_sees_examples_of_their_own_of_one_structure(family):
    drawn = [variants.params(family.lesson, family.exercise, key_for(SECRET, s)) for s in CLASS]
    assert drawn == [
        variants.params(family.lesson, family.exercise, key_for(SECRET, s)) for s in CLASS
    ]
    assert len(set(drawn)) >= 35  # 40 students, nearly all apart
    assert variants.params(family.lesson, family.exercise, None) == family.default
    for examples in [family.default, *drawn, *random.Random(0).sample(family.every(), 50)]:
        STRUCTURE[family.lesson, family.exercise](examples)
    shown = {family.shown(examples) for examples in drawn}
    assert len(shown) >= 30  # what the students read differs too


@pytest.mark.parametrize("family", EXAMPLE_LIST, ids=lambda f: f"{f.lesson}/{f.exercise}")
def test_the_lesson_shows_the_examples_and_its_visible_test_checks_them(family):
    """The cell just before the answer (tagged own-task, so it runs with the submitter's key when
    graded) shows the examples; the visible test reads them from the key too."""
    shows, _, test = _cells(family)
    call = f'my_task("{family.lesson}", "{family.exercise}")'
    assert OWN_TASK in shows.metadata.get("tags", []) and call in shows.source
    assert call in test


@pytest.mark.parametrize("family", EXAMPLE_LIST, ids=lambda f: f"{f.lesson}/{f.exercise}")
def test_the_solution_passes_every_students_visible_test_and_slips_fail_it(family, monkeypatch):
    _, solution, test = _cells(family)
    lesson_code = _lesson_code(family)
    for student in [None, *CLASS[:12]]:
        if student is not None:
            monkeypatch.setenv(variants.KEY_VARIABLE, key_for(SECRET, student))
        _visible_test(lesson_code, solution, test)
        for wrong, said in SLIPS[family.lesson, family.exercise]:
            with pytest.raises(CheckFailed, match=said):
                _visible_test(lesson_code, wrong, test)


ALTERNATIVE_ANSWERS = Path(__file__).parents[1] / "lessons" / "alternative_answers"


@pytest.mark.parametrize("family", EXAMPLE_LIST, ids=lambda f: f"{f.lesson}/{f.exercise}")
def test_every_alternative_answer_passes_every_students_visible_test(family, monkeypatch):
    """Correct answers in other styles than the solution's (the lessons' corpus) pass the visible
    test on other students' examples too, not only on the class-wide one: a test cell keeps its
    points only if it passed in the submitter's run, so no example may fail a right answer."""
    corpus = yaml.safe_load((ALTERNATIVE_ANSWERS / f"{family.lesson}.yml").read_text())
    answers = [answer for answer in corpus if answer["cell"] == family.answer_cell]
    assert len(answers) >= 2
    _, _, test = _cells(family)
    lesson_code = _lesson_code(family)
    for student in CLASS[12:20]:
        monkeypatch.setenv(variants.KEY_VARIABLE, key_for(SECRET, student))
        for answer in answers:
            try:
                _visible_test(lesson_code, answer["answer"], test)
            except CheckFailed as failure:
                pytest.fail(f"{answer['style']}, on the examples of {student}: {failure}")


@pytest.mark.integration
def test_a_course_with_examples_on_grades_each_students_solution_in_full(tmp_path, grading_session):
    """In the real pipeline (the sandbox, the judge), with every lesson's examples on: two
    students hand in the solution, whose visible tests then run on each one's own examples, and
    every test of an exercise with examples keeps its points."""
    import shutil

    from gradebook_rows import gradebook_rows

    from grader.commands.init import init_course
    from grader.grading.class_run import grade_submissions

    lessons = sorted({family.lesson for family in EXAMPLE_LIST})
    course = init_course(tmp_path / "course", variants="all")
    for student in ("ada", "bo"):
        for lesson in lessons:
            folder = course.root / "submitted" / student / lesson
            folder.mkdir(parents=True)
            shutil.copy(solution_notebook(lesson), folder / f"{lesson}.ipynb")
    grade_submissions(course, lessons, session=grading_session)
    points = {}
    for lesson in lessons:
        for cell in nbformat.read(solution_notebook(lesson), as_version=4).cells:
            if grade_id(cell) and cell.metadata["nbgrader"].get("points"):
                points[lesson, grade_id(cell)] = cell.metadata["nbgrader"]["points"]
    scores = {(r[0], r[1], r[3]): r[4] for r in gradebook_rows(course)["grade"]}
    for family in EXAMPLE_LIST:
        test = f"test_{family.answer_cell}"
        for student in ("ada", "bo"):
            assert scores[family.lesson, student, test] == points[family.lesson, test], (
                family.lesson,
                student,
                test,
            )
