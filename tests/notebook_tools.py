"""Helpers the tests share: run a notebook, read nbgrader's verdicts on it."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbgrader.validator import Validator


def execute(path: Path) -> nbformat.NotebookNode:
    """Run a notebook in a fresh kernel, in its own folder, keeping going after errors."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=120, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    )
    return client.execute()


def validate(path: Path, *, invert: bool = False) -> dict:
    """nbgrader's validation result: failing test cells, or with `invert` passing ones."""
    return Validator(invert=invert).validate(str(path))


def checked_answers(nb) -> set[str]:
    """The answer cells a test cell checks: those with a graded cell after them in their exercise
    (before the next text cell). A prediction's answer cell is the student's own self-check."""
    from grader.cells import grade_id, is_answer, is_test

    checked, pending = set(), []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            pending = []
        elif is_answer(cell):
            pending.append(grade_id(cell))
        elif is_test(cell):
            checked.update(pending)
    return checked


def solution_with_answers(lesson: str, answers: dict[str, str]):
    """The lesson's solution notebook, and a copy with some answer cells (by grade id) replaced."""
    import copy

    from grader.cells import grade_id
    from grader.course import solution_notebook

    source = nbformat.read(solution_notebook(lesson), as_version=4)
    nb = copy.deepcopy(source)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return source, nb
