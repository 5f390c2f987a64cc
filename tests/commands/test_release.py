"""The student notebooks are exactly what nbgrader generates from the solutions."""

from grader.commands.release import release
from grader.course import NOTEBOOKS, lessons, solution_notebook, student_notebook


def test_released_notebooks_match_a_fresh_generation(tmp_path):
    """Regenerating notebooks/ from solutions/ reproduces the committed files byte for byte."""
    fresh = release(into=tmp_path, record=False)
    assert [p.relative_to(tmp_path) for p in fresh] == [
        student_notebook(lesson).relative_to(NOTEBOOKS) for lesson in lessons()
    ]
    stale = [
        str(p.relative_to(tmp_path))
        for p in fresh
        if p.read_bytes() != (NOTEBOOKS / p.relative_to(tmp_path)).read_bytes()
    ]
    assert stale == [], "run `make release` and commit notebooks/"


def test_every_released_notebook_has_a_solution():
    """notebooks/ holds no lesson that solutions/ lacks."""
    released = sorted(p.parent.name for p in NOTEBOOKS.glob("*/*.ipynb"))
    assert released == lessons()
    assert all(solution_notebook(lesson).exists() for lesson in released)


def test_student_notebooks_hide_solutions_and_hidden_tests():
    """No solution code or hidden test survives into a student notebook."""
    for lesson in lessons():
        text = student_notebook(lesson).read_text()
        assert "BEGIN SOLUTION" not in text
        assert "BEGIN HIDDEN TESTS" not in text


def test_release_rejects_an_unknown_lesson(tmp_path):
    """Naming a lesson that does not exist is a clear error that lists the known ones."""
    import pytest

    from grader.course import NoSuchLesson

    with pytest.raises(NoSuchLesson, match="no such lesson: 99_nope"):
        release(["99_nope"], into=tmp_path, record=False)


def test_the_example_class_keeps_each_released_lesson_s_first_cells():
    """The example class's submissions (the demo's and the benchmark's) hold the released
    notebook's code cells up to the first exercise, as a student's notebook does: the sandbox
    runs those cells once per lesson for every submission that kept them, so a stale copy would
    run them again for each submission (lesson 8's timing cells: seconds each)."""
    import nbformat

    from grader.cells import grade_id
    from grader.course import EXAMPLE_CLASS

    stale = []
    for lesson in lessons():
        code = [
            c for c in nbformat.read(student_notebook(lesson), 4).cells if c.cell_type == "code"
        ]
        first = next(i for i, c in enumerate(code) if grade_id(c))
        for path in sorted(EXAMPLE_CLASS.glob(f"submitted/*/{lesson}/{lesson}.ipynb")):
            cells = [c for c in nbformat.read(path, 4).cells if c.cell_type == "code"]
            if [c.source for c in cells[:first]] != [c.source for c in code[:first]]:
                stale.append(str(path.relative_to(EXAMPLE_CLASS)))
    assert stale == []
