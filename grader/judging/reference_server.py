"""The reference server: the solution's observations for any lesson and seed, from warm processes.

`grader.judging.reference.ReferenceServer` forks it from the grading process (sharing the torch
that process imported) and calls `answer_observe_requests` with one descriptor per grading
process's channel (`grader.judging.reference` holds the other end). The server imports torch
once, if its parent had not. For a lesson it forks a lesson process, which runs the solution's
cells before the first exercise once (the lesson itself); for a batch of seeds, the lesson
process forks and the fork runs the exercises once, with each test cell's probe in its place,
once per seed on inputs drawn from that seed (probes leave the notebook's names as they found
them, so each seed observes what a run of its own would). Nothing is shown, so no figure is
drawn and no traceback formatted. A lesson's process is kept while a channel may still ask for it
(one lesson per channel). No submission's code or data ever reaches these processes: they are
given a lesson id and seeds, and run instructor code only.
"""

import collections
import contextlib
import io
import os
import select
import sys
from dataclasses import dataclass, field

from grader.cells import grade_id, is_test
from grader.course import released_lesson_code, solution_notebook
from grader.forking import back_with_huge_pages, collector_paused, prepare_to_fork
from grader.sandbox import wire
from grader.sandbox.wire import Kind

ANSWER_LIMIT = 64 * 1024**2
REQUEST_LIMIT = 1 << 16
MAX_SEEDS = 64  # in one request


@dataclass
class Process:
    """A lesson process: its pid, the pipe end seeds go to, the end its answers come from."""

    pid: int
    requests: int
    answers: int

    def close(self) -> None:
        """Close both ends (the process sees end of input and exits), then wait for it."""
        os.close(self.requests)
        os.close(self.answers)
        os.waitpid(self.pid, 0)


def start_lesson(lesson: str, close_in_child: list[int], runner=None) -> Process:
    """Fork `lesson`'s process, which runs cells with `runner` (a `warm_runner()`, made now if
    not given); the child first closes `close_in_child` (channels and pipes not its own)."""
    runner = runner or warm_runner()
    to_read, to_write = os.pipe()
    from_read, from_write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(to_read)
        os.close(from_write)
        return Process(pid, to_write, from_read)
    code = 0
    try:
        os.close(to_write)
        os.close(from_read)
        for fd in close_in_child:
            os.close(fd)
        _serve_lesson(lesson, to_read, from_write, runner)
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _split(nb) -> tuple[list, list]:
    """The lesson's code cells before the first exercise, and the exercises from there on."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = next((i for i, c in enumerate(code) if grade_id(c)), len(code))
    return code[:first], code[first:]


def precompiled(runner, cells: list):
    """`execute` with the code of each cell that is not a test compiled now, once in the lesson
    process for every seed's fork: transforming and compiling the cells cost a fifth of a seed's
    run. A cell that does not compile is left out, to fail again where it is run."""
    codes = {}
    for cell in cells:
        if not is_test(cell):
            with contextlib.suppress(Exception):
                codes[cell.source] = _compile(runner.shell, cell.source)
    return lambda runner, source: execute(runner, source, codes.get(source))


def _compile(shell, source: str):
    """A cell's code, transformed as IPython does."""
    return compile(shell.transform_cell(source), "<cell>", "exec")


def execute(runner, source: str, code=None) -> None:
    """Run a cell of the solution (its `code`, if compiled already) for what it leaves behind, as
    a kernel runs it (an error ends the cell, not the run) but without what only a reader would
    see: no value is displayed and no output recorded. IPython's bookkeeping around each cell
    cost a sixth of a seed's run."""
    shell = runner.shell
    quiet = contextlib.redirect_stdout(_NOWHERE), contextlib.redirect_stderr(_NOWHERE)
    with quiet[0], quiet[1], contextlib.suppress(Exception):  # an error ends the cell only
        exec(code or _compile(shell, source), shell.user_ns)


class _Nowhere(io.TextIOBase):
    """A text stream that drops what is written to it (prints, warnings)."""

    def write(self, text: str) -> int:
        """Drop `text`."""
        return len(text)


_NOWHERE = _Nowhere()


def _observe_exercises(runner, cells: list, probes: dict, seeds: list, run=execute) -> list:
    """Run the exercises once (each with `run`); in place of each test cell, its probe on inputs
    drawn from each of the `seeds`. The observations by test, one dict per seed."""
    from grader.probing import run_probe

    observations = [{} for _ in seeds]
    for cell in cells:
        if not is_test(cell):
            run(runner, cell.source)
        elif grade_id(cell) in probes:
            test = grade_id(cell)
            for seen, seed in zip(observations, seeds, strict=True):
                seen[test] = run_probe(probes, test, runner.shell.user_ns, seed)
    return observations


def _problems(observations: dict, probes: dict) -> str | None:
    missing = sorted(name for name in probes if name not in observations)
    if missing:
        return f"no test cell for the probes {missing}"
    for test, items in observations.items():
        if items and items[-1][0] == "error":
            return f"{test} fails on the solution: {items[-1][1]}"
    return None


def warm_runner():
    """The cell runner lesson processes are forked with, warmed with the released lessons'
    cells (their imports and first calls paid once); it shows no figure and formats no
    traceback, as nobody looks at them."""
    import nbformat  # noqa: F401 -- each lesson process reads its notebook

    from grader import checks, probing  # noqa: F401 -- solutions and probes use them
    from grader.sandbox.inside.cell_runner import CellRunner

    runner = CellRunner()
    runner.shell.run_line_magic("matplotlib", "agg")  # nobody looks at these figures
    import matplotlib

    matplotlib.interactive(False)  # so none is drawn after each cell
    runner.shell.showtraceback = lambda *args, **kwargs: None  # nor at the tracebacks
    later_cells, prefixes = released_lesson_code()
    runner.warm_up(later_cells)
    return runner


def _serve_lesson(lesson: str, requests: int, answers: int, runner) -> None:
    """What a lesson process does: run the solution's cells before the first exercise once, then
    for each batch of seeds fork, and in the fork run the exercises with each test cell's probe
    in its place, once per seed, and answer."""
    import nbformat

    from grader.judging.reference import probes_file
    from grader.probing import load_probes

    notebook = solution_notebook(lesson)
    os.chdir(notebook.parent)
    probes = load_probes(probes_file(lesson).read_text())
    prefix, rest = _split(nbformat.read(notebook, as_version=4))
    for cell in prefix:
        runner.run(cell.source)
    import matplotlib.pyplot as plt

    plt.close("all")  # the agg backend keeps every figure open: memory each fork would copy
    run = precompiled(runner, rest)
    prepare_to_fork()
    while True:
        try:
            seeds = wire.receive(requests, REQUEST_LIMIT)["seeds"]
        except wire.WireError:
            return
        pid = os.fork()
        if pid == 0:
            observations = _observe_exercises(runner, rest, probes, seeds, run)
            problems = [_problems(seen, probes) for seen in observations]
            wire.send(
                answers,
                Kind.OBSERVATIONS,
                observations=observations,
                problems=problems,
                seeds=seeds,
            )
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            wire.send(answers, Kind.FAILED, reason="the reference run stopped", seeds=seeds)


@dataclass
class Lessons:
    """The lesson processes, each with the channels waiting for its answers, oldest first."""

    keep: int
    runner: object = None  # the warm cell runner lesson processes are forked with
    running: dict[str, Process] = field(default_factory=dict)
    waiting: dict[str, collections.deque] = field(default_factory=dict)

    def ask(self, lesson: str, seeds: list[int], channel: int, channels: list[int]) -> None:
        """Pass `seeds` to `lesson`'s process (started if needed); its answer goes to `channel`."""
        if lesson not in self.running:
            self._make_room()
            self._start(lesson, channels)
        self.running[lesson] = self.running.pop(lesson)  # now the most recently used
        self.waiting[lesson].append(channel)
        with contextlib.suppress(OSError):  # a stopped process: `answer` tells the channel
            wire.send(self.running[lesson].requests, Kind.SEED, seeds=seeds)

    def prepare(self, lesson: str, channels: list[int]) -> None:
        """Start `lesson`'s process before its first question, if there is room for it."""
        if lesson not in self.running:
            self._make_room()
            if len(self.running) < self.keep:
                self._start(lesson, channels)

    def _start(self, lesson: str, channels: list[int]) -> None:
        theirs = [fd for p in self.running.values() for fd in (p.requests, p.answers)]
        self.running[lesson] = start_lesson(lesson, theirs + channels, self.runner)
        self.waiting[lesson] = collections.deque()

    def answers(self) -> dict[int, str]:
        """answer fd -> lesson, for every lesson process."""
        return {process.answers: lesson for lesson, process in self.running.items()}

    def answer(self, lesson: str) -> tuple[int, dict] | None:
        """The channel waiting longest for `lesson`, and the answer its process sent (None if
        the process stopped: the waiting channels are told)."""
        try:
            answer = wire.receive(self.running[lesson].answers, ANSWER_LIMIT)
            return self.waiting[lesson].popleft(), answer
        except (wire.WireError, IndexError):
            self._stop(lesson)
            return None

    def _make_room(self) -> None:
        idle = [lesson for lesson in self.running if not self.waiting[lesson]]
        while len(self.running) >= self.keep and idle:
            self._stop(idle.pop(0))

    def _stop(self, lesson: str) -> None:
        process = self.running.pop(lesson)
        for channel in self.waiting.pop(lesson):  # asked, and will get no answer now
            _send(channel, Kind.FAILED, reason="the lesson's reference stopped")
        process.close()


def _send(channel: int, kind: Kind, **fields) -> None:
    with contextlib.suppress(OSError):  # that grading process has gone: nobody to tell
        wire.send(channel, kind, **fields)


def _relay(lessons: Lessons, lesson: str, fd: int) -> None:
    """Pass the answer waiting on `fd` to the channel that asked for it."""
    if lessons.answers().get(fd) != lesson:  # that process was stopped meanwhile
        return
    got = lessons.answer(lesson)
    if got:
        channel, answer = got
        _send(channel, answer.pop("kind"), **answer)


def _is_lesson(name) -> bool:
    return type(name) is str and solution_notebook(name).is_file()


def _are_seeds(seeds) -> bool:
    return (
        type(seeds) is list
        and 0 < len(seeds) <= MAX_SEEDS
        and all(type(seed) is int for seed in seeds)
    )


def answer_observe_requests(channels: list[int]) -> None:
    """Answer "observe" requests on every channel until all of them close. A request names a
    lesson and a list of seeds, and may name the lesson to be asked for after it (`then`)."""
    import matplotlib

    matplotlib.use("Agg")
    import torch

    torch.set_num_threads(1)
    os.dup2(os.open(os.devnull, os.O_RDWR), sys.stdout.fileno())
    open_channels = list(channels)
    with collector_paused():
        runner = warm_runner()
    lessons = Lessons(keep=len(channels), runner=runner)
    prepare_to_fork()  # before the first lesson process is forked
    back_with_huge_pages()  # cheaper forks (grader.forking)
    while open_channels:
        from_lessons = lessons.answers()
        ready, _, _ = select.select(open_channels + list(from_lessons), [], [])
        for fd in ready:
            if fd in from_lessons:
                _relay(lessons, from_lessons[fd], fd)
                continue
            try:
                request = wire.receive(fd, REQUEST_LIMIT)
            except (wire.WireError, OSError):  # that grading process hung up
                open_channels.remove(fd)
                os.close(fd)
                continue
            lesson, seeds, then = request.get("lesson"), request.get("seeds"), request.get("then")
            if not _is_lesson(lesson) or not _are_seeds(seeds):
                reason = f"no such lesson or seeds: {lesson!r} {seeds!r}"
                _send(fd, Kind.FAILED, reason=reason, seeds=seeds)
                continue
            lessons.ask(lesson, seeds, fd, open_channels)
            if _is_lesson(then):  # the lesson graded next: its process starts meanwhile
                lessons.prepare(then, open_channels)
