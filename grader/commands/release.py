"""Generate the student notebooks from the instructor's solutions with nbgrader."""

from pathlib import Path

import nbformat

from grader.course import (
    NOTEBOOKS,
    REPO_ROOT,
    SETUP_CELL_ID,
    Course,
    colab_badge,
    known_lessons,
    lessons,
    setup_cell_source,
    solution_notebook,
)
from grader.outcome import nbgrader_failure


class ReleaseError(RuntimeError):
    """nbgrader could not generate a lesson's student notebook."""


def keep_colab_cells_in_step(selected: list[str]) -> list[str]:
    """Write each selected solution whose Colab badge or setup cell differs from what
    grader/course.py renders from REPOSITORY_URL; the lessons written."""
    written = []
    for lesson in selected:
        path = solution_notebook(lesson)
        nb = nbformat.read(path, as_version=4)
        if with_colab_cells(nb, lesson):
            nbformat.write(nb, path)
            written.append(lesson)
    return written


def release(selected: list[str] | None = None, *, into: Path = NOTEBOOKS, record: bool = True):
    """Write the student version of each selected lesson (all by default) under `into`.

    With `record`, the solutions' Colab cells are first brought in step with the repository's
    address (grader/course.py), and the lessons are entered in the repository course's
    gradebook, as `nbgrader generate_assignment` does; without it nothing but `into` is written.
    """
    known_lessons(selected or [])
    if record:
        keep_colab_cells_in_step(selected or lessons())
    overrides = {"CourseDirectory": {"release_directory": str(Path(into).resolve())}}
    if not record:
        overrides["GenerateAssignment"] = {"no_database": True}
        overrides["SaveCells"] = {"enabled": False}
    api = Course(REPO_ROOT).api(**overrides)
    written = []
    for lesson in selected or lessons():
        result = api.generate_assignment(lesson, force=True, create=record)
        if not result["success"]:
            raise ReleaseError(f"generating {lesson} failed: {nbgrader_failure(result)}")
        written.append(Path(into) / lesson / f"{lesson}.ipynb")
    return written


def with_colab_cells(nb, lesson: str) -> bool:
    """Bring a lesson notebook's Colab cells in step with REPOSITORY_URL: the badge in its first
    markdown cell (below the title), and the setup cell as its first code cell, right after that
    markdown cell (inserted, it takes execution count 1 when the notebook has counts, and the
    cells after it count on from there, as a fresh run numbers them). Whether `nb` changed."""
    text = next(c for c in nb.cells if c.cell_type == "markdown")
    lines = text.source.split("\n")
    badge = colab_badge(lesson)
    found = [i for i, line in enumerate(lines) if line.startswith("[![Open In Colab]")]
    if found:
        lines[found[0]] = badge
        source = "\n".join(lines)
    else:
        title, _, rest = text.source.partition("\n")
        source = "\n\n".join(part for part in (title, badge, rest.lstrip("\n")) if part)
    changed = source != text.source
    text.source = source

    code = next((c for c in nb.cells if c.cell_type == "code"), None)
    if code is not None and (code.get("id") == SETUP_CELL_ID or code.source == setup_cell_source()):
        changed |= code.source != setup_cell_source()
        code.source = setup_cell_source()
        return changed
    counted = any(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
    for cell in nb.cells:
        if cell.cell_type == "code" and isinstance(cell.get("execution_count"), int):
            cell.execution_count += 1
            for output in cell.outputs:
                if isinstance(output.get("execution_count"), int):
                    output.execution_count += 1
    setup = nbformat.v4.new_code_cell(setup_cell_source(), id=SETUP_CELL_ID)
    setup.execution_count = 1 if counted else None
    nb.cells.insert(nb.cells.index(text) + 1, setup)
    return True
