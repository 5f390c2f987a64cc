"""Validate a lesson notebook wherever a student works: run it from a fresh start, then list each
failed test by what it checks, its message first.

nbgrader's Validate button needs nbgrader, which only the instructor installs. This needs what a
student's install has (Jupyter's `nbclient`):

- in a terminal (pip install, the repository): `python -m grader.validation NOTEBOOK.ipynb`;
- in a notebook cell: `from grader.validation import validate; validate("NOTEBOOK.ipynb")`, or in
  Colab, where the notebook is no file, `validate()` alone.

The notebook runs in a new kernel, as the grader runs it, with `NBGRADER_EXECUTION` set to
`validate` as nbgrader sets it; a `validate()` inside it does nothing there, so it never runs
itself, nor does it run at grading time.
"""

import argparse
import ast
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

CELL_SECONDS = 300  # one cell's limit: a lesson's longest cell takes a few seconds
RUNNING = "NBGRADER_EXECUTION"  # set by nbgrader's validate and autograde, and here
ELSEWHERE = (
    "validate() checks a notebook from a fresh start: give it the notebook's file, "
    'validate("LESSON.ipynb"), or run `python -m grader.validation FILE.ipynb` in a terminal '
    "(in Colab, validate() alone finds this notebook)."
)


@dataclass(frozen=True)
class Failure:
    """A test cell that failed: what it checks, and its message."""

    checks: str
    message: str


def what_it_checks(source: str) -> str:
    """A test cell's docstring, or its first line, followed by an ellipsis when cut."""
    try:
        summary = ast.get_docstring(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # as the student left it
        summary = None
    lines = source.strip().splitlines()
    summary = summary or (lines[0] if lines else "")
    return summary if summary == source.strip() else f"{summary} (…)"


def _is_test(cell) -> bool:
    return cell.cell_type == "code" and bool(cell.metadata.get("nbgrader", {}).get("grade"))


def _message(cell) -> str | None:
    """What a failed cell said, the error's message first; None if it passed."""
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            name, value = output.get("ename", ""), output.get("evalue", "")
            return value if name == "CheckFailed" else f"{name}: {value}"
    for output in cell.get("outputs", []):
        if output.output_type == "stream" and output.get("name") == "stderr":
            return output.get("text", "").strip()
    return None


def failures(executed: nbformat.NotebookNode) -> list[Failure]:
    """The failed test cells of a notebook that has run, in order."""
    found = []
    for cell in executed.cells:
        message = _message(cell) if _is_test(cell) else None
        if message is not None:
            found.append(Failure(what_it_checks(cell.source), message))
    return found


def run_fresh(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    """`nb` run top to bottom in a new kernel started in `folder`, every cell run even after an
    error, as the grader runs it."""
    from nbclient import NotebookClient  # Jupyter's, imported only when a notebook runs

    kernel = nb.metadata.get("kernelspec", {}).get("name", "python3")
    client = NotebookClient(
        nb,
        timeout=CELL_SECONDS,
        kernel_name=kernel,
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    previous = os.environ.get(RUNNING)
    os.environ[RUNNING] = "validate"  # the new kernel inherits it
    try:
        return client.execute()
    finally:
        if previous is None:
            os.environ.pop(RUNNING, None)
        else:
            os.environ[RUNNING] = previous


def report(found: list[Failure], tests: int) -> str:
    """What the student reads: each failed test, its message first, then what it checks."""
    if not found:
        return f"All {tests} tests pass when the notebook runs from a fresh start."
    lines = [f"{len(found)} of {tests} tests fail when the notebook runs from a fresh start:"]
    for number, failure in enumerate(found, 1):
        lines.append(f"\n{number}. {failure.message}")
        lines.append(f"   (the test that checks: {' '.join(failure.checks.split())})")
    return "\n".join(lines)


def validate_file(path: Path) -> tuple[str, int]:
    """Run the notebook at `path` from a fresh start: the report and the number of failures."""
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: cannot read this notebook ({error})") from None
    return _validated(nb, path.resolve().parent)


def _validated(nb: nbformat.NotebookNode, folder: Path) -> tuple[str, int]:
    tests = sum(1 for cell in nb.cells if _is_test(cell))
    found = failures(run_fresh(nb, folder))
    return report(found, tests), len(found)


def _colab_notebook() -> nbformat.NotebookNode | None:
    """The notebook open in Colab, or None elsewhere."""
    try:
        from google.colab import _message  # type: ignore[import-not-found]
    except ImportError:
        return None
    reply = _message.blocking_request("get_ipynb", timeout_sec=60)
    return nbformat.from_dict(reply["ipynb"]) if reply and "ipynb" in reply else None


def validate(path: str | None = None) -> int | None:
    """Check a notebook from a fresh start and print each failed test: the one at `path`, or
    in Colab, with no path, the one open. Returns the number of failed tests (None if nothing
    ran: inside a validation or a grading run, or with no notebook to run)."""
    if os.environ.get(RUNNING):
        return None
    if path is not None:
        text, failed = validate_file(Path(path))
    else:
        nb = _colab_notebook()
        if nb is None:
            print(ELSEWHERE)
            return None
        text, failed = _validated(nb, Path.cwd())
    print(text)
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grader.validation",
        description="Run a lesson notebook from a fresh start and list each failed test.",
    )
    parser.add_argument("notebook", type=Path)
    args = parser.parse_args(argv)
    try:
        text, failed = validate_file(args.notebook)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
