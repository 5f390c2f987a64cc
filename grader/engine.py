"""The sandbox side of the fast engine: a warm, sandboxed process that runs a notebook's cells.

`SandboxedExecute` stands where nbgrader's `Execute` step stands (see `grader.fast_autograde`):
it sends the code cells to the sandbox (`grader.zygote`), which runs them in a fork of a
process that imported torch long ago, and stores their outputs as a kernel would.
"""

import os
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from grader import wire
from grader.judge import autograded_tests
from grader.sandbox import Limits, Protections, probe

RESPONSE_LIMIT = 256 * 1024**2
FILE_LIMIT = 32 * 1024**2


class Sandbox:
    """A running warm process inside the sandbox; restarted when a submission kills it."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.protections, self.prefix = probe()
        self.process: subprocess.Popen | None = None
        # The warm process's own errors, for diagnosis.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the sandbox

    def start(self) -> None:
        """Start the warm process and wait until it has imported torch."""
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        env["GRADER_PID_NAMESPACE"] = "1" if self.protections.namespaces else "0"
        self.process = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "grader.zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
        )
        try:
            self._receive(timeout=120)
            wire.send(self.process.stdin.fileno(), {"warm": _lesson_cells()})
            self._receive(timeout=300)
        except (wire.WireError, TimeoutError) as error:
            self.log.seek(0)
            said = self.log.read().decode(errors="replace").strip().splitlines()[-3:]
            self.stop()
            raise RuntimeError(f"the sandbox did not start ({error}): {' / '.join(said)}") from None

    def stop(self) -> None:
        """Stop the warm process."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def run(self, cells: list[tuple[int, str]], files: dict[str, bytes], probes=None) -> dict:
        """Run the cells with the files beside them; return the cells' outputs and the outcome.

        `probes` ({"source", "seed", "at": {cell index: grade id}}) are run after their cells,
        and what they observed comes back under "probes".
        """
        if self.process is None or self.process.poll() is not None:
            self.start()
        request = {
            "cells": cells,
            "files": {name: data.hex() for name, data in files.items()},
            "limits": asdict(self.limits),
            "probes": probes,
        }
        try:
            wire.send(self.process.stdin.fileno(), request)
            return self._receive(timeout=self.limits.notebook_seconds + 30)
        except (wire.WireError, OSError, TimeoutError) as error:
            self.stop()
            return {
                "cells": {},
                "outcome": "kernel died",
                "detail": f"the sandbox stopped: {error}",
            }

    def _receive(self, timeout: float) -> dict:
        fd = self.process.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise TimeoutError(f"no answer in {timeout:.0f} s")
        return wire.receive(fd, RESPONSE_LIMIT)


_SANDBOX: Sandbox | None = None
LAST_RUN: dict = {}


def sandbox(limits: Limits | None = None) -> Sandbox:
    """This process's sandbox, started on first use."""
    global _SANDBOX
    if _SANDBOX is None or (limits is not None and _SANDBOX.limits != limits):
        if _SANDBOX is not None:
            _SANDBOX.stop()
        _SANDBOX = Sandbox(limits or Limits())
    return _SANDBOX


def protections() -> Protections:
    """The protections the sandbox has on this machine."""
    return sandbox().protections


def _lesson_cells() -> list[str]:
    """The code cells of the released lessons outside the exercises (no solutions in them)."""
    from grader.course import lessons, student_notebook

    sources = []
    for lesson in lessons():
        for cell in nbformat.read(student_notebook(lesson), as_version=4).cells:
            nbgrader = cell.metadata.get("nbgrader", {})
            if (
                cell.cell_type == "code"
                and not nbgrader.get("solution")
                and not nbgrader.get("grade")
            ):
                sources.append(cell.source)
    return sources


def _folder_files(folder: Path, notebook: str) -> dict[str, bytes]:
    files, total = {}, 0
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != notebook and not path.is_symlink():
            total += path.stat().st_size
            if total <= FILE_LIMIT:
                files[str(path.relative_to(folder))] = path.read_bytes()
    return files


class SandboxedExecute(Preprocessor):
    """nbgrader's Execute step, run in the sandbox instead of a fresh kernel."""

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        """Run the notebook's code cells and store their outputs as a kernel would."""
        folder = Path(resources.get("metadata", {}).get("path") or ".")
        name = resources.get("unique_key", "notebook").split("/")[-1] + ".ipynb"
        cells = [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        started = time.monotonic()
        result = sandbox().run(cells, _folder_files(folder, name), _probes(nb, resources))
        resources["probe_reports"] = result.get("probes", {})
        ran = result.get("cells", {})
        stopped = result["outcome"] != "graded"
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            done = ran.get(str(index))
            cell.outputs = _outputs(done["outputs"]) if done else []
            cell.execution_count = done["execution_count"] if done else None
            if done is None and stopped and cell.metadata.get("nbgrader", {}).get("grade"):
                cell.outputs = [_not_run(result)]
        LAST_RUN.clear()
        LAST_RUN.update(
            outcome=result["outcome"],
            detail=result.get("detail", ""),
            seconds=time.monotonic() - started,
        )
        return nb, resources


def _probes(nb, resources) -> dict | None:
    """What the sandbox must probe: the lesson's probes, placed after their test cells."""
    references = resources.get("grader_references")
    if not references:
        return None
    probed = references["observations"]
    at = {str(i): gid for i, gid in autograded_tests(nb).items() if gid in probed}
    return {"source": references["source"], "seed": references["seed"], "at": at}


OUTPUT_KEYS = {
    "stream": {"name", "text"},
    "display_data": {"data", "metadata"},
    "execute_result": {"data", "metadata", "execution_count"},
    "error": {"ename", "evalue", "traceback"},
}


def _outputs(raw) -> list:
    """The sandbox's outputs as notebook nodes, keeping only well-formed ones."""
    kept = []
    for out in raw if isinstance(raw, list) else []:
        keys = OUTPUT_KEYS.get(out.get("output_type")) if isinstance(out, dict) else None
        if keys is not None:
            node = {k: out[k] for k in keys if k in out}
            kept.append(nbformat.from_dict({"output_type": out["output_type"], **node}))
    return kept


def _not_run(result: dict) -> dict:
    return nbformat.from_dict(
        {
            "output_type": "error",
            "ename": "NotRun",
            "evalue": f"this test did not run: {result['outcome']} ({result.get('detail', '')})",
            "traceback": [],
        }
    )
