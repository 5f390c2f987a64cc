"""Runs inside the sandbox, in an attendant: one grading process's server, forked from the
template or from a lesson server, sharing the warm memory it was forked from.

For each submission the grading process hands its attendant two fresh pipes; the attendant gives
them to a child it forked ahead (once the last submission's processes were gone), which has
isolated itself meanwhile, and closes its own copies. When told to clean, the attendant kills
every process below itself, answers once none of them can run again, and waits for them all to
end before it takes the next submission.
"""

import contextlib
import dataclasses
import os
import select
import socket
from dataclasses import dataclass
from typing import NamedTuple

from grader.sandbox import wire
from grader.sandbox.inside.reaping import (
    describe_end,
    kill_leftovers,
    wait_for_leftovers,
    wipe_scratch,
)
from grader.sandbox.inside.settings import Settings
from grader.sandbox.inside.submission import fork_ahead
from grader.sandbox.inside.syscalls import PR_SET_CHILD_SUBREAPER, prctl
from grader.sandbox.wire import Kind


@dataclass
class ChannelCgroups:
    """One grading process's channel, as the template keeps it: its index, and the descriptors
    of its memory cgroup and CPU share (None where there are none)."""

    index: int
    cgroup: int | None
    cpu: int | None

    def fds(self) -> list[int]:
        """The cgroup descriptors, to hand to a new server of the channel."""
        return [fd for fd in (self.cgroup, self.cpu) if fd is not None]


class NextLesson(NamedTuple):
    """A lesson the grading process asked for, and the pipe its first cells' outputs go to."""

    lesson: object
    upto: object
    out: int


def _attend(control: socket.socket, child: int, settings: Settings) -> None:
    """Report the child's end when it comes; on "clean", stop everything it left."""
    pidfd = os.pidfd_open(child)
    status = None
    while True:
        ready, _, _ = select.select([control, pidfd], [], [])
        if pidfd in ready and status is None:
            status = os.waitpid(child, 0)[1]
            wire.send_fds(control, Kind.EXITED, [], how=describe_end(status))
        if control in ready:
            message, _ = wire.receive_fds(control)
            if message["kind"] != Kind.CLEAN:
                raise wire.WireError(f"expected clean, got {message['kind']}")
            break
    os.close(pidfd)
    ends = kill_leftovers(child, settings.pid_namespace)
    # Nothing of the submission runs its code any more: the grading process goes on while its
    # processes end; the next submission gets its pipes only once they have, and all is clean.
    wire.send_fds(control, Kind.CLEANED, [], leftovers=len(ends))
    wait_for_leftovers(child, settings.pid_namespace, ends)
    if status is None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child, 0)
    if not settings.isolate:
        wipe_scratch(settings.pid_namespace)


def _fork_submissions(
    control: socket.socket, runner, settings: Settings, cgroup, router
) -> NextLesson | None:
    """Fork a child per submission from `runner`'s state, until asked for another lesson (return
    it) or the control socket closes (return None). A lesson to be asked for later is passed on
    to the template (`router`) at once.

    Each child is forked ahead of its submission, after the last one was cleaned up."""
    ahead = fork_ahead(runner, settings, control, cgroup)
    try:
        while True:
            try:
                message, fds = wire.receive_fds(control)
            except (wire.WireError, OSError):
                return None
            if message["kind"] == Kind.FORK and len(fds) == 2:
                child, ahead = ahead, None  # once reaped, its pid is not ours to signal
                child.start(fds)
                wire.send_fds(control, Kind.FORKED, [])
                _attend(control, child.pid, settings)
                ahead = fork_ahead(runner, settings, control, cgroup)
            elif message["kind"] == Kind.LESSON and len(fds) == 1:
                return NextLesson(message.get("lesson"), message.get("upto"), fds[0])
            elif message["kind"] == Kind.PREPARE and not fds:
                asked = {"lesson": message.get("lesson"), "upto": message.get("upto")}
                wire.send_fds(router, Kind.PREPARE, [], **asked)
            else:
                for fd in fds:
                    os.close(fd)
                return None
    finally:
        if ahead is not None:
            ahead.discard()


def attendant(
    control: socket.socket,
    channel: ChannelCgroups,
    fds: list[int],
    runner,
    settings: Settings,
    router: socket.socket,
) -> None:
    """Serve one grading process from `runner`'s state: fork and clean its submissions until it
    asks for another lesson (handed to the template through `router`) or goes away.

    `fds` are the channel's cgroup descriptors (memory, then CPU share, as `channel` has them).
    """
    prctl(PR_SET_CHILD_SUBREAPER, 1)  # the submissions' orphans come to us
    held = iter(fds)
    cgroup = next(held) if channel.cgroup is not None else None
    if channel.cpu is not None:
        cpu = next(held)
        os.write(cpu, b"0")
        os.close(cpu)
    wire.send_fds(control, Kind.READY, [])
    mine = dataclasses.replace(settings, server_fds=(router.fileno(),))
    following = _fork_submissions(control, runner, mine, cgroup, router)
    if following is not None:
        wire.send_fds(
            router,
            Kind.LESSON,
            [control.fileno(), following.out],
            channel=channel.index,
            lesson=following.lesson,
            upto=following.upto,
        )
