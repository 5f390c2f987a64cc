"""Building courses of adversarial and malformed submissions for the integrity tests."""

import hashlib
from pathlib import Path

import nbformat

from grader.course import solution_notebook, student_notebook
from grader.init import init_course

LESSON = "01_tensors_and_requires_grad"


def new_course(root: Path) -> Path:
    """A fresh course with an honest student whose submission is the solution."""
    course = init_course(root)
    submit(course, "honest", solution_notebook(LESSON).read_bytes())
    return course


def submit(course: Path, student: str, data: bytes, name: str = f"{LESSON}.ipynb") -> Path:
    """Put `data` in as a student's submission file."""
    folder = course / "submitted" / student / LESSON
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return folder / name


def answered(code: str, cell: str = "make_leaf") -> bytes:
    """The student notebook with `code` as the answer to `cell`, other answers left blank."""
    nb = nbformat.read(student_notebook(LESSON), as_version=4)
    target = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell)
    target.source = code
    return nbformat.writes(nb).encode()


def digests(course: Path) -> dict[str, str]:
    """sha256 of every submitted file, to show that grading changed none."""
    return {
        str(p.relative_to(course)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((course / "submitted").rglob("*"))
        if p.is_file()
    }
