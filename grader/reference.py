"""The reference observations: a lesson's probes run against its solution, in a clean process.

The grading process draws one seed at start and asks a fresh interpreter (no submission's code
has ever run in it) to run the solution notebook with the lesson's probes after their test cells.
The judge compares each submission's observations with these. Run as a program:
`python -m grader.reference NOTEBOOK PROBES SEED OUTPUT` writes the observations as JSON.
"""

import hashlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.course import SOLUTIONS, solution_notebook

SEED = secrets.randbelow(2**31)
_CACHE: dict[tuple, dict] = {}


class ReferenceRunError(RuntimeError):
    """The solution's own probes failed: the lesson's probes.py or solution needs fixing."""


def probes_file(lesson: str) -> Path:
    """The lesson's probes, kept beside its solution (and out of the release)."""
    return SOLUTIONS / lesson / "probes.py"


def references(lesson: str) -> dict | None:
    """{"seed", "source", "observations": {grade id: [...]}} for `lesson`; None without probes."""
    probes = probes_file(lesson)
    if not probes.is_file():
        return None
    notebook = solution_notebook(lesson)
    key = (lesson, hashlib.sha256(notebook.read_bytes() + probes.read_bytes()).hexdigest())
    if key not in _CACHE:
        _CACHE[key] = {
            "seed": SEED,
            "source": probes.read_text(),
            "observations": observe_in_clean_process(notebook, probes, SEED),
        }
    return _CACHE[key]


def observe_in_clean_process(notebook: Path, probes: Path, seed: int) -> dict[str, list]:
    """Run `notebook` with `probes` in a new interpreter; return each test's observations."""
    with tempfile.TemporaryDirectory() as scratch:
        output = Path(scratch) / "observations.json"
        done = subprocess.run(
            [sys.executable, "-m", "grader.reference", notebook, probes, str(seed), output],
            cwd=notebook.parent,
            env={**os.environ, "OMP_NUM_THREADS": "1", "MPLCONFIGDIR": scratch},
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            said = done.stderr.strip().splitlines()[-1:] or ["no message"]
            raise ReferenceRunError(f"the probes of {notebook.name} failed: {said[0]}")
        return json.loads(output.read_text())


def observe_notebook(notebook: Path, probes: dict, seed: int) -> dict[str, list]:
    """In this process: run the notebook's code cells, each test cell's probe after it."""
    import nbformat
    import torch

    from grader.cell_runner import CellRunner
    from grader.judge import autograded_tests
    from grader.probing import run_probe

    torch.set_num_threads(1)
    nb = nbformat.read(notebook, as_version=4)
    tests, runner = autograded_tests(nb), CellRunner()
    runner.shell.run_line_magic("matplotlib", "agg")  # nobody looks at these figures
    observations = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        grade_id = tests.get(index)
        if grade_id is None:  # the test cells' own checks are not needed for the probes
            runner.run(cell.source)
        elif grade_id in probes:
            observations[grade_id] = run_probe(probes, grade_id, runner.shell.user_ns, seed)
    return observations


def main(argv: list[str]) -> int:
    """Write the solution's observations; fail if a probe fails on the solution."""
    from grader.probing import load_probes

    notebook, seed, output = Path(argv[0]), int(argv[2]), Path(argv[3])
    probes = load_probes(Path(argv[1]).read_text())
    observations = observe_notebook(notebook, probes, seed)
    missing = [name for name in probes if name not in observations]
    if missing:
        print(f"no test cell for the probes {missing}", file=sys.stderr)
        return 1
    for grade_id, items in observations.items():
        if items and items[-1][0] == "error":
            print(f"{grade_id} fails on the solution: {items[-1][1]}", file=sys.stderr)
            return 1
    output.write_text(json.dumps(observations))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
