"""Run first in the last submission of the attack run (otherwise the solution): what is left?

Every submission of a run is graded by the same sandbox. Whatever an earlier
submission left that this one can see (files, processes, IPC objects, kernel keys, listening
sockets, open files inherited from the template and changed, planted modules, environment) is
printed on one line as JSON, after LEFTOVERS.
"""

import ctypes as _ctypes
import fcntl as _fcntl
import json as _json
import os as _os
import socket as _socket
import stat as _stat
import sys as _sys


def _checkout_mounts() -> list[str]:
    """The grader's own read-only binds (a checkout kept under /tmp brings them there)."""
    return [line.split()[4] for line in _lines("/proc/self/mountinfo") if len(line.split()) > 4]


def _outside_the_checkout(path: str) -> bool:
    return not any(
        path == m or path.startswith(m + "/") or m.startswith(path + "/")
        for m in _checkout_mounts()
        if m.startswith("/tmp/")
    )


def _lines(path: str) -> list[str]:
    try:
        with open(path) as handle:
            return handle.read().splitlines()
    except OSError as error:
        return [f"unreadable: {error}"]


def _ancestors() -> set[int]:
    """This process and the grader's processes it was forked from, up to the sandbox's init."""
    chain, pid = {_os.getpid()}, _os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/stat") as handle:
            pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        chain.add(pid)
    return chain


def _grader_owned(pid: str) -> bool:
    """A process of the grader's own (its servers run as root; every submission runs as a
    user of its own, so a submission's leftover never does)."""
    try:
        return _os.getuid() != 0 and _os.stat(f"/proc/{pid}").st_uid == 0
    except OSError:
        return False


def _processes() -> list[str]:
    found, ours = [], _ancestors()
    for pid in _os.listdir("/proc"):
        if pid.isdigit() and int(pid) not in ours and not _grader_owned(pid):
            try:
                with open(f"/proc/{pid}/cmdline") as handle:
                    found.append(f"{pid}: {handle.read().replace(chr(0), ' ')[:80]}")
            except OSError:
                found.append(pid)
    return found


def _user_keys() -> list[str]:
    """Kernel keys and keyrings this user can see (none: no submission can make one)."""
    return [line for line in _lines("/proc/keys") if len(line.split()) > 8]


def _message_queue() -> list[str]:
    try:
        librt = _ctypes.CDLL("librt.so.1", use_errno=True)
    except OSError as error:
        return [f"no librt: {error}"]
    queue = librt.mq_open(b"/grader_left", _os.O_RDONLY)
    if queue < 0:
        return []
    librt.mq_close(queue)
    return ["/grader_left"]


def _shared_descriptions() -> list[str]:
    """Inherited open files whose offset or flags an earlier fork changed (the descriptions are
    shared with the template, so a change made by one fork is seen by the next)."""
    marked = []
    for fd in range(3, 256):
        try:
            if not _stat.S_ISREG(_os.fstat(fd).st_mode):
                continue
            offset = _os.lseek(fd, 0, _os.SEEK_CUR)
            flags = _fcntl.fcntl(fd, _fcntl.F_GETFL)
        except OSError:
            continue
        if offset == 0x6772616465 or flags & (_os.O_DIRECT | _os.O_NONBLOCK | _os.O_APPEND):
            marked.append(f"{fd}: offset {offset:#x}, flags {flags:#o}")
    return marked


def _leftovers() -> dict[str, list]:
    return {
        "tmp": sorted(
            name
            for name in set(_os.listdir("/tmp")) - {"submission"}
            if _outside_the_checkout("/tmp/" + name)
        ),
        "dev_shm": sorted(_os.listdir("/dev/shm")),
        "sysv_ipc": [
            line for kind in ("shm", "msg", "sem") for line in _lines(f"/proc/sysvipc/{kind}")[1:]
        ],
        "mqueue": _message_queue(),
        "processes": _processes(),
        "kernel_keys": _user_keys(),
        "abstract_sockets": [
            line.split()[-1]
            for line in _lines("/proc/net/unix")[1:]
            if line.split()[-1].startswith("@")
        ],
        "tcp_listeners": [line for line in _lines("/proc/net/tcp")[1:] if line.split()[3] == "0A"],
        "udp_sockets": _lines("/proc/net/udp")[1:],
        "hostname": [name for name in [_socket.gethostname()] if "planted" in name],
        "shared_descriptions": _shared_descriptions(),
        "environment": sorted(k for k, v in _os.environ.items() if "planted" in v),
        "modules_from_scratch": sorted(
            name
            for name, module in list(_sys.modules.items())
            if str(getattr(module, "__file__", "") or "").startswith(("/tmp", "/dev/shm"))
            and _outside_the_checkout(str(module.__file__))
        ),
    }


print("LEFTOVERS " + _json.dumps(_leftovers()))
