"""Bring in submissions exported by a learning platform: one notebook per student and lesson.

A file name must hold the student id first and the lesson id somewhere after it, e.g.
`jdoe_01_tensors_and_requires_grad.ipynb` or `jdoe_late_123_01_tensors_and_requires_grad.ipynb`
(platforms add their own parts). Files go to `submitted/<student>/<lesson>/<lesson>.ipynb`
with a `timestamp.txt`, where nbgrader looks for them.
"""

import difflib
import re
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from grader.compat import UTC
from grader.course import Course, lessons

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.@-]*$")


@dataclass(frozen=True)
class Incoming:
    """One file found in the export."""

    name: str
    modified: datetime
    data: bytes


@dataclass(frozen=True)
class Placed:
    """A file that was put into the course."""

    name: str
    student: str
    lesson: str
    note: str
    notebook: str = ""


@dataclass(frozen=True)
class Rejected:
    """A file that was not placed, and why."""

    name: str
    reason: str


def read_export(source: Path) -> Iterator[Incoming]:
    """The files in a folder (recursively) or a zip archive, by base name."""
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(f"{source}: no such file or folder")
    if source.is_dir():
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
            yield Incoming(path.name, modified, path.read_bytes())
        return
    if not zipfile.is_zipfile(source):
        raise ValueError(f"{source}: not a folder or a zip archive")
    with zipfile.ZipFile(source) as archive:
        for info in archive.infolist():
            if not info.is_dir():
                modified = datetime(*info.date_time, tzinfo=UTC)
                yield Incoming(Path(info.filename).name, modified, archive.read(info))


def identify(
    name: str, only_lesson: str | None = None, known: list[str] | None = None
) -> tuple[str, str] | str:
    """(student, lesson) named by a file name, or the reason it names none; `known`: the
    course's lessons and assignments (default: the kit's lessons)."""
    if not name.endswith(".ipynb"):
        return "not a notebook (.ipynb)"
    stem = name[: -len(".ipynb")]
    known = lessons() if known is None else known
    named = [lesson for lesson in known if lesson in stem]
    if only_lesson and named and only_lesson not in named:
        return f"is a submission of {named[0]}, not {only_lesson}"
    lesson = named[0] if named else only_lesson
    if lesson is None:
        close = difflib.get_close_matches(stem.split("_", 1)[-1], known, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]}?" if close else f" (known: {', '.join(known)})"
        return f"names no lesson{hint}"
    student = stem.split(lesson)[0].strip("_- ").split("_")[0] if named else stem.split("_")[0]
    if not STUDENT_ID.match(student):
        return f"no student id at the start of the name (found {student!r})"
    return student, lesson


def which_notebook(name: str, lesson: str, notebooks: list[str]) -> str | None:
    """The notebook of `lesson` a file name holds: its only one, else the one the name ends
    with (after the lesson's name, if it is there); None if it names none."""
    if len(notebooks) == 1:
        return notebooks[0]
    stem = name.removesuffix(".ipynb").split(lesson)[-1]
    named = [notebook for notebook in notebooks if stem.endswith(notebook)]
    return max(named, key=len) if named else None


def collect(source: Path, course: Course, lesson: str | None = None):
    """Place every submission found in `source` into the course; return (placed, rejected)."""
    if lesson is not None:
        course.known([lesson])
    with course.api().gradebook as gb:
        roster = {s.id for s in gb.students}
    chosen: dict[tuple[str, str, str], Incoming] = {}
    rejected: list[Rejected] = []
    for item in read_export(source):
        found = identify(item.name, lesson, course.lessons)
        if not isinstance(found, str):
            found = _with_notebook(item.name, *found, course.notebooks(found[1]))
        if isinstance(found, str):
            rejected.append(Rejected(item.name, found))
        elif roster and found[0] not in roster:
            rejected.append(Rejected(item.name, f"unknown student {found[0]!r}: not on the roster"))
        elif found in chosen:
            older, newer = sorted([chosen[found], item], key=lambda i: i.modified)
            chosen[found] = newer
            rejected.append(Rejected(older.name, f"duplicate for {found[0]}: kept {newer.name}"))
        else:
            chosen[found] = item
    placed = [_place(course, *found, item) for found, item in sorted(chosen.items())]
    return placed, rejected


def _with_notebook(name: str, student: str, lesson: str, notebooks: list[str]):
    """(student, lesson, notebook) for the file `name`, or why it names none of the notebooks."""
    notebook = which_notebook(name, lesson, notebooks)
    if notebook is None:
        return f"names none of {lesson}'s notebooks ({', '.join(notebooks)})"
    return student, lesson, notebook


def _place(course: Course, student: str, lesson: str, notebook: str, item: Incoming) -> Placed:
    folder = course.submission(student, lesson)
    target = folder / f"{notebook}.ipynb"
    note = "new"
    if target.exists():
        if target.read_bytes() == item.data:
            return Placed(item.name, student, lesson, "unchanged", target.name)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        backup = course.root / "collect_backup" / stamp / student / lesson
        shutil.copytree(folder, backup)
        note = f"replaced an earlier submission (kept in {backup})"
    folder.mkdir(parents=True, exist_ok=True)
    target.write_bytes(item.data)
    (folder / "timestamp.txt").write_text(item.modified.strftime("%Y-%m-%d %H:%M:%S.%f %Z"))
    return Placed(item.name, student, lesson, note, target.name)
