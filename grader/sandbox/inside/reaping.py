"""Runs inside the sandbox, in the attendants and servers: what a submission left behind is
stopped and collected, and shared scratch is wiped, before the next submission runs."""

import contextlib
import os
import select
import shutil
import signal
import time

from grader.sandbox.inside.isolate import SCRATCH
from grader.sandbox.inside.syscalls import binds_under


def describe_end(status: int) -> str:
    """How a process ended, from its wait status."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:  # real-time signals have no name
            name = f"signal {number}"
        return f"the process was killed by {name}"
    return f"the process exited with status {os.WEXITSTATUS(status)}"


def kill_leftovers(child: int, pid_namespace: bool) -> list[int]:
    """Send SIGKILL to every process the submission started; return a pidfd for each one
    still there (none of them runs its code again), for `wait_for_leftovers`.

    In the sandbox's PID namespace those are every process below this server: the server is a
    child subreaper, so an orphan of the submission is handed to it, never to a process outside.
    Without one only the child's session can be found (a submission that left it escapes): the
    namespace is what makes this complete.
    """
    if not pid_namespace:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child, signal.SIGKILL)
        return []
    ends = []
    for pid in _descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError):
            ends.append(os.pidfd_open(pid))  # held first: the pid is not reused meanwhile
            os.kill(pid, signal.SIGKILL)
    return ends


def wait_for_leftovers(child: int, pid_namespace: bool, ends: list[int]) -> None:
    """Wait until the processes behind `ends` have ended, killing any they forked before the
    signal came, until no process of the submission is left."""
    for _ in range(200):
        _wait_for_ends(ends, timeout=1.0)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        ends = kill_leftovers(child, pid_namespace)
        if not ends:
            return
    raise RuntimeError("processes of the submission could not be stopped")


def _wait_for_ends(pidfds: list[int], timeout: float) -> None:
    """Wait until the processes behind `pidfds` have ended (or `timeout` passed); close them."""
    deadline = time.monotonic() + timeout
    waiting = list(pidfds)
    while waiting and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select(waiting, [], [], left)
        if not ready:
            break
        for fd in ready:
            waiting.remove(fd)
    for fd in pidfds:
        os.close(fd)


def _descendants(root: int) -> list[int]:
    """Every process below `root`, from the parent each one's /proc/PID/stat names."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
            children.setdefault(parent, []).append(int(name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def wipe_scratch(pid_namespace: bool) -> None:
    """Without per-submission namespaces: empty the shared /tmp and /dev/shm instead."""
    if not pid_namespace:
        return  # outside the sandbox these are the machine's own folders
    for scratch in SCRATCH:
        keep = {p for b in binds_under(scratch) for p in [b, *_parents(b, scratch)]}
        for folder, dirs, files in os.walk(scratch):
            for name in files:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))
            for name in list(dirs):
                path = os.path.join(folder, name)
                if path in keep:
                    if os.path.ismount(path):
                        dirs.remove(name)
                    continue
                dirs.remove(name)
                if os.path.islink(path):
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                else:
                    _remove_tree(path)


def _remove_tree(path: str) -> None:
    """Remove a folder even where the submission took away the permissions (same user)."""

    def unlock_and_retry(function, failed, _):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            os.chmod(failed, 0o700) if os.path.isdir(failed) else None
            function(failed)

    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    shutil.rmtree(path, onerror=unlock_and_retry)


def _parents(path: str, top: str) -> list[str]:
    parents = []
    while (path := os.path.dirname(path)).startswith(top + "/"):
        parents.append(path)
    return parents


def reap_children(*_) -> None:
    """On SIGCHLD: collect every child that ended (a server or attendant that ended must not
    stay behind as a zombie: submissions see the process table)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
