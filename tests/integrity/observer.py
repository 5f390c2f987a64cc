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


def _last_pid() -> int:
    """The pid the kernel handed out last: a child's, forked for it."""
    child = _os.fork()
    if child == 0:
        _os._exit(0)
    _os.waitpid(child, 0)
    return child


def _processes() -> list[str]:
    """Every process outside the grader's session (its servers share the sandbox init's) and
    this submission's own (each starts one). Pids are found by signal 0, which finds too the
    processes of other users that this submission's /proc does not show."""
    ours, found = {_os.getsid(1), _os.getsid(0)}, []
    for pid in range(1, _last_pid() + 1000):
        try:
            _os.kill(pid, 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        try:
            session = _os.getsid(pid)
        except ProcessLookupError:
            continue
        if session not in ours:
            command = " ".join(_lines(f"/proc/{pid}/cmdline")).replace(chr(0), " ")
            found.append(f"{pid} (session {session}): {command[:80]}")
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
