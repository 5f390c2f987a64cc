"""Helpers the tests share: run a notebook, read nbgrader's verdicts on it."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbgrader.validator import Validator


def execute(path: Path) -> nbformat.NotebookNode:
    """Run a notebook in a fresh kernel, in its own folder, keeping going after errors."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=120, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    )
    return client.execute()


def validate(path: Path, *, invert: bool = False) -> dict:
    """nbgrader's validation result: failing test cells, or with `invert` passing ones."""
    return Validator(invert=invert).validate(str(path))
