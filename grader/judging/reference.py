"""The grading side of the reference: the solution's observations for a lesson and seed.

Every submission is probed on inputs drawn from a seed of its own, so each needs the solution's
observations for that seed. They come from a reference server (`reference_server`) started by
the grading process, outside the sandbox. One server can serve several grading processes, each
on a channel of its own: `ReferenceServer(channels=n)`, then `channel(i)` in process i.
"""

import os
import select
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.course import SOLUTIONS
from grader.sandbox import wire
from grader.sandbox.wire import Kind

ANSWER_LIMIT = 64 * 1024**2


class ReferenceRunError(RuntimeError):
    """The solution's own probes failed, or the reference server stopped."""


class ReferenceStopped(ReferenceRunError):
    """The reference server stopped or did not answer."""


def probes_file(lesson: str) -> Path:
    """The lesson's probes, kept beside its solution (and out of the release)."""
    return SOLUTIONS / lesson / "probes.py"


class Observer:
    """Asks for observations (`ask`, then `answer`, so the server works meanwhile)."""

    def observe(self, lesson: str, seed: int, timeout: float = 600) -> dict[str, list]:
        """The solution's observations for every test of `lesson`, on inputs drawn from `seed`."""
        self.ask(lesson, seed)
        return self.answer(lesson, seed, timeout)


class Channel(Observer):
    """One grading process's end of a reference server's channel. Should that server stop, the
    channel goes on with a server of its own."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.own: ReferenceServer | None = None

    def ask(self, lesson: str, seed: int, then: str | None = None) -> None:
        """Ask for `lesson`'s observations for `seed`; `answer` collects them (meanwhile the
        server works on another core). `then`: the lesson that will be asked for next, which
        the server prepares meanwhile."""
        if self.own is None:
            try:
                self.send(lesson, seed, then)
                return
            except ReferenceStopped:
                self.own = ReferenceServer()
        self.own.ask(lesson, seed, then)

    def answer(self, lesson: str, seed: int, timeout: float = 600) -> dict[str, list]:
        """The observations asked for `seed` (answers to earlier questions are passed over)."""
        if self.own is None:
            try:
                return self.receive(lesson, seed, timeout)
            except ReferenceStopped:
                self.own = ReferenceServer()
                self.own.ask(lesson, seed)
        return self.own.answer(lesson, seed, timeout)

    def send(self, lesson: str, seed: int, then: str | None) -> None:
        """The question, on this channel."""
        try:
            wire.send(self.sock.fileno(), Kind.OBSERVE, lesson=lesson, seed=seed, then=then)
        except OSError as error:
            raise ReferenceStopped(f"the reference server stopped: {error}") from None

    def receive(self, lesson: str, seed: int, timeout: float) -> dict[str, list]:
        """The answer for `seed` from this channel's server."""
        try:
            answer = {}
            while answer.get("seed") != seed:
                ready, _, _ = select.select([self.sock], [], [], timeout)
                if not ready:
                    raise TimeoutError(f"no answer in {timeout:.0f} s")
                answer = wire.receive(self.sock.fileno(), ANSWER_LIMIT)
        except (wire.WireError, OSError, TimeoutError) as error:
            raise ReferenceStopped(f"the reference server stopped: {error}") from None
        if answer["kind"] != Kind.OBSERVATIONS:
            raise ReferenceRunError(f"the probes of {lesson} failed: {answer.get('reason')}")
        return answer["observations"]

    def stop(self) -> None:
        """Hang up (the server stops once every channel has), and stop a server of its own."""
        self.sock.close()
        if self.own is not None:
            self.own.stop()


class ReferenceServer(Observer):
    """A warm reference server process with `channels` channels, started on first use. Used
    directly, it asks and answers on its first channel, and restarts if the server stopped."""

    def __init__(self, channels: int = 1):
        self.count = channels
        self.process: subprocess.Popen | None = None
        self.channels: list[Channel] = []

    def start(self) -> None:
        """Start the server (stopping any earlier one)."""
        self.stop()
        pairs = [socket.socketpair() for _ in range(self.count)]
        theirs = [pair[1].fileno() for pair in pairs]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader.judging.reference_server", *map(str, theirs)],
            stdin=subprocess.DEVNULL,
            pass_fds=theirs,
            env={**os.environ, "OMP_NUM_THREADS": "1", "MPLCONFIGDIR": tempfile.gettempdir()},
        )
        for _, other in pairs:
            other.close()
        self.channels = [Channel(mine) for mine, _ in pairs]

    def channel(self, index: int) -> Channel:
        """Channel `index` (the server is started if it is not running)."""
        if self.process is None:
            self.start()
        return self.channels[index]

    def ask(self, lesson: str, seed: int, then: str | None = None) -> None:
        """`Channel.ask` on the first channel, after a restart if the server stopped."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        try:
            self.channels[0].send(lesson, seed, then)
        except ReferenceStopped:
            self.stop()
            raise

    def answer(self, lesson: str, seed: int, timeout: float = 600) -> dict[str, list]:
        """The observations asked for `seed` on the first channel (the server is stopped if it
        does not answer, and started again on the next question)."""
        try:
            return self.channel(0).receive(lesson, seed, timeout)
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
            self.process.wait()
            self.process = None
