"""Try many answers against one lesson for the price of one run.

`python tests/answer_runs.py` reads a request on stdin: a solution notebook, its probes, a seed
and answers (answer cell, answer source, test cell). It runs the solution's code cells once, in
the cell runner the fast engine grades with (a kernel's outputs, without a kernel), and for
each answer forks just before the answer's cell: the fork runs the answer in its place, the
cells up to its test cell, then the test's probe, and sends back the test cell's outputs and
what the probe observed. The solution's own run goes on unchanged, so every answer starts
from the same state as a student's would and sees no other answer.
"""

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nbformat

ANSWER_SECONDS = 120  # a fork that runs longer is stopped, and its answer reported as hung
SEED = 20261123  # the probes' inputs for every answer (the reference uses the same)


def _code_cells(notebook: str) -> tuple[list[str], dict[str, int]]:
    """The code cells' sources, and each graded cell's place among them."""
    from grader.cells import grade_id

    cells = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    places = {grade_id(c): i for i, c in enumerate(cells) if grade_id(c)}
    return [c.source for c in cells], places


def _try(runner, sources, places, answer, probes, seed) -> dict:
    """In a fork: the answer in its cell's place, the cells up to its test, then the probe,
    whose drawn functions this process serves, as the grading process does
    (`grader.function_oracle`): the fork holds handles only."""
    from grader.function_oracle import FunctionOracle
    from grader.probing import Drawing, run_probe, with_drawn
    from grader.remote_functions import RemoteFunctions
    from grader.submission_seeds import functions_key, inputs_seed

    read, write = os.pipe()
    asks_read, asks_write = os.pipe()
    answers_read, answers_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in (read, asks_read, answers_write):
            os.close(fd)
        signal.alarm(ANSWER_SECONDS)
        start, test = places[answer["cell"]], places[answer["test"]]
        outputs = []
        for index in range(start, test + 1):
            source = answer["answer"] if index == start else sources[index]
            outputs, _, _ = runner.run(source)
        drawing = Drawing(inputs_seed(seed), RemoteFunctions.over_pipes(asks_write, answers_read))
        observed = run_probe(probes, answer["test"], runner.shell.user_ns, drawing)
        with os.fdopen(write, "w") as report:
            json.dump({"outputs": outputs, "observed": observed}, report)
        os._exit(0)
    for fd in (write, asks_write, answers_read):
        os.close(fd)
    oracle = FunctionOracle(functions_key(seed))
    text = _serve_until_reported(read, asks_read, answers_write, oracle)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
        return {"died": f"the answer ran over {ANSWER_SECONDS} s"}
    if not text:
        return {"died": f"the answer's run ended without a report (wait status {status})"}
    run = json.loads(text)
    return {**run, "observed": with_drawn(run["observed"], oracle, answer["test"])}


def _serve_until_reported(report: int, asks: int, answers: int, oracle) -> str:
    """Answer the fork's asks of its drawn functions until its report has come; the report."""
    from grader.sandbox import wire

    chunks, watched = [], [report, asks]
    while report in watched:
        ready, _, _ = select.select(watched, [], [])
        if asks in ready:
            try:
                ask = wire.receive(asks, 1 << 28)
                wire.send(answers, wire.Kind.ANSWER, **oracle.answer(ask))
            except (wire.WireError, OSError):
                watched.remove(asks)
        if report in ready:
            chunk = os.read(report, 1 << 20)
            chunks.append(chunk)
            if not chunk:
                watched.remove(report)
    for fd in (report, asks, answers):
        os.close(fd)
    return b"".join(chunks).decode()


def try_answers(lesson: str, answers: list[dict], seed: int, folder: Path) -> list[dict]:
    """Each answer's test cell outputs and probe observations (or why its run died)."""
    from grader.course import solution_notebook
    from grader.judging.reference import probes_file

    report = folder / "answers.json"
    request = {
        "notebook": str(solution_notebook(lesson)),
        "probes": str(probes_file(lesson)),
        "seed": seed,
        "answers": [{k: a[k] for k in ("cell", "answer", "test")} for a in answers],
        "folder": str(folder),
        "report": str(report),
    }
    subprocess.run([sys.executable, __file__], input=json.dumps(request), text=True, check=True)
    return json.loads(report.read_text())


def tried_by_lesson(answers_of, folders) -> Callable[[str], list[dict]]:
    """lesson -> each of `answers_of(lesson)` tried, each lesson once, on first use (in a fresh
    folder from the `tmp_path_factory` `folders`)."""
    runs: dict[str, list[dict]] = {}

    def run(lesson: str) -> list[dict]:
        if lesson not in runs:
            runs[lesson] = try_answers(lesson, answers_of(lesson), SEED, folders.mktemp(lesson))
        return runs[lesson]

    return run


def answer_cases(answers_of) -> list:
    """One pytest case per answer of every lesson, `(lesson, index)`, named after its cell."""
    import pytest

    from grader.course import lessons

    return [
        pytest.param((lesson, i), id=f"{lesson}-{answer['cell']}-{i}")
        for lesson in lessons()
        for i, answer in enumerate(answers_of(lesson))
    ]


def main() -> None:
    request = json.load(sys.stdin)
    import matplotlib
    import torch

    matplotlib.use("module://matplotlib_inline.backend_inline")
    torch.set_num_threads(1)  # a fork inherits no thread pool it cannot use
    from grader.probing import load_probes
    from grader.sandbox.inside.cell_runner import CellRunner

    sources, places = _code_cells(request["notebook"])
    probes = load_probes(Path(request["probes"]).read_text())
    answers = request["answers"]
    os.chdir(request["folder"])
    runner = CellRunner()
    results: list = [None] * len(answers)
    for index, source in enumerate(sources):
        for k, answer in enumerate(answers):
            if places[answer["cell"]] == index:
                results[k] = _try(runner, sources, places, answer, probes, request["seed"])
        runner.run(source)
    Path(request["report"]).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
