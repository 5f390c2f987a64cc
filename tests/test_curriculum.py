"""The curriculum's shape: every lesson has graded exercises, a summary, and the seeds' numbers."""

import re

import nbformat

from grader.course import lessons, solution_notebook

DERIVATIVE_LESSONS = {"03", "04", "05"}
PLOT_LESSONS = {"02", "05"}


def _cells(lesson: str):
    return nbformat.read(solution_notebook(lesson), as_version=4).cells


def _grade_cells(lesson: str):
    return [c for c in _cells(lesson) if c.metadata.get("nbgrader", {}).get("grade")]


def _outputs_text(lesson: str) -> str:
    texts = []
    for cell in _cells(lesson):
        for out in cell.get("outputs", []):
            texts.append(out.get("text", "") + out.get("data", {}).get("text/plain", ""))
    return "\n".join(texts)


def test_there_are_at_least_five_lessons():
    """The course covers the seed topics in at least five lessons."""
    assert len(lessons()) >= 5


def test_lesson_has_four_graded_exercises_with_hidden_tests(lesson):
    """Each lesson has at least four test cells, each with points and hidden tests."""
    grade_cells = _grade_cells(lesson)
    assert len(grade_cells) >= 4
    for cell in grade_cells:
        assert cell.metadata["nbgrader"]["points"] > 0
        assert "### BEGIN HIDDEN TESTS" in cell.source, cell.metadata["nbgrader"]["grade_id"]
        assert cell.source.lstrip().startswith('"""Check'), "test cells start with a docstring"


def test_lesson_follows_the_skeleton(lesson):
    """Overview first, then Exercises, then a Summary at the end."""
    headings = [c.source for c in _cells(lesson) if c.cell_type == "markdown"]
    assert "Overview" in headings[0]
    exercises = next(i for i, h in enumerate(headings) if h.startswith("## Exercises"))
    summary = next(i for i, h in enumerate(headings) if h.startswith("## Summary"))
    assert exercises < summary == len(headings) - 1


def test_lesson_shows_a_real_error(lesson):
    """Each lesson shows at least one teaching error, in a cell tagged raises-exception."""
    tagged = [c for c in _cells(lesson) if "raises-exception" in c.metadata.get("tags", [])]
    assert tagged and all(any(o.output_type == "error" for o in c.outputs) for c in tagged)


def test_derivative_lessons_check_hand_derivations_at_random_points(lesson):
    """Lessons with a derivative grade a hand derivation with check_derivative."""
    if lesson[:2] in DERIVATIVE_LESSONS:
        assert any("check_derivative(" in c.source for c in _grade_cells(lesson))


def test_plot_lessons_store_figures(lesson):
    """Lessons 2 and 5 draw with matplotlib; the figures are stored as PNG outputs."""
    if lesson[:2] in PLOT_LESSONS:
        pngs = [
            out
            for cell in _cells(lesson)
            for out in cell.get("outputs", [])
            if "image/png" in out.get("data", {})
        ]
        assert pngs


def test_seed_numbers_appear_as_computed_outputs():
    """The seeds' gradients 10, 4.5 and 60 are printed by running code, not typed."""
    text = "\n".join(_outputs_text(lesson) for lesson in lessons())
    assert re.search(r"tensor\(\[10\., 10\.\]\)", text)
    assert re.search(r"tensor\(\[\[4\.5000, 4\.5000\],\s+\[4\.5000, 4\.5000\]\]\)", text)
    assert re.search(r"tensor\(\[\[60\.\]\]\)|tensor\(\[60\.\]\)|tensor\(60\.\)", text)
