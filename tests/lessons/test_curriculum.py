"""The curriculum's shape: every lesson has graded exercises, a summary, and the seeds' numbers."""

import ast
import re

import nbformat

from grader.course import lessons, solution_notebook
from grader.judging import by_hand, declarations
from grader.judging.reference import probes_file

DERIVATIVE_LESSONS = {"03", "04", "05"}
PLOT_LESSONS = {"02", "05", "06", "07"}


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


def test_there_are_at_least_seven_lessons_and_thirty_graded_tests():
    """The course covers the seed topics, backward by hand and gradient control in at least seven
    lessons, with at least thirty graded test cells between them (predictions are not graded)."""
    assert len(lessons()) >= 7
    assert sum(len(_grade_cells(lesson)) for lesson in lessons()) >= 30


def _exercises(lesson: str) -> list[tuple[str, list]]:
    """Each exercise's text, and the cells that follow it up to the next heading."""
    exercises, cells = [], _cells(lesson)
    for index, cell in enumerate(cells):
        if cell.cell_type == "markdown" and cell.source.startswith("### Exercise"):
            rest = cells[index + 1 :]
            end = next((i for i, c in enumerate(rest) if c.cell_type == "markdown"), len(rest))
            exercises.append((cell.source, rest[:end]))
    return exercises


def _test_cell(cells: list):
    """The exercise's graded test cell, or None for a prediction (checked by the student)."""
    return next((c for c in cells if c.metadata.get("nbgrader", {}).get("grade")), None)


def _is_prediction(text: str) -> bool:
    return "predict" in text.splitlines()[0].lower()


# By-hand work that is no formula of its inputs, whose rule the reading only flags: a gradient
# summed back to a shape, a finite-difference estimate of a function handed in, the backward of a
# torch.autograd.Function (probed through the node it makes).
# What a submission's own process says about how it worked: it can measure and forge these.
IN_PROCESS_SIGNALS = (
    "autograd_called(", "counted(", "watch_autograd(", "curvature_reaching(", "optimizer_steps(",
    "hooks_registered(", "as_written(", "shares_of_gradients(",
)  # fmt: skip
BY_HAND_NO_FORMULA = {"test_unbroadcast", "test_central_difference", "test_cube_function"}


def test_exercises_are_graded_as_worded(lesson):
    """An exercise that says "by hand" is checked with autograd switched off, in its test cell
    and its probe, and a derivative by hand is declared a formula the grader evaluates; one that
    says "using autograd" differentiates what its probe draws at grading time (a drawn function,
    loss or activation), observes values only, and is declared so for the reading."""
    probes = probes_file(lesson).read_text()
    for text, cells in _exercises(lesson):
        test = _test_cell(cells)
        if test is None:
            continue
        grade_id = test.metadata["nbgrader"]["grade_id"]
        probe = probes.split(f"def {grade_id}(", 1)[1].split("\ndef ", 1)[0]
        if "by hand" in text.lower():
            assert "call_by_hand(" in test.source and "by_hand(" in probe, grade_id
            formula = grade_id in by_hand.declared(probes)
            assert formula or grade_id in BY_HAND_NO_FORMULA, f"{grade_id}: declare it in BY_HAND"
        if "using autograd" in text.lower():
            assert "call_with_autograd(" in test.source, grade_id
            assert re.search(r"draw\.\w*function", probe), f"{grade_id}: hand it a drawn one"
            signals = [s for s in IN_PROCESS_SIGNALS if s in probe]
            assert not signals, f"{grade_id}: a score rests on values, not on {signals}"
            rules = declarations.declared(probes, "HOW").get(grade_id, {}).values()
            assert any("using autograd" in r for r in rules), f"{grade_id}: declare it in HOW"
        if re.search(r"\*\*without\*\* (calling )?`backward\(\)`", text):  # the engine by hand
            assert "hand_only=True" in probe, f"{grade_id}: hand it a hand-only graph"


def test_predictions_are_self_checks_with_a_run_and_compare_cell(lesson):
    """A prediction exercise is not graded (running the code would earn its points): an answer
    cell for the predictions, then an ungraded cell that runs the code to compare; every other
    exercise has a graded test cell."""
    for text, cells in _exercises(lesson):
        if not _is_prediction(text):
            assert _test_cell(cells) is not None, text
            continue
        assert _test_cell(cells) is None, text
        answer = next(
            i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("solution")
        )
        after = cells[answer + 1 :]
        assert any(c.cell_type == "code" and "nbgrader" not in c.metadata for c in after), text


def test_lesson_has_three_graded_exercises_with_hidden_tests(lesson):
    """Each lesson has at least three test cells, each with points and hidden tests."""
    grade_cells = _grade_cells(lesson)
    assert len(grade_cells) >= 3
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
    """Lessons 2, 5, 6 and 7 draw with matplotlib; the figures are stored as PNG outputs."""
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


def _global_statements(body: list):
    """Every statement that runs at module level: the top level and the blocks inside it
    (if, for, with, try), but not the bodies of functions and classes."""
    for node in body:
        yield node
        if not isinstance(node, ast.FunctionDef | ast.ClassDef):
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from _global_statements(getattr(node, field, []))


def _bound_names(source: str) -> set[str]:
    """The names a cell binds in the namespace it runs in, imports aside."""
    names = set()
    for node in _global_statements(ast.parse(source).body):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        targets = {
            ast.Assign: lambda n: n.targets,
            ast.AnnAssign: lambda n: [n.target],
            ast.AugAssign: lambda n: [n.target],
            ast.For: lambda n: [n.target],
            ast.With: lambda n: [i.optional_vars for i in n.items if i.optional_vars],
        }.get(type(node), lambda n: [])(node)
        for target in targets:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def test_test_cells_leave_the_students_names_alone(lesson):
    """Test cells run in the student's namespace: every name they bind starts with `_`, so an
    answer's own helpers and imports (`copy`, `chain`, `estimate`) keep working."""
    for cell in _grade_cells(lesson):
        plain = {name for name in _bound_names(cell.source) if not name.startswith("_")}
        assert not plain, (cell.metadata["nbgrader"]["grade_id"], sorted(plain))
