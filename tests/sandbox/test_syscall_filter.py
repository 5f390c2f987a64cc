"""The submissions' system-call filter refuses what outlives a submission, and lets a lesson run."""

import ctypes
import errno
import os
import socket
import subprocess
import sys
import threading

import pytest
from forked import in_a_fork

from grader.sandbox.inside import syscall_filter
from grader.sandbox.outside.isolation import detect_protections

pytestmark = pytest.mark.skipif(syscall_filter.MISSING is not None, reason="no libseccomp here")

KEYCTL_GET_PERSISTENT, KEY_SPEC_PROCESS_KEYRING, PTRACE_ATTACH = 22, -2, 16
SIGCHLD = 17
# Run by a process the filtered one executes: torch's threads and autograd work, and the filter
# came with the exec.
LESSON_WORK = """
import ctypes, pyseccomp, torch
torch.set_num_threads(4)
a = torch.randn(300, 300)
x = torch.ones(3, requires_grad=True)
(x * x).sum().backward()
keyctl = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, "keyctl")
refused = ctypes.CDLL(None, use_errno=True).syscall(keyctl, 22, -1, -2) == -1
print(torch.get_num_threads(), (a @ a).shape[0], x.grad.tolist(), refused, ctypes.get_errno())
"""


def _number(name: str) -> int:
    import pyseccomp

    return pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)


def _errno_of(result: int) -> int | None:
    """The errno a call that returned `result` set (None when it did not fail)."""
    return ctypes.get_errno() if result == -1 else None


def _refused_calls() -> dict:
    """In a fork: install the filter, then try what it must refuse."""
    libc = ctypes.CDLL(None, use_errno=True)
    syscall_filter.install()
    child = os.fork()  # plain fork: allowed
    if child == 0:
        os.kill(os.getpid(), 19)  # SIGSTOP: waits to be traced
        os._exit(0)
    null = ctypes.c_long(0)
    seen = {
        "keyctl": _errno_of(
            libc.syscall(_number("keyctl"), KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_PROCESS_KEYRING)
        ),
        "add_key": _errno_of(libc.syscall(_number("add_key"), b"user", b"n", b"x", 1, -4)),
        "unshare": _errno_of(libc.unshare(syscall_filter.NAMESPACE_FLAGS["CLONE_NEWUSER"])),
        "clone": _errno_of(
            libc.syscall(
                _number("clone"),
                syscall_filter.NAMESPACE_FLAGS["CLONE_NEWNS"] | SIGCHLD,
                null,
                null,
                null,
                null,
            )
        ),
        "clone3": _errno_of(libc.syscall(_number("clone3"), null, ctypes.c_long(88))),
        "ptrace": _errno_of(libc.ptrace(PTRACE_ATTACH, child, null, null)),
    }
    os.kill(child, 9)
    os.waitpid(child, 0)
    return seen


def test_the_filter_refuses_keyrings_namespaces_and_tracing():
    """keyctl, add_key, unshare(CLONE_NEWUSER), clone with CLONE_NEWNS and ptrace fail with
    EPERM; clone3 says it is not there, so that glibc falls back to clone."""
    eperm = errno.EPERM
    assert in_a_fork(_refused_calls) == {
        "keyctl": eperm,
        "add_key": eperm,
        "unshare": eperm,
        "clone": eperm,
        "clone3": errno.ENOSYS,
        "ptrace": eperm,
    }


# family, type, protocol: each a family the kernel knows, and one a notebook never uses.
REFUSED_SOCKETS = {
    "AF_UNSPEC": (0, socket.SOCK_STREAM, 0),
    "AF_KEY": (15, socket.SOCK_RAW, 2),  # PF_KEY_V2
    "AF_NETLINK route": (16, socket.SOCK_RAW, 0),
    "AF_NETLINK uevents": (16, socket.SOCK_DGRAM, 15),  # the host's device events
    "AF_PACKET": (17, socket.SOCK_RAW, 0x0300),  # ETH_P_ALL, network order
    "AF_TIPC": (30, socket.SOCK_RDM, 0),
    "AF_BLUETOOTH": (31, socket.SOCK_RAW, 0),
    "AF_ALG": (38, socket.SOCK_SEQPACKET, 0),
    "AF_VSOCK": (40, socket.SOCK_STREAM, 0),  # reaches a virtual machine's host
    "AF_XDP": (44, socket.SOCK_RAW, 0),
    "past AF_MAX": (1000, socket.SOCK_STREAM, 0),
}
ALLOWED_SOCKETS = {
    "AF_UNIX": (socket.AF_UNIX, socket.SOCK_STREAM, 0),
    "AF_INET": (socket.AF_INET, socket.SOCK_DGRAM, 0),
    "AF_INET6": (socket.AF_INET6, socket.SOCK_STREAM, 0),
}


def _socket_families() -> dict:
    """In a fork: install the filter, then open a socket and a socket pair of each family."""
    libc = ctypes.CDLL(None, use_errno=True)
    syscall_filter.install()
    seen = {}
    for name, args in {**REFUSED_SOCKETS, **ALLOWED_SOCKETS}.items():
        fd = libc.socket(*args)
        seen[name] = _errno_of(fd)
        if fd >= 0:
            os.close(fd)
    # The kernel reads the family as an int: AF_UNIX with bits set above it is still refused.
    high = libc.syscall(_number("socket"), ctypes.c_long(1 << 32 | 1), socket.SOCK_STREAM, 0)
    seen["AF_UNIX with high bits"] = _errno_of(high)
    pair = (ctypes.c_int * 2)()
    for name, family in {"pair AF_VSOCK": 40, "pair AF_TIPC": 30, "pair AF_UNIX": 1}.items():
        seen[name] = _errno_of(libc.socketpair(family, socket.SOCK_STREAM, 0, pair))
    # glibc asks netlink which families have addresses; refused, it assumes both.
    found = socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM, flags=socket.AI_ADDRCONFIG)
    seen["getaddrinfo localhost"] = bool(found)
    return seen


def test_the_filter_allows_only_unix_and_ip_sockets():
    """socket and socketpair of any family but AF_UNIX, AF_INET and AF_INET6 (AF_VSOCK, netlink,
    packet, alg, key…, and numbers past the last family) fail with EPERM; those three work, and
    so does getaddrinfo with AI_ADDRCONFIG, which asks netlink first."""
    refused = {name: errno.EPERM for name in REFUSED_SOCKETS}
    assert in_a_fork(_socket_families) == {
        **refused,
        **dict.fromkeys(ALLOWED_SOCKETS),
        "AF_UNIX with high bits": errno.EPERM,
        "pair AF_VSOCK": errno.EPERM,
        "pair AF_TIPC": errno.EPERM,
        "pair AF_UNIX": None,
        "getaddrinfo localhost": True,
    }


def _what_a_lesson_does() -> list:
    """In a fork: install the filter, then start a thread, fork, and execute programs."""
    syscall_filter.install()
    ran = []
    thread = threading.Thread(target=lambda: ran.append("thread"))
    thread.start()
    thread.join()
    child = os.fork()
    if child == 0:
        os._exit(7)
    ran.append(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
    ran.append(subprocess.run(["true"]).returncode)
    lesson = subprocess.run([sys.executable, "-c", LESSON_WORK], capture_output=True, text=True)
    ran.append(lesson.stdout.strip() or lesson.stderr[-500:])
    return ran


def test_threads_fork_exec_and_torch_work_under_the_filter():
    """Threads, fork, a subprocess, and torch (a matmul on four threads, a backward) still
    work; the filter is inherited across exec."""
    assert in_a_fork(_what_a_lesson_does) == [
        "thread",
        7,
        0,
        f"4 300 [2.0, 2.0, 2.0] True {errno.EPERM}",
    ]


def test_the_protections_line_says_when_there_is_no_filter(tmp_path, monkeypatch):
    """Without libseccomp, the line names the filter as missing, and why."""
    (tmp_path / "pyseccomp.py").write_text("raise RuntimeError('Unable to find libseccomp')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    protections, _ = detect_protections()
    assert not protections.syscall_filter
    assert "no system-call filter (" in protections.describe()
    assert "Unable to find libseccomp" in protections.describe()


def test_the_protections_line_names_the_filter():
    """With libseccomp, the filter is among the active protections."""
    protections, _ = detect_protections()
    assert protections.syscall_filter, protections.describe()
    assert "system-call filter (no kernel keyrings" in protections.describe()


def test_a_fork_installs_the_program_its_parent_built_without_building_it_again():
    """As in the sandbox template: the program is built before the fork, and the submission's
    process only hands it to the kernel (libseccomp is not asked again), with the same effect."""
    syscall_filter.prepare()

    def install_inherited():
        import pyseccomp

        def rebuilt(*args):
            raise AssertionError("the filter was built again in the fork")

        pyseccomp.SyscallFilter = rebuilt
        syscall_filter.install()
        keyctl = ctypes.CDLL(None, use_errno=True).syscall(
            _number("keyctl"), KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_PROCESS_KEYRING
        )
        with open("/proc/self/status") as status:
            mode = next(line.split()[1] for line in status if line.startswith("Seccomp:"))
        return _errno_of(keyctl), mode

    assert in_a_fork(install_inherited) == [errno.EPERM, "2"]  # 2: a filter
