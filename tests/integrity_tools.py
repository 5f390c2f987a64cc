"""Building courses of adversarial and malformed submissions for the integrity tests."""

import hashlib
import json
from pathlib import Path

import nbformat

from grader.commands.init import init_course
from grader.course import Course, solution_notebook, student_notebook

LESSON = "01_tensors_and_requires_grad"


def _full_marks(lesson: str) -> float:
    """The points of every test cell of `lesson`: what its solution scores."""
    cells = nbformat.read(solution_notebook(lesson), as_version=4).cells
    return sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in cells)


FULL_MARKS = _full_marks(LESSON)


def new_course(root: Path, honest: str | None = "honest") -> Course:
    """A fresh course, with a student named `honest` whose submission is the solution."""
    course = init_course(root)
    if honest is not None:
        submit(course, honest, solution_notebook(LESSON).read_bytes())
    return course


def submit(course: Course, student: str, data: bytes, name: str = f"{LESSON}.ipynb") -> Path:
    """Put `data` in as a student's submission file."""
    folder = course.root / "submitted" / student / LESSON
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return folder / name


def answered(code: str, cell: str = "make_leaf") -> bytes:
    """The student notebook with `code` as the answer to `cell`, other answers left blank."""
    nb = nbformat.read(student_notebook(LESSON), as_version=4)
    target = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell)
    target.source = code
    return nbformat.writes(nb).encode()


INTEGRITY = Path(__file__).parent / "integrity"


def attack_values(course: Course, first_student: str, port: int, recorded: dict) -> dict:
    """What the attacks' placeholders stand for: paths an attacker would aim at, the code that
    finds the report channel, and a genuine report (`recorded`) for the replay attacks."""
    import sysconfig

    import grader
    from grader.course import solution_notebook

    return {
        "channel": (INTEGRITY / "channel.py").read_text(),
        "recorded": json.dumps(recorded),
        "canary": course.root / "canary.txt",
        "other_submission": course.root / "submitted" / first_student / LESSON / f"{LESSON}.ipynb",
        "solution": solution_notebook(LESSON),
        "gradebook": course.root / "gradebook.db",
        "host": "127.0.0.1",
        "port": port,
        "grader_dir": Path(grader.__file__).parent,
        "site_packages": sysconfig.get_paths()["purelib"],
        "stdlib": sysconfig.get_paths()["stdlib"],
    }


def fill(code: str, values: dict) -> str:
    """An attack's code with its placeholders filled in."""
    for key, value in values.items():
        code = code.replace("{" + key + "}", str(value))
    return code


def solution_with(code: str, cells: int = 1) -> bytes:
    """The solution notebook with `code` run first in its first `cells` answer cells."""
    nb = nbformat.read(solution_notebook(LESSON), as_version=4)
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    for cell in answers[:cells]:
        cell.source = code + "\n" + cell.source
    return nbformat.writes(nb).encode()


def autograded(course: Course, student: str):
    """A student's autograded notebook."""
    path = course.root / "autograded" / student / LESSON / f"{LESSON}.ipynb"
    return nbformat.read(path, as_version=4)


def cell_text(nb, grade_id: str) -> str:
    """The stream text a cell printed, all pieces joined."""
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


def digests(course: Course) -> dict[str, str]:
    """sha256 of every submitted file, to show that grading changed none."""
    return {
        str(p.relative_to(course.root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((course.root / "submitted").rglob("*"))
        if p.is_file()
    }
