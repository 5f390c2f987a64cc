"""Look at a submission before grading it: is the notebook there, and is it a notebook?"""

import json
from pathlib import Path

import nbformat

SIZE_LIMIT = 50 * 1024**2


def problem(folder: Path, lesson: str) -> tuple[str, str] | None:
    """(outcome, reason) when the submission cannot be graded, else None."""
    expected = f"{lesson}.ipynb"
    path = Path(folder) / expected
    if not path.is_file():
        others = sorted(p.name for p in Path(folder).glob("*.ipynb")) if folder.is_dir() else []
        found = f"; found {', '.join(others)}" if others else ""
        return "missing notebook", f"no {expected} in the submission{found}"
    size = path.stat().st_size
    if size > SIZE_LIMIT:
        return "malformed", f"{expected} is {size / 1024**2:.0f} MB, over the 50 MB limit"
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return "malformed", f"{expected} is not valid UTF-8 (byte {error.start})"
    try:
        raw = json.loads(text)
    except ValueError as error:
        truncated = text.lstrip().startswith("{") and not text.rstrip().endswith("}")
        hint = " (the file looks truncated)" if truncated else ""
        return "malformed", f"{expected} is not JSON: {error}{hint}"
    if not isinstance(raw, dict) or raw.get("nbformat") != 4:
        version = raw.get("nbformat") if isinstance(raw, dict) else None
        return "malformed", f"{expected} has nbformat version {version!r}; lessons use version 4"
    try:
        nbformat.validate(nbformat.from_dict(raw))
    except nbformat.ValidationError as error:
        return "malformed", f"{expected} is not a valid notebook: {error.message}"
    return None


def extra_notebooks(folder: Path, lesson: str) -> list[str]:
    """Notebooks in the submission other than the lesson's: they are not graded."""
    return sorted(p.name for p in Path(folder).glob("*.ipynb") if p.name != f"{lesson}.ipynb")


def deleted_tests(folder: Path, lesson: str, grade_ids: list[str]) -> list[str]:
    """The lesson's test cells missing from a (readable) submission."""
    nb = nbformat.read(Path(folder) / f"{lesson}.ipynb", as_version=4)
    present = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}
    return [grade_id for grade_id in grade_ids if grade_id not in present]
