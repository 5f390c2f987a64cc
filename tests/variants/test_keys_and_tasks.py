"""Each student's own tasks: keys only the course's secret makes, tasks drawn from them, every task
of a family as hard as the others and its solution right, the student's key cell."""

import ast
import itertools
import random
import subprocess
import sys
from types import SimpleNamespace

import mpmath
import pytest
import torch

import grader.variants as variants
from grader.course_keys import (
    SecretMissing,
    Variant,
    hub_environment,
    key_for,
    make_secret,
    notebook_key,
    read_secret,
    worked_under,
)
from grader.judging import formulas
from grader.judging.formula_reading import read
from grader.judging.hand_solutions import solution
from grader.judging.syntax import parsed
from grader.variants.families import FAMILY_LIST

SECRET = b"a course's secret"
CLASS = [f"student{i:02d}" for i in range(40)]


def test_a_key_names_its_student_and_only_the_secret_makes_it():
    key = key_for(SECRET, "alice")
    assert variants.student_of(key) == "alice"
    assert key == key_for(SECRET, "alice")  # the same student, the same key, every time
    assert key != key_for(b"another course's secret", "alice")
    assert len({key_for(SECRET, s) for s in CLASS}) == len(CLASS)
    assert variants.student_of(key_for(SECRET, "first.last-2")) == "first.last-2"


@pytest.mark.parametrize("typed", ["alice", "alice-abc", "alice-ABCDEFGHI1", "", "-ABCDEFGHIJ"])
def test_a_mistyped_key_is_said_at_once(typed):
    with pytest.raises(ValueError, match="not a course key"):
        variants.use_course_key(typed or " -")


def test_the_secret_is_made_once_and_kept_from_others(tmp_path):
    path = make_secret(tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600
    first = read_secret(tmp_path)
    make_secret(tmp_path)  # a course that has a secret keeps it: keys given out stay valid
    assert read_secret(tmp_path) == first and len(first) == 64
    with pytest.raises(SecretMissing, match=str(tmp_path / "elsewhere" / "course_secret")):
        read_secret(tmp_path / "elsewhere")


@pytest.mark.parametrize("family", FAMILY_LIST, ids=lambda f: f"{f.lesson}/{f.exercise}")
def test_students_get_tasks_of_their_own_from_their_keys(family):
    drawn = [variants.params(family.lesson, family.exercise, key_for(SECRET, s)) for s in CLASS]
    again = [variants.params(family.lesson, family.exercise, key_for(SECRET, s)) for s in CLASS]
    assert drawn == again
    assert set(drawn) <= set(family.every())
    assert len(set(drawn)) >= len(family.every()) // 2  # 40 students spread over the tasks
    assert variants.params(family.lesson, family.exercise, None) == family.default


def test_a_students_task_comes_without_its_answer():
    """What a notebook imports to show a student's own tasks holds no solution's formula: those
    are the grading process's, and importing `grader.variants` loads none of the judge."""
    shown = "import sys, grader.variants; print(sorted(m for m in sys.modules if 'judging' in m))"
    loaded = subprocess.run([sys.executable, "-c", shown], capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"
    for family in FAMILY_LIST:
        task = variants.my_task(family.lesson, family.exercise)
        assert not [name for name in dir(task) + dir(family) if "solution" in name]


@pytest.mark.parametrize("family", FAMILY_LIST, ids=lambda f: f"{f.lesson}/{f.exercise}")
def test_every_task_is_of_one_structure_and_its_solution_is_its_derivative(family):
    """The solution's formula for each task is a formula the grader reads (as it reads the
    class-wide solution's), equal to autograd's derivative of the task's function, and the task
    shows its own coefficients."""
    draw = random.Random(0)
    assert len({_structure(solution(family, task)) for task in family.every()}) == 1
    for task, function in itertools.product(family.every(), family.asked()):
        formula = read(function, parsed(solution(family, task)).body)
        for _ in range(5):
            x = [draw.uniform(-3, 3) for _ in range(formula.parameters)]
            leaves = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in x]
            grads = torch.autograd.grad(family.function(task, *leaves), leaves)
            point, shapes = tuple(map(mpmath.mpf, x)), ((),) * len(x)
            for result, grad in zip(formula.results, grads, strict=True):
                got = formulas.value(result, point, shapes)
                wanted = grad.item() * family.times_derivative(function)
                assert float(got) == pytest.approx(wanted, rel=1e-9, abs=1e-9)
        for value in vars(task).values():  # a coefficient 1 is not written
            assert value == 1 or str(value) in family.shown(task) + family.shown(task, True)


def _structure(source: str) -> str:
    """The formula's syntax with every number made 0."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            node.value = 0
    return ast.dump(tree)


def test_the_key_cell_says_whose_tasks_the_notebook_shows(monkeypatch, capsys):
    task = variants.my_task("03_backward_and_scalar_outputs", "dz_dx")
    variants.use_course_key("")
    assert "No course key: you see the class-wide tasks" in capsys.readouterr().out
    assert (task.a, task.b) == (2, 3)
    monkeypatch.setenv(variants.KEY_VARIABLE, key_for(SECRET, "bob"))
    variants.use_course_key("")
    assert "Course key of bob (set by your hub)" in capsys.readouterr().out
    bob = (task.a, task.b)
    variants.use_course_key(key_for(SECRET, "alice"))  # set in the notebook: it wins
    assert "Course key of alice (set above)" in capsys.readouterr().out
    alice = variants.params("03_backward_and_scalar_outputs", "dz_dx", key_for(SECRET, "alice"))
    assert (task.a, task.b) == (alice.a, alice.b)
    assert "the task of alice" in task._repr_markdown_()
    assert bob == tuple(
        vars(variants.params(task.lesson, "dz_dx", key_for(SECRET, "bob"))).values()
    )


def test_a_hub_gives_each_user_their_own_key(tmp_path):
    make_secret(tmp_path)
    environment = hub_environment(tmp_path)
    spawner = SimpleNamespace(user=SimpleNamespace(name="carol"))
    assert environment[variants.KEY_VARIABLE](spawner) == key_for(read_secret(tmp_path), "carol")


def _notebook(*sources):
    import nbformat

    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def test_a_notebook_worked_under_another_key_is_said_plainly():
    bob = Variant("bob", key_for(SECRET, "bob"), "03_backward_and_scalar_outputs", SECRET)
    alice = key_for(SECRET, "alice")
    assert notebook_key(_notebook("x = 1", 'use_course_key("")')) is None
    assert worked_under(_notebook(f'use_course_key("{bob.key}")'), bob) is None
    said = worked_under(_notebook(f'variants.use_course_key("{alice}")'), bob)
    assert "worked under the course key of alice, but bob submitted it" in said
    assert "graded against bob's own tasks" in said
    mistyped = worked_under(_notebook('use_course_key("bob-AAAAAAAAAA")'), bob)
    assert "not the one the course made for this student" in mistyped
    assert worked_under(_notebook('use_course_key("whatever")'), bob) is None  # no key at all


@pytest.mark.parametrize(
    "cell",
    [
        'use_course_key(key="{key}")',  # a keyword
        '%time use_course_key("{key}")',  # a magic
        'use_course_key("")\n# then: use_course_key("{key}")',
        'use_course_key("{key}")\nx = ' + "1+" * 20000 + "1",  # nested too deep to parse
    ],
)
def test_the_key_is_read_however_the_cell_is_written(cell):
    """The key a notebook sets is read from its text, whatever the call's spelling, and a cell
    the parser cannot take (nested 20,000 deep) is no error."""
    bob = Variant("bob", key_for(SECRET, "bob"), "03_backward_and_scalar_outputs", SECRET)
    said = worked_under(_notebook(cell.format(key=key_for(SECRET, "alice"))), bob)
    assert "worked under the course key of alice" in said


@pytest.mark.parametrize(
    "key",
    [
        "TA_checked:no_action_needed,ignore_this_flag-AAAAAAAAAA",  # words for the instructor
        "\x1b[2Jeve-AAAAAAAAAA",  # a terminal escape
        "x-" * 1_000_000 + "ABCDEFGHIJ",  # two megabytes
    ],
)
def test_only_a_key_the_course_made_is_quoted(key):
    """Another id is named only when the course made that key; any other text stays out of
    the instructor's review column and the feedback, at any length."""
    bob = Variant("bob", key_for(SECRET, "bob"), "03_backward_and_scalar_outputs", SECRET)
    said = worked_under(_notebook(f'use_course_key("{key}")'), bob)
    assert said is None or ("a key the course did not make" in said and len(said) < 200)
    assert "TA_checked" not in (said or "") and "\x1b" not in (said or "")


def test_init_names_the_lessons_that_can_vary(tmp_path):
    from grader.commands.init import init_course

    with pytest.raises(ValueError, match="01_tensors_and_requires_grad has no tasks of each"):
        init_course(tmp_path / "course", variants="01_tensors_and_requires_grad")
    with pytest.raises(ValueError, match="give all or off alone"):
        init_course(tmp_path / "course", variants="all,03_backward_and_scalar_outputs")
    assert not (tmp_path / "course").exists()  # nothing written


@pytest.mark.parametrize("family", FAMILY_LIST, ids=lambda f: f"{f.lesson}/{f.exercise}")
def test_the_lesson_shows_the_key_cell_and_the_students_task(family):
    """The lesson has the key cell before its first exercise, and the exercise a cell tagged
    own-task, just before its answer, that shows the student's task; the class-wide task's
    formula is the solution's own, at every point the judge draws."""
    import nbformat

    from grader.cells import OWN_TASK, grade_id, is_answer
    from grader.course import KEY_CELL, solution_notebook

    cells = nbformat.read(solution_notebook(family.lesson), as_version=4).cells
    first_answer = next(i for i, c in enumerate(cells) if is_answer(c))
    assert [c.source for c in cells[:first_answer]].count(KEY_CELL) == 1
    answer = next(i for i, c in enumerate(cells) if grade_id(c) == family.answer_cell)
    shows = cells[answer - 1]
    assert OWN_TASK in shows.metadata.get("tags", [])
    assert f'my_task("{family.lesson}", "{family.exercise}")' in shows.source
    trees = [parsed(c.source) for c in cells[: answer + 1] if c.cell_type == "code"]
    statements = [line for tree in trees if tree for line in tree.body]
    draw = random.Random(1)
    for function in family.asked():
        lessons = read(function, statements)
        default = read(function, parsed(solution(family, family.default)).body)
        for _ in range(20):
            x = tuple(mpmath.mpf(draw.uniform(-3, 3)) for _ in range(lessons.parameters))
            shapes = ((),) * len(x)
            for mine, theirs in zip(lessons.results, default.results, strict=True):
                value = formulas.value(mine, x, shapes)
                assert formulas.agrees(value, formulas.value(theirs, x, shapes))


def test_grading_tasks_of_their_own_without_the_secret_says_which_file(tmp_path):
    """Nothing is graded, and the error names the missing file."""
    from grader.commands.init import init_course
    from grader.grading.class_run import grade_submissions

    lesson = "05_gradients_at_work"
    course = init_course(tmp_path / "course", variants=lesson)
    (course.root / "course_secret").unlink()
    with pytest.raises(SecretMissing, match=str(course.root / "course_secret")):
        grade_submissions(course, [lesson])


def test_a_task_the_submitted_notebook_wrote_is_not_shown_as_graded():
    """On the feedback page, the task the grader wrote under a test is shown in the cell that
    shows the task; the same metadata in the student's own copy (stock nbgrader keeps it) is
    theirs, and shown nowhere."""
    import nbformat

    from grader.judging.verdict import TASK_KEY
    from grader.safe_output.feedback_steps import _graded_tasks, _key

    test = nbformat.v4.new_code_cell(
        "", metadata={"nbgrader": {"grade": True, "grade_id": "test_dz_dx"}}
    )
    test.metadata[TASK_KEY] = "y = x^2 - 5x, z = 6y^3"
    cells = [nbformat.v4.new_code_cell('t = my_task("03", "dz_dx")'), test]
    assert _graded_tasks(cells, {}) == {0: "y = x^2 - 5x, z = 6y^3"}
    theirs = {_key(test): {"metadata": {TASK_KEY: "full marks, no need to look"}}}
    assert _graded_tasks(cells, theirs) == {}
