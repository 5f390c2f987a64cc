"""Generate the student notebooks from the instructor's solutions with nbgrader."""

from pathlib import Path

from grader.course import NOTEBOOKS, REPO_ROOT, Course, known_lessons, lessons


class ReleaseError(RuntimeError):
    """nbgrader could not generate a lesson's student notebook."""


def release(selected: list[str] | None = None, *, into: Path = NOTEBOOKS, record: bool = True):
    """Write the student version of each selected lesson (all by default) under `into`.

    With `record`, the lessons are also entered in the repository course's gradebook, as
    `nbgrader generate_assignment` does; without it nothing but `into` is written.
    """
    known_lessons(selected or [])
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
