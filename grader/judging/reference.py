"""The grading side of the reference: the solution's observations for a lesson and seeds.

Every submission is probed on inputs drawn from a seed of its own, so each needs the solution's
observations for that seed. They come from a reference server (`reference_server`) started by
the grading process, outside the sandbox. One server can serve several grading processes, each
on a channel of its own: `ReferenceServer(channels=n)`, then `channel(i)` in process i. A
grading process draws its submissions' seeds a batch at a time (`Seeds`), and the server
observes a batch in one run of the solution.
"""

import contextlib
import os
import secrets
import select
import signal
import socket
import sys
import tempfile
import traceback
from dataclasses import dataclass

from grader.course import probes_file
from grader.sandbox import wire
from grader.sandbox.wire import Kind

ANSWER_LIMIT = 64 * 1024**2
BATCH = 8  # seeds asked for at once: one fork of the lesson's reference for eight submissions


class ReferenceRunError(RuntimeError):
    """The solution's own probes failed, or the reference server stopped."""


class ReferenceStopped(ReferenceRunError):
    """The reference server stopped or did not answer."""


JUDGED = "judged outside the submission"
IN_PROCESS = "from the submission's own process (no probes: as stock nbgrader, forgeable)"


def verdicts_of(lesson: str) -> str:
    """Where a lesson's or assignment's test verdicts come from: the judge (a lesson with
    probes), or the submission's own process, as stock nbgrader grades (anything else)."""
    return JUDGED if probes_file(lesson).is_file() else IN_PROCESS


@dataclass(frozen=True)
class Answers:
    """The answer to one question: each seed's observations, or why the solution has none."""

    lesson: str
    observations: dict[int, dict[str, list]]
    problems: dict[int, str]

    def of(self, seed: int) -> dict[str, list]:
        """The observations for `seed`; ReferenceRunError if the solution's probes failed."""
        if seed in self.problems:
            raise ReferenceRunError(f"the probes of {self.lesson} failed: {self.problems[seed]}")
        return self.observations[seed]


class Observer:
    """Asks for observations (`ask`, then `answer`, so the server works meanwhile)."""

    def observe(self, lesson: str, seed: int, timeout: float = 600) -> dict[str, list]:
        """The solution's observations for every test of `lesson`, on inputs drawn from `seed`."""
        self.ask(lesson, [seed])
        return self.answer(lesson, [seed], timeout).of(seed)


class Channel(Observer):
    """One grading process's end of a reference server's channel. Should that server stop, the
    channel goes on with a server of its own."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.own: ReferenceServer | None = None

    def ask(self, lesson: str, seeds: list[int], then: str | None = None) -> None:
        """Ask for `lesson`'s observations for each of `seeds`; `answer` collects them
        (meanwhile the server works on another core). `then`: the lesson that will be asked for
        next, which the server prepares meanwhile."""
        if self.own is None:
            try:
                self.send(lesson, seeds, then)
                return
            except ReferenceStopped:
                self.own = ReferenceServer()
        self.own.ask(lesson, seeds, then)

    def answer(self, lesson: str, seeds: list[int], timeout: float = 600) -> Answers:
        """The answer to the question for `seeds` (answers to earlier questions are passed
        over)."""
        if self.own is None:
            try:
                return self.receive(lesson, seeds, timeout)
            except ReferenceStopped:
                self.own = ReferenceServer()
                self.own.ask(lesson, seeds)
        return self.own.answer(lesson, seeds, timeout)

    def send(self, lesson: str, seeds: list[int], then: str | None) -> None:
        """The question, on this channel."""
        try:
            wire.send(self.sock.fileno(), Kind.OBSERVE, lesson=lesson, seeds=seeds, then=then)
        except OSError as error:
            raise ReferenceStopped(f"the reference server stopped: {error}") from None

    def receive(self, lesson: str, seeds: list[int], timeout: float) -> Answers:
        """The answer for `seeds` from this channel's server."""
        try:
            answer = None
            while answer is None or answer.get("seeds") != seeds:
                ready, _, _ = select.select([self.sock], [], [], timeout)
                if not ready:
                    raise TimeoutError(f"no answer in {timeout:.0f} s")
                answer = wire.receive(self.sock.fileno(), ANSWER_LIMIT)
        except (wire.WireError, OSError, TimeoutError) as error:
            raise ReferenceStopped(f"the reference server stopped: {error}") from None
        if answer["kind"] != Kind.OBSERVATIONS:
            raise ReferenceRunError(f"the probes of {lesson} failed: {answer.get('reason')}")
        observations = dict(zip(seeds, answer["observations"], strict=True))
        problems = {seed: why for seed, why in zip(seeds, answer["problems"], strict=True) if why}
        return Answers(lesson, observations, problems)

    def stop(self) -> None:
        """Hang up (the server stops once every channel has), and stop a server of its own."""
        self.sock.close()
        if self.own is not None:
            self.own.stop()


class Seeds:
    """One grading process's seeds: each drawn here for one submission alone, and asked for a
    batch at a time (per lesson), so that the reference runs the solution once per batch rather
    than once per submission. Seeds left over when a lesson's submissions run out cost only
    their probes."""

    def __init__(self, observer: Observer, batch: int = BATCH):
        self.observer = observer
        self.batch = batch
        self._unused: dict[str, list[int]] = {}  # by lesson, in the order they will be drawn
        self._questions: dict[int, list[int]] = {}  # seed -> the seeds asked for with it
        self._answers: dict[int, Answers] = {}  # seed -> the answer that covers it

    def draw(self, lesson: str, then: str | None = None, wanted: int | None = None) -> int:
        """A seed for one submission of `lesson`, never drawn before; when a batch runs out,
        the next is asked for (`then`: the lesson graded after this one), of `wanted` seeds if
        this process expects no more submissions of the lesson than that, this one included
        (seeds left over cost the reference a run each)."""
        unused = self._unused.setdefault(lesson, [])
        if not unused:
            # A question whose answer was never collected (a submission failed between drawing
            # its seed and being judged) is passed over when the next answer is collected.
            self._forget({seed for seed in self._questions if seed not in self._answers})
            size = min(self.batch, max(1, wanted or self.batch))
            seeds = [secrets.randbelow(2**63) for _ in range(size)]
            self.observer.ask(lesson, seeds, then)
            self._questions.update(dict.fromkeys(seeds, seeds))
            unused.extend(seeds)
        return unused.pop(0)

    def _forget(self, seeds) -> None:
        """Never hand out these seeds, asked for but not answered."""
        for unused in self._unused.values():
            unused[:] = [seed for seed in unused if seed not in seeds]
        for seed in seeds:
            self._questions.pop(seed, None)

    def observations(self, lesson: str, seed: int, timeout: float = 600) -> dict[str, list]:
        """The solution's observations for a drawn `seed` (waiting for its batch's answer)."""
        if seed not in self._answers:
            seeds = self._questions[seed]
            try:
                answers = self.observer.answer(lesson, seeds, timeout)
            except ReferenceRunError:  # none of the batch will be answered: ask again next time
                self._forget(set(seeds))
                raise
            for asked in seeds:
                self._answers[asked] = answers
        self._questions.pop(seed, None)
        return self._answers.pop(seed).of(seed)

    def stop(self) -> None:
        """Stop the observer."""
        self.observer.stop()


class ReferenceServer(Observer):
    """A warm reference server process with `channels` channels, started on first use. Used
    directly, it asks and answers on its first channel, and restarts if the server stopped."""

    def __init__(self, channels: int = 1):
        self.count = channels
        self.process: ServerProcess | None = None
        self.channels: list[Channel] = []

    def start(self) -> None:
        """Start the server (stopping any earlier one), forked from this process
        (`ServerProcess`)."""
        self.stop()
        pairs = [socket.socketpair() for _ in range(self.count)]
        self.process = ServerProcess([theirs.fileno() for _, theirs in pairs])
        for _, theirs in pairs:
            theirs.close()
        self.channels = [Channel(mine) for mine, _ in pairs]

    def channel(self, index: int) -> Channel:
        """Channel `index` (the server is started if it is not running)."""
        if self.process is None:
            self.start()
        return self.channels[index]

    def ask(self, lesson: str, seeds: list[int], then: str | None = None) -> None:
        """`Channel.ask` on the first channel, after a restart if the server stopped."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        try:
            self.channels[0].send(lesson, seeds, then)
        except ReferenceStopped:
            self.stop()
            raise

    def answer(self, lesson: str, seeds: list[int], timeout: float = 600) -> Answers:
        """The answer for `seeds` on the first channel (the server is stopped if it does not
        answer, and started again on the next question)."""
        try:
            return self.channel(0).receive(lesson, seeds, timeout)
        except ReferenceStopped:
            self.stop()
            raise

    def stop(self) -> None:
        """Hang up every channel and stop the server and its lesson processes."""
        for channel in self.channels:
            channel.stop()
        self.channels = []
        if self.process is not None:
            self.process.kill()
            self.process = None


class ServerProcess:
    """The reference server, forked from the process that starts it: it shares the modules
    imported there (a grading process has torch; a fresh interpreter took 3 s of CPU and 300 MB
    of freshly touched memory to import it again). It then starts as a process of its own would:
    a session of its own (Ctrl-C is the grading process's), default signal handling, input from
    /dev/null, no descriptor of its parent's but standard output and error (each other one now
    /dev/null, so that an inherited object closing its own closes nothing of the server's), and no
    shell of its parent's."""

    def __init__(self, channels: list[int]):
        self.status: int | None = None
        self.pid = os.fork()
        if self.pid == 0:
            code = 70
            try:
                _start_afresh(channels)
                from grader.judging.reference_server import answer_observe_requests

                answer_observe_requests(channels)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)

    def poll(self) -> int | None:
        """Its wait status once it has ended, else None."""
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status

    def kill(self) -> None:
        """Kill it (with its lesson processes, which end when their pipes close) and wait."""
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self.status = os.waitpid(self.pid, 0)[1]


STREAMS = ((0, "r", -1), (1, "w", 1), (2, "w", 1))  # descriptor, mode, buffering


def _start_afresh(channels: list[int]) -> None:
    os.setsid()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    nothing = os.open(os.devnull, os.O_RDWR)
    kept = {1, 2, nothing, *channels}  # 0 too becomes /dev/null
    for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):
        if fd not in kept:  # (the listing's own descriptor too: closed by now, /dev/null then)
            os.dup2(nothing, fd, inheritable=False)
    # its own standard streams on descriptors 0-2, not whatever its parent had put in their place
    sys.stdin, sys.stdout, sys.stderr = (
        open(fd, mode, buffering, closefd=False)  # noqa: SIM115 -- for the process's life
        for fd, mode, buffering in STREAMS
    )
    os.environ.update(OMP_NUM_THREADS="1", MPLCONFIGDIR=tempfile.gettempdir())
    if "IPython" in sys.modules:
        from IPython.core.interactiveshell import InteractiveShell

        InteractiveShell.clear_instance()  # its lessons run in a shell of their own
