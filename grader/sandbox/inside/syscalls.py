"""Runs inside the sandbox, in the template and its forks: raw system calls through libc
(unshare, mount, prctl, capset) and the mount table."""

import ctypes
import os

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 4096, 8192, 16384, 1 << 18
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 4, 36, 38

libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    """Raise OSError, naming `what`, where a libc call returned non-zero."""
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def mount(source, target, fstype, flags, options=None) -> None:
    """mount(2), raising OSError on failure."""
    enc = lambda s: s.encode() if isinstance(s, str) else s  # noqa: E731
    check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(options)), target)


def prctl(option: int, value: int) -> None:
    """prctl(2) with one argument (its result is not checked)."""
    libc.prctl(option, value, 0, 0, 0)


def binds_under(folder: str) -> list[str]:
    """The outermost mount points below `folder`: the checkout's binds when it lives in /tmp."""
    points = []
    with open("/proc/self/mountinfo") as table:
        for line in table:
            point = line.split()[4]
            if point.startswith(folder + "/"):
                points.append(point)
    return [p for p in points if not any(p.startswith(q + "/") for q in points if q != p)]
