"""Which assignment's notebook a submitted file is, by what nbgrader wrote into it.

Every graded, solution or read-only cell of a released notebook carries nbgrader's metadata: its
grade id and the checksum of what was released, which a student's copy keeps whatever they
type. A file whose cells carry another notebook's ids and checksums is that notebook, whatever
its name says; one with none (a notebook made anew, a broken file) says nothing and is not
judged here. Each notebook of the course is known by its released copy (the course's
`release/`, and the repository's `notebooks/` for the kit's lessons), else by its source's
grade ids alone.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from grader.course import Course, lessons, student_notebook

NOTEBOOK = ".ipynb"


def cells_of(data: bytes | str) -> dict[str, str]:
    """grade id -> checksum ("" where none) of the nbgrader cells in a notebook's JSON; {} for
    a file that is no notebook or has no such cell."""
    try:
        notebook = json.loads(data)
    except (ValueError, TypeError, RecursionError):
        return {}
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    found: dict[str, str] = {}
    for cell in cells if isinstance(cells, list) else []:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        if not isinstance(nbgrader, dict) or not isinstance(nbgrader.get("grade_id"), str):
            continue
        checksum = nbgrader.get("checksum")
        found[nbgrader["grade_id"]] = checksum if isinstance(checksum, str) else ""
    return found


@dataclass(frozen=True)
class Known:
    """One notebook of the course, as its released copies and source mark their cells."""

    assignment: str
    notebook: str  # without .ipynb
    checksums: dict[str, frozenset[str]]  # grade id -> the released checksums (empty: unknown)

    def agreement(self, cells: dict[str, str]) -> tuple[int, int]:
        """(cells whose grade id and checksum are this notebook's, cells whose grade id is and
        whose checksum does not say otherwise): the more, the likelier `cells` are this one's."""
        same = sum(
            1
            for grade_id, checksum in cells.items()
            if checksum in self.checksums.get(grade_id, ())
        )
        fits = sum(
            1
            for grade_id, checksum in cells.items()
            if grade_id in self.checksums
            and (
                not checksum or not self.checksums[grade_id] or checksum in self.checksums[grade_id]
            )
        )
        return same, fits

    def describe(self) -> str:
        return f"{self.assignment}'s {self.notebook}{NOTEBOOK}"


def known_notebooks(course: Course, notebooks: dict[str, list[str]]) -> list[Known]:
    """Each notebook of `notebooks` (assignment -> notebook names), as it was released."""
    release = course.root / "release"
    kit = set(lessons())
    found = []
    for assignment, names in notebooks.items():
        for name in names:
            copies = [release / assignment / f"{name}{NOTEBOOK}"]
            if assignment in kit:
                copies.append(student_notebook(assignment))
            checksums: dict[str, set[str]] = {}
            for copy in copies:
                for grade_id, checksum in _read(copy).items():
                    checksums.setdefault(grade_id, set()).update({checksum} - {""})
            if not checksums:  # never released: the source's grade ids, no checksum
                source = _read(course.source / assignment / f"{name}{NOTEBOOK}")
                checksums = {grade_id: set() for grade_id in source}
            frozen = {grade_id: frozenset(sums) for grade_id, sums in checksums.items()}
            found.append(Known(assignment, name, frozen))
    return found


def _read(path: Path) -> dict[str, str]:
    try:
        return cells_of(path.read_bytes())
    except OSError:
        return {}


def mismatch(cells: dict[str, str], assignment: str, notebook: str, known: list[Known]) -> str:
    """Why a file whose nbgrader cells are `cells` is not `assignment`'s `notebook`, or "" if
    it may be: it is another notebook of the course (named), or none the course knows."""
    if not cells:
        return ""
    target = next((k for k in known if (k.assignment, k.notebook) == (assignment, notebook)), None)
    if target is None:
        return ""
    mine = target.agreement(cells)
    rivals = [k for k in known if k is not target and k.agreement(cells) > mine]
    if rivals:
        best = max(rivals, key=lambda k: k.agreement(cells))
        return f"its nbgrader cells are {best.describe()}, not {target.describe()}"
    if mine[1] or not target.checksums:
        return ""
    ids = ", ".join(sorted(cells)[:3]) + (", …" if len(cells) > 3 else "")
    return (
        f"its nbgrader cells ({ids}) are none of {target.describe()}'s, nor of any notebook of"
        " the course: a notebook of another course or assignment"
    )


def best_fit(cells: dict[str, str], assignments: list[str], stem: str, known: list[Known]) -> str:
    """The one of `assignments` whose notebook named like `stem` these cells fit best, or ""
    where none fits or two fit alike."""
    scores = sorted(
        ((k.agreement(cells), k.assignment) for k in known
         if k.assignment in assignments and stem.endswith(k.notebook)),
        reverse=True,
    )  # fmt: skip
    if not scores or not scores[0][0][1] or (len(scores) > 1 and scores[1][0] == scores[0][0]):
        return ""
    return scores[0][1]
