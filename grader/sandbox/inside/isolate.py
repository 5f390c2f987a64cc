"""Runs inside the sandbox, in each submission's process: it isolates itself before any of the
submission's code runs.

As root it unshares a mount, an IPC and a network namespace (else it makes a user namespace of
its own for them), mounts a fresh /tmp and /dev/shm and a /proc that shows no other user's
process, and drops to a user of its own; then it gives up its capabilities, installs the
system-call filter (`grader.sandbox.inside.syscall_filter`: no keyrings, namespaces, tracing,
mounts or sockets but unix and IP) and, once its request has come, sets its resource limits.
"""

import contextlib
import ctypes
import os
import resource
import secrets
import stat
import sys

from grader.sandbox.inside import syscall_filter
from grader.sandbox.inside.settings import Settings
from grader.sandbox.inside.syscalls import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWUSER,
    MS_BIND,
    MS_MOVE,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    binds_under,
    check,
    libc,
    mount,
    prctl,
)

SCRATCH = ("/tmp", "/dev/shm")
# What bubblewrap binds read-only over its /proc, bound again over ours.
PROC_COVERED = ("sys", "sysrq-trigger", "irq", "bus")
VIRTUAL_HEADROOM = 4 * 1024**3
UID_FIRST, UID_COUNT = 1_000_000_000, 1_000_000_000  # owned by no one on a real system


def isolate(settings: Settings, keep: tuple[int, ...]) -> None:
    """Everything the submission's process does to itself before its request comes: private
    files, its own namespaces, scratch and user (`settings.isolate`), no capability, no new
    privileges, the system-call filter, no standard streams and a clean import path."""
    _private_files(keep)
    if settings.isolate:
        as_root = os.geteuid() == 0
        _fresh_scratch(settings.scratch_bytes, as_root)
        if as_root:
            _drop_privileges(settings.uid)
        _drop_capabilities()  # what is left (the inheritable set) goes too
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    with contextlib.suppress(OSError):  # where it cannot be installed, the protections line says so
        syscall_filter.install()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _clean_import_path()


def _own_user_namespace() -> None:
    """Unprivileged: a user namespace of our own (same ids) whose capabilities allow the mounts."""
    uid, gid = os.getuid(), os.getgid()
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET), "unshare")
    prctl(PR_SET_DUMPABLE, 1)  # the template is not: its forks own no /proc/self
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]


def _drop_capabilities() -> None:
    """Give up every capability the user namespace gave us (our ids are not 0 in it)."""
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")


def _fresh_scratch(size: int, as_root: bool) -> None:
    """Our own mount, IPC and network namespaces, with a new, empty /tmp and /dev/shm (and no
    socket another submission listens on).

    A new tmpfs is staged on /dev/shm, the binds that live under /tmp are bound into it, and it
    is moved over /tmp; then /dev/shm gets a tmpfs of its own.
    """
    if as_root:
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET), "unshare")
    else:
        _own_user_namespace()
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    options = f"size={size},mode=1777"
    binds = binds_under("/tmp")
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, options)
    for point in binds:
        staged = "/dev/shm" + point[len("/tmp") :]
        os.makedirs(staged, exist_ok=True)
        mount(point, staged, None, MS_BIND | MS_REC)
    mount("/dev/shm", "/tmp", None, MS_MOVE)
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, options)
    with contextlib.suppress(OSError):  # not root, or Linux < 5.8: the protections line says so
        _own_proc()


def _own_proc() -> None:
    """A /proc of our own in which no other user's process can be listed or read: not the
    template's, the servers', nor other submissions' (each runs as a user of its own). Each proc
    mount has its own options since Linux 5.8, which alone knows `hidepid=invisible`."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    mount("proc", "/proc", "proc", flags, "hidepid=invisible")
    for name in PROC_COVERED:
        path = f"/proc/{name}"
        if os.path.exists(path):
            mount(path, path, None, MS_BIND | MS_REC)
            mount(path, path, None, MS_BIND | MS_REC | MS_REMOUNT | MS_RDONLY | flags)


def submission_uid() -> int:
    """A user id of the submission's own: no file, process or limit is shared."""
    return UID_FIRST + secrets.randbelow(UID_COUNT)


def _drop_privileges(uid: int) -> None:
    """Become the submission's own user, with no capability left and none to regain."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def limit(limits: dict, counted_by_cgroup: bool) -> None:
    """Set the per-process limits. Where the cgroup counts memory, the address-space limit only
    turns one huge request into a MemoryError: virtual size is not memory, so it gets headroom.
    CPU time is allowed for twice the notebook limit and a cell's, the most the grading process
    waits for (cells stopped at their limit are excused up to the notebook limit's worth)."""
    headroom = VIRTUAL_HEADROOM if counted_by_cgroup else 0
    address_space = _own_memory() + limits["memory_bytes"] + headroom
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
    cpu = int(2 * limits["notebook_seconds"] + limits["cell_seconds"]) + 5
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _own_memory() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _writable(path) -> bool:
    """Whether `path` may be a folder the submission can write to (a relative path is its
    working folder)."""
    return not isinstance(path, str) or not os.path.isabs(path) or path.startswith(SCRATCH)


def _clean_import_path() -> None:
    """No folder the submission can write to is searched for modules, nor is a finder the
    template cached for one consulted. Only those finders are dropped: dropping all of them
    cost 5 ms per submission, freeing objects that live in the template's memory."""
    sys.path[:] = [p for p in sys.path if not _writable(p)]
    cache = sys.path_importer_cache
    size, noted = _noted_finders
    for path in noted if size == len(cache) else [p for p in cache if _writable(p)]:
        cache.pop(path, None)


_noted_finders: tuple[int, list] = (-1, [])  # the importer cache's size, and its writable keys


def note_import_path() -> None:
    """Before a server forks: note the importer cache's entries for folders a submission can
    write to, so that each submission's process drops them without reading the whole cache
    (reading it copied some 260 pages of the server's memory: 1.4 ms of CPU a submission). A process
    whose cache has grown since (by an import) reads it all again; trusted code alone runs in
    between, and entries are only ever added."""
    global _noted_finders
    cache = sys.path_importer_cache
    _noted_finders = (len(cache), [p for p in cache if _writable(p)])


def _private_files(keep: tuple[int, ...]) -> None:
    """Reopen the files the template left open, so that no offset or flag a submission sets on
    them is seen by the next fork (a fork shares its parent's open file descriptions)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2 or fd in keep:
            continue
        with contextlib.suppress(OSError):
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            position = os.lseek(fd, 0, os.SEEK_CUR)
            private = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
            os.lseek(private, position, os.SEEK_SET)
            os.dup2(private, fd, inheritable=False)
            os.close(private)
