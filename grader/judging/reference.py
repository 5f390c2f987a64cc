"""The reference observations: a lesson's probes run against its solution, outside the sandbox.

Every submission is probed on inputs drawn from a seed of its own, so each needs the solution's
observations for that seed. A reference server (`python -m grader.judging.reference`), started by
the grading process, imports torch once. For each lesson it forks a lesson process that runs the
solution's cells up to the first exercise (the lesson itself, figures and all); for each seed, the
lesson process forks again, runs the exercises with each test cell's probe in its place, and
answers. Only the lesson asked for last keeps a process (grading goes lesson by lesson). No
submission's code or data ever reaches these processes: they get a lesson id and a seed, and run
instructor code only.
"""

import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.cells import grade_id, is_test
from grader.course import SOLUTIONS, solution_notebook
from grader.sandbox import wire
from grader.sandbox.wire import Kind

ANSWER_LIMIT = 64 * 1024**2


class ReferenceRunError(RuntimeError):
    """The solution's own probes failed: the lesson's probes.py or solution needs fixing."""


def probes_file(lesson: str) -> Path:
    """The lesson's probes, kept beside its solution (and out of the release)."""
    return SOLUTIONS / lesson / "probes.py"


class ReferenceServer:
    """The grading process's handle on its warm reference server."""

    def __init__(self):
        self.process: subprocess.Popen | None = None

    def observe(self, lesson: str, seed: int, timeout: float = 600) -> dict[str, list]:
        """The solution's observations for every test of `lesson`, on inputs drawn from `seed`."""
        self.ask(lesson, seed)
        return self.answer(lesson, seed, timeout)

    def ask(self, lesson: str, seed: int) -> None:
        """Ask for `lesson`'s observations for `seed`; `answer` collects them (meanwhile the
        server works on another core)."""
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "grader.judging.reference"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, "OMP_NUM_THREADS": "1", "MPLCONFIGDIR": tempfile.gettempdir()},
            )
        try:
            wire.send(self.process.stdin.fileno(), Kind.OBSERVE, lesson=lesson, seed=seed)
        except OSError as error:
            self.stop()
            raise ReferenceRunError(f"the reference server stopped: {error}") from None

    def answer(self, lesson: str, seed: int, timeout: float = 600) -> dict[str, list]:
        """The observations asked for `seed` (answers to earlier questions are passed over)."""
        try:
            answer = {}
            while answer.get("seed") != seed:
                ready, _, _ = select.select([self.process.stdout], [], [], timeout)
                if not ready:
                    raise TimeoutError(f"no answer in {timeout:.0f} s")
                answer = wire.receive(self.process.stdout.fileno(), ANSWER_LIMIT)
        except (wire.WireError, OSError, TimeoutError) as error:
            self.stop()
            raise ReferenceRunError(f"the reference server stopped: {error}") from None
        if answer["kind"] != Kind.OBSERVATIONS:
            raise ReferenceRunError(f"the probes of {lesson} failed: {answer.get('reason')}")
        return answer["observations"]

    def stop(self) -> None:
        """Stop the server and its lesson processes."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def _split(nb) -> tuple[list, list]:
    """The lesson's code cells before the first exercise, and the exercises from there on."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = next(
        (i for i, c in enumerate(code) if grade_id(c)),
        len(code),
    )
    return code[:first], code[first:]


def _observe_exercises(runner, cells: list, probes: dict, seed: int) -> dict[str, list]:
    """Run the exercises; in place of each test cell, its probe on inputs drawn from `seed`."""
    from grader.probing import run_probe

    observations = {}
    for cell in cells:
        if not is_test(cell):
            runner.run(cell.source)
        elif grade_id(cell) in probes:
            test = grade_id(cell)
            observations[test] = run_probe(probes, test, runner.shell.user_ns, seed)
    return observations


def _problems(observations: dict, probes: dict) -> str | None:
    missing = sorted(name for name in probes if name not in observations)
    if missing:
        return f"no test cell for the probes {missing}"
    for test, items in observations.items():
        if items and items[-1][0] == "error":
            return f"{test} fails on the solution: {items[-1][1]}"
    return None


def _answer_one(runner, rest: list, probes: dict, seed: int, out: int) -> None:
    """Fork, observe the exercises for `seed` in the fork, and send the answer on `out`."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        observations = _observe_exercises(runner, rest, probes, seed)
        problem = _problems(observations, probes)
        if problem:
            wire.send(write_end, Kind.FAILED, reason=problem)
        else:
            wire.send(write_end, Kind.OBSERVATIONS, observations=observations)
        os._exit(0)
    os.close(write_end)
    try:
        answer = wire.receive(read_end, ANSWER_LIMIT)
        wire.send(out, answer.pop("kind"), **answer)
    except wire.WireError:
        wire.send(out, Kind.FAILED, reason="the reference run stopped")
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)


def _lesson_process(lesson: str) -> tuple[int, int, int]:
    """Fork a process that has run `lesson` up to its exercises; (pid, to it, from it)."""
    import nbformat

    from grader.probing import load_probes
    from grader.sandbox.cell_runner import CellRunner

    to_read, to_write = os.pipe()
    from_read, from_write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(to_read)
        os.close(from_write)
        return pid, to_write, from_read
    os.close(to_write)
    os.close(from_read)
    notebook = solution_notebook(lesson)
    os.chdir(notebook.parent)
    probes = load_probes(probes_file(lesson).read_text())
    prefix, rest = _split(nbformat.read(notebook, as_version=4))
    runner = CellRunner()
    runner.shell.run_line_magic("matplotlib", "agg")  # nobody looks at these figures
    for cell in prefix:
        runner.run(cell.source)
    while True:
        try:
            request = wire.receive(to_read, 1024)
        except wire.WireError:
            os._exit(0)
        _answer_one(runner, rest, probes, request["seed"], from_write)


def serve() -> None:
    """Answer "observe" requests on stdin until it closes."""
    import matplotlib

    matplotlib.use("Agg")
    import torch

    torch.set_num_threads(1)
    stdin, stdout = sys.stdin.fileno(), os.dup(sys.stdout.fileno())
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    lessons: dict[str, tuple[int, int, int]] = {}
    while True:
        try:
            request = wire.receive(stdin, 1 << 16)
        except wire.WireError:
            return
        lesson, seed = request.get("lesson"), request.get("seed")
        if not solution_notebook(str(lesson)).is_file() or type(seed) is not int:
            reason = f"no such lesson or seed: {lesson!r} {seed!r}"
            wire.send(stdout, Kind.FAILED, reason=reason, seed=seed)
            continue
        if lesson not in lessons:
            for pid, to_lesson, from_lesson in lessons.values():  # one lesson at a time: memory
                os.close(to_lesson)
                os.close(from_lesson)
                os.waitpid(pid, 0)
            lessons = {lesson: _lesson_process(lesson)}
        _, to_lesson, from_lesson = lessons[lesson]
        try:
            wire.send(to_lesson, Kind.SEED, seed=seed)
            answer = wire.receive(from_lesson, ANSWER_LIMIT)
        except (wire.WireError, OSError):
            del lessons[lesson]
            answer = {"kind": "failed", "reason": "the lesson's reference process stopped"}
        wire.send(stdout, answer.pop("kind"), **{**answer, "seed": seed})


if __name__ == "__main__":
    serve()
