"""Generate the student notebooks from the instructor's solutions with nbgrader."""

from pathlib import Path

from grader.course import NOTEBOOKS, REPO_ROOT, lessons, nbgrader_api, nbgrader_config


class ReleaseError(RuntimeError):
    """nbgrader could not generate a lesson's student notebook."""


def release(selected: list[str] | None = None, *, into: Path = NOTEBOOKS, record: bool = True):
    """Write the student version of each selected lesson (all by default) under `into`.

    With `record`, the lessons are also entered in the repository course's gradebook, as
    `nbgrader generate_assignment` does; without it nothing but `into` is written.
    """
    unknown = sorted(set(selected or []) - set(lessons()))
    if unknown:
        raise ReleaseError(f"no such lesson: {', '.join(unknown)} (known: {', '.join(lessons())})")
    overrides = {"CourseDirectory": {"release_directory": str(Path(into).resolve())}}
    if not record:
        overrides["GenerateAssignment"] = {"no_database": True}
        overrides["SaveCells"] = {"enabled": False}
    api = nbgrader_api(nbgrader_config(REPO_ROOT, **overrides))
    written = []
    for lesson in selected or lessons():
        result = api.generate_assignment(lesson, force=True, create=record)
        if not result["success"]:
            raise ReleaseError(f"generating {lesson} failed:\n{result.get('error', '')}")
        written.append(Path(into) / lesson / f"{lesson}.ipynb")
    return written
