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
