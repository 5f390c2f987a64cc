"""Store the solutions' outputs: run each lesson whose code changed since its outputs were
stored (or each one named), and write what it prints now, as students will see it.

A notebook records a digest of the code its outputs came from (`metadata.outputs_of`), so an
unchanged lesson is not run again. Where a new output differs from the stored one only by what
changes from run to run and machine to machine (the patterns nbval sanitizes before it compares:
memory addresses, the kernel's per-process cell file), the stored one is kept, so running this
on another machine changes nothing that did not change.
"""

import configparser
import hashlib
import json
import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grader.course import REPO_ROOT

SANITIZE = REPO_ROOT / "tests" / "nbval_sanitize.cfg"
DIGEST_KEY = "outputs_of"
CELL_SECONDS = 600


def code_digest(nb) -> str:
    """A digest of the notebook's code cells: what its outputs depend on."""
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    return hashlib.sha256(json.dumps(sources).encode()).hexdigest()[:16]


def store_outputs(paths: list[Path], *, force: bool = False) -> list[Path]:
    """Run each notebook at `paths` whose code changed since its outputs were stored (every
    one, with `force`), keep its outputs as described above, and write it; the ones written."""
    written = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if not force and nb.metadata.get(DIGEST_KEY) == code_digest(nb):
            continue
        stored = [c.get("outputs", []) for c in nb.cells]
        fresh = nbformat.from_dict(json.loads(json.dumps(nb)))  # run a copy
        client = NotebookClient(
            fresh,
            timeout=CELL_SECONDS,
            allow_errors=True,
            record_timing=False,  # when each cell ran: a change on every run, and no output
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
        for cell, old in zip(fresh.cells, stored, strict=True):
            cell.metadata.pop("execution", None)  # timings a past run recorded
            if cell.cell_type == "code" and _same_but_volatile(old, cell.outputs):
                cell.outputs = old
        fresh.metadata[DIGEST_KEY] = code_digest(fresh)
        nbformat.write(fresh, path)
        written.append(path)
    return written


def _same_but_volatile(old: list, new: list) -> bool:
    return _comparable(old) == _comparable(new)


def _comparable(outputs: list) -> str:
    text = json.dumps(outputs, sort_keys=True)
    for pattern, replacement in _volatile():
        text = pattern.sub(replacement, text)
    return re.sub(r'"execution_count": \d+', '"execution_count": N', text)


def _volatile() -> list[tuple[re.Pattern, str]]:
    """The patterns nbval sanitizes before comparing outputs (tests/nbval_sanitize.cfg)."""
    config = configparser.ConfigParser()
    config.read(SANITIZE)
    return [(re.compile(s["regex"]), s["replace"]) for s in config.values() if "regex" in s]
