"""Look at a submission before grading it: is the notebook there, and is it a notebook?"""

import json
import os
import stat
from pathlib import Path

import nbformat

from grader.cells import grade_id
from grader.outcome import Outcome

SIZE_LIMIT = 50 * 1024**2
MAX_CELLS = 2000  # a lesson has fewer than 100


def open_no_follow(path, flags: int) -> int:
    """os.open that refuses a symbolic link (for `open(..., opener=)`)."""
    return os.open(path, flags | os.O_NOFOLLOW)


def regular_files(folder: Path) -> list[Path]:
    """The regular files under `folder`, sorted; links and special files are not followed."""
    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in files:
            path = Path(root) / name
            if stat.S_ISREG(path.lstat().st_mode):
                found.append(path)
    return sorted(found)


def problem(folder: Path, notebook: str) -> tuple[Outcome, str] | None:
    """(outcome, reason) when the submission's `notebook` (its name without .ipynb) cannot be
    graded, else None. Never raises."""
    return checked(folder, notebook)[0]


def checked(
    folder: Path, notebook: str
) -> tuple[tuple[Outcome, str] | None, nbformat.NotebookNode | None]:
    """(None, the notebook as `nbformat.read` gives it, checked against the schema) where the
    submission's `notebook` can be graded, else ((outcome, reason), None). Never raises."""
    read: list = []
    try:
        why = _problem(Path(folder), notebook, read)
    except Exception as error:  # whatever the file does to a parser, it is not gradable
        why = Outcome.MALFORMED, f"{notebook}.ipynb cannot be read ({type(error).__name__})"
    return (why, None) if why else (None, read[0])


def _problem(folder: Path, notebook: str, read: list) -> tuple[Outcome, str] | None:
    """Why the notebook cannot be graded, or None with the notebook as read appended to `read`."""
    expected = f"{notebook}.ipynb"
    path = folder / expected
    if folder.is_symlink():
        return Outcome.MALFORMED, "the submission folder is a symbolic link"
    if path.is_symlink() or (path.exists() and not stat.S_ISREG(path.lstat().st_mode)):
        return Outcome.MALFORMED, f"{expected} is a link or a special file, not a notebook file"
    if not path.is_file():
        others = sorted(p.name for p in folder.glob("*.ipynb")) if folder.is_dir() else []
        found = f"; found {', '.join(others)}" if others else ""
        return Outcome.MISSING, f"no {expected} in the submission{found}"
    size = path.lstat().st_size
    if size > SIZE_LIMIT:
        return Outcome.MALFORMED, f"{expected} is {size / 1024**2:.0f} MB, over the 50 MB limit"
    with open(path, "rb", opener=open_no_follow) as handle:
        data = handle.read(SIZE_LIMIT + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return Outcome.MALFORMED, f"{expected} is not valid UTF-8 (byte {error.start})"
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as error:
        truncated = text.lstrip().startswith("{") and not text.rstrip().endswith("}")
        hint = " (the file looks truncated)" if truncated else ""
        return Outcome.MALFORMED, f"{expected} is not JSON: {type(error).__name__}{hint}"
    version = raw.get("nbformat") if isinstance(raw, dict) else None
    if type(version) is not int or version != 4:
        return (
            Outcome.MALFORMED,
            f"{expected} has nbformat version {version!r}; lessons use version 4",
        )
    if type(raw.get("nbformat_minor")) is not int:
        minor = raw.get("nbformat_minor")
        return Outcome.MALFORMED, f"{expected} has nbformat_minor {minor!r}, not a whole number"
    cells = raw.get("cells")
    if isinstance(cells, list) and len(cells) > MAX_CELLS:
        return (
            Outcome.MALFORMED,
            f"{expected} has {len(cells)} cells, over the limit of {MAX_CELLS}",
        )
    try:  # read as nbformat.read reads it (sources joined, transient fields dropped)
        node = nbformat.v4.to_notebook_json(raw, minor=raw["nbformat_minor"])
    except Exception:  # e.g. a line that is not text: the schema says what is wrong
        node = None
    try:
        nbformat.validate(node if node is not None else nbformat.from_dict(raw))
    except nbformat.ValidationError as error:
        return Outcome.MALFORMED, f"{expected} is not a valid notebook: {error.message[:200]}"
    if node is None:
        return Outcome.MALFORMED, f"{expected} cannot be read as a notebook"
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell.get("metadata", {}).get("nbgrader", {}), dict):
            return (
                Outcome.MALFORMED,
                f"{expected}: cell {number} has nbgrader metadata that is no object",
            )
    read.append(node)
    return None


def extra_notebooks(folder: Path, notebooks: list[str]) -> list[str]:
    """Notebooks in the submission other than the assignment's `notebooks`: they are not
    graded."""
    expected = {f"{name}.ipynb" for name in notebooks}
    return sorted(p.name for p in Path(folder).glob("*.ipynb") if p.name not in expected)


def deleted_tests(folder: Path, notebook: str, grade_ids: list[str]) -> list[str]:
    """The notebook's test cells missing from a (readable) submission of it."""
    nb = nbformat.read(Path(folder) / f"{notebook}.ipynb", as_version=4)
    present = {grade_id(c) for c in nb.cells}
    return [test for test in grade_ids if test not in present]
