"""Runs inside the sandbox, in the template and its lesson servers: the warm cell server, which
runs submissions' cells and grades nothing. It is the template's entry point.

Started by the grading side (`python -m grader.sandbox.inside.cell_server`), the template imports
torch once and warms itself with the released lessons' own cells (instructor code, never a
submission's, read from its stdin). Each grading process has a channel into it: a control
socket, and the cgroups its submissions go to. The template forks an *attendant*
(`grader.sandbox.inside.attendant`) for each channel; when a channel asks for a lesson, the
template passes it on to that lesson's *lesson server* (forked from the template, it runs the
lesson's first cells once), which forks a new attendant for the channel from there. Each of them
shares the warm memory it was forked from. Each submission runs in a process of its own
(`grader.sandbox.inside.submission`), which isolates itself (`grader.sandbox.inside.isolate`).
"""

import contextlib
import os
import signal
import socket
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from functools import partial

from grader.forking import back_with_huge_pages, collector_paused, prepare_to_fork
from grader.sandbox import wire
from grader.sandbox.inside import syscall_filter
from grader.sandbox.inside.attendant import ChannelCgroups, attendant
from grader.sandbox.inside.isolate import note_import_path
from grader.sandbox.inside.reaping import reap_children
from grader.sandbox.inside.settings import Settings
from grader.sandbox.inside.submission import REQUEST_LIMIT
from grader.sandbox.inside.syscalls import PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, prctl
from grader.sandbox.wire import Kind


def _warm():
    """Import and exercise what every lesson uses, so that each fork starts warm."""
    os.environ.setdefault("MPLCONFIGDIR", "/tmp/matplotlib")
    import matplotlib

    matplotlib.use("module://matplotlib_inline.backend_inline")
    import torch

    torch.set_num_threads(1)
    from grader import checks, probing, remote_functions  # noqa: F401 -- tests, probes use them
    from grader.sandbox.inside.cell_runner import CellRunner

    runner = CellRunner()
    for source in [
        "import torch\n(torch.ones(2, requires_grad=True) ** 2).sum().backward()",
        "import matplotlib.pyplot as plt\nplt.plot([0, 1])\nplt.show()",
        # An optimizer's first step imports torch._dynamo (0.7 s): paid here once, not by the
        # server of each lesson that trains.
        "torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1).step()",
    ]:
        runner.run(source)
    runner.shell.execution_count = 1
    return runner


def _fork_server(close: list[int], work) -> int:
    """Fork a server process that first closes `close` (descriptors not its own), then does
    `work()`; return its pid."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a server waits for its own
            for fd in close:
                os.close(fd)
            work()
        except BaseException:
            traceback.print_exc()
            code = 70
        finally:
            os._exit(code)
    return pid


def _lesson_server(
    sources: list[str], joins: socket.socket, runner, settings: Settings, router
) -> None:
    """Run a lesson's first cells (`sources`) once, then, for each grading process that joins
    (its control socket, the pipe their outputs go to, and its cgroups), send the outputs and
    fork an attendant from this state. Ends when the template closes `joins`.

    It runs instructor code only (the released lesson's cells, sent at start-up) and, like the
    template, never reads a request, a cell or a report of a submission.
    """
    signal.signal(signal.SIGCHLD, reap_children)  # its attendants, when they end
    os.chdir(tempfile.mkdtemp(prefix="lesson-"))
    cells = []
    for source in sources:
        outputs, count, _ = runner.run(source)
        cells.append({"outputs": outputs, "count": count})
    note_import_path()
    prepare_to_fork()
    while True:
        try:
            message, fds = wire.receive_fds(joins)
        except (wire.WireError, OSError):
            return
        control, out, *cgroups = fds
        with contextlib.suppress(OSError):  # that grading process gave up waiting
            wire.write_all(out, wire.encode(Kind.PREFIX, cells=cells))
        os.close(out)
        channel = ChannelCgroups(message["channel"], message["cgroup"], message["cpu"])
        sock = socket.socket(fileno=control)
        attend = partial(attendant, sock, channel, cgroups, runner, settings, router)
        _fork_server([joins.fileno()], attend)
        sock.close()
        for fd in cgroups:
            os.close(fd)


@dataclass
class LessonServers:
    """The template's lesson servers, by (lesson, cells run), least recently joined first; at
    most `keep` are kept (one let go carries on while grading processes still use it)."""

    keep: int
    running: dict[tuple, socket.socket] = field(default_factory=dict)

    def join(self, key: tuple, start) -> socket.socket:
        """The socket that joins `key`'s server, which `start()` starts (returning it) if
        needed."""
        if key not in self.running:
            while len(self.running) >= self.keep:
                self.running.pop(next(iter(self.running))).close()
            self.running[key] = start()
        self.running[key] = self.running.pop(key)
        return self.running[key]

    def prepare(self, key: tuple, start) -> None:
        """Start `key`'s server now, for a grading process to join later, unless that would
        let go of the server last joined."""
        if key not in self.running and (self.keep > 1 or not self.running):
            if len(self.running) >= self.keep:
                self.running.pop(next(iter(self.running))).close()
            self.running = {key: start(), **self.running}  # not joined yet: first to go

    def drop(self, key: tuple) -> None:
        """Let go of `key`'s server (it failed)."""
        self.running.pop(key).close()

    def fds(self) -> list[int]:
        """Their descriptors, which no process forked from the template may keep."""
        return [joins.fileno() for joins in self.running.values()]


def _route(
    router: socket.socket,
    theirs: socket.socket,
    channels: list[ChannelCgroups],
    prefixes,
    runner,
    settings: Settings,
) -> None:
    """The template's loop: pass each grading process that asks for a lesson (through `router`,
    whose other end `theirs` every attendant holds) to the lesson's server, started on first
    need."""
    servers = LessonServers(keep=len(channels))
    keep_out = [router.fileno(), *(fd for c in channels for fd in c.fds())]

    def start(sources: list[str], passing: list[int]) -> socket.socket:
        ours, joins = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        close = [*keep_out, *servers.fds(), ours.fileno(), *passing]
        _fork_server(close, partial(_lesson_server, sources, joins, runner, settings, theirs))
        joins.close()
        return ours

    while True:
        message, fds = wire.receive_fds(router)
        sources = prefixes.get(str(message.get("lesson")), [])
        upto = message.get("upto")
        upto = upto if type(upto) is int and 0 <= upto <= len(sources) else 0
        key = (message.get("lesson"), upto)
        if message["kind"] == Kind.PREPARE and not fds:
            servers.prepare(key, partial(start, sources[:upto], []))
            continue
        index = message.get("channel")
        if message["kind"] != Kind.LESSON or len(fds) != 2 or index not in range(len(channels)):
            for fd in fds:
                os.close(fd)
            continue
        joins = servers.join(key, partial(start, sources[:upto], fds))
        channel = channels[index]
        try:
            wire.send_fds(
                joins,
                Kind.LESSON,
                fds + channel.fds(),
                channel=index,
                cgroup=channel.cgroup,
                cpu=channel.cpu,
            )
        except OSError:  # its server failed: the grading process sees no answer, and it goes
            servers.drop(key)
        for fd in fds:
            os.close(fd)


def _descriptors(name: str, count: int) -> list[int | None]:
    """The descriptors listed in environment variable `name`, one per channel (or none)."""
    listed = [int(fd) for fd in os.environ.get(name, "").split(",") if fd]
    return listed if len(listed) == count else [None] * count


def main() -> None:
    """Warm up, fork an attendant for each grading process's channel, then route the channels
    that ask for a lesson to its lesson server."""
    prctl(PR_SET_DUMPABLE, 0)  # forks may not ptrace or read our memory
    prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of the servers come to us
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # warming up starts no process to collect
    controls = [int(fd) for fd in os.environ["GRADER_CONTROL_FDS"].split(",")]
    channels = [
        ChannelCgroups(index, cgroup, cpu)
        for index, (cgroup, cpu) in enumerate(
            zip(
                _descriptors("GRADER_CGROUP_FDS", len(controls)),
                _descriptors("GRADER_CPU_FDS", len(controls)),
                strict=True,
            )
        )
    ]
    settings = Settings.from_environment()
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    # Read first: the grading process writes the lessons' cells and goes on once they are read.
    warm = wire.receive(sys.stdin.fileno(), REQUEST_LIMIT)
    with collector_paused():
        runner = _warm()
        runner.warm_up(warm["sources"])
        runner.remember(warm["tests"])
        runner.import_kit_modules([*warm["tests"], *warm["probes"]])
        from grader.probing import compiled_probes  # imported by _warm: after the read

        for source in warm["probes"]:
            compiled_probes(source)
        with contextlib.suppress(OSError):  # each submission's process says so when it installs
            syscall_filter.prepare()  # built once here: each submission only loads it
    note_import_path()
    prepare_to_fork()  # before the first fork of a server
    back_with_huge_pages()  # cheaper forks (grader.forking)
    os.dup2(os.open(os.devnull, os.O_RDONLY), sys.stdin.fileno())
    router, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sockets = [socket.socket(fileno=control) for control in controls]
    for channel, sock in zip(channels, sockets, strict=True):
        others = [c for c in controls if c != sock.fileno()]
        others += [fd for c in channels if c is not channel for fd in c.fds()]
        attend = partial(attendant, sock, channel, channel.fds(), runner, settings, theirs)
        _fork_server([router.fileno(), *others], attend)
    for sock in sockets:  # each attendant has its own
        sock.close()
    signal.signal(signal.SIGCHLD, reap_children)
    reap_children()  # any that ended before
    _route(router, theirs, channels, warm["prefixes"], runner, settings)


if __name__ == "__main__":
    main()
