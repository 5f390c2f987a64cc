"""Generate the student notebooks from the instructor's solutions with nbgrader."""

from pathlib import Path

import nbformat

from grader.course import (
    NOTEBOOKS,
    REPO_ROOT,
    Course,
    known_lessons,
    lessons,
    solution_notebook,
    with_colab_cells,
)


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
            raise ReleaseError(f"generating {lesson} failed:\n{result.get('error', '')}")
        written.append(Path(into) / lesson / f"{lesson}.ipynb")
    return written
