"""Runs inside the sandbox, in each submission's process, which installs this system-call filter on
itself (and in the grading process's trial of whether it can be installed).

`grader.sandbox.inside.isolate` installs it once the process has done its own privileged set-up
(namespaces, mounts, its own user) and before any of the submission's code runs; every process
the submission forks or executes inherits it, and no_new_privs keeps a set-uid program from
shedding it. What it denies outlives a submission or reaches past it (kernel keyrings, new
namespaces, tracing, mounts, kernel modules, sockets past the network namespace), and no lesson
needs it: everything else is allowed, including the plain clone that threads and fork use. Calls
are named, and libseccomp (`pyseccomp`, a ctypes wrapper of Debian's libseccomp2) turns the names
into this machine's numbers; a call of another architecture's ABI (x86_64's 32-bit int 0x80)
kills the thread.

libseccomp builds the filter into a BPF program once per process (`program`): the sandbox template
does so before it forks, and each submission's process only hands the program it inherited to
the kernel. Building it there cost every submission 2.6 ms of CPU and 440 page faults (now 0.5 ms
and 74).
"""

import ctypes
import errno
import functools
import os

from grader.sandbox.inside.syscalls import PR_SET_NO_NEW_PRIVS, libc

try:
    import pyseccomp
except (ImportError, OSError, RuntimeError) as error:  # RuntimeError: no libseccomp found
    pyseccomp, MISSING = None, f"libseccomp cannot be loaded: {error}"
else:
    MISSING = None

DENIED = (
    # Kernel keyrings outlive the processes (persistent keyrings last days), and asking for one
    # creates it.
    "keyctl",
    "add_key",
    "request_key",
    # New namespaces (a user namespace gives back every capability) and entering others.
    "unshare",
    "setns",
    # Reading or steering another process, and stealing its open files.
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "kcmp",
    # Mounts, old and new API.
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    # Kernel attack surface a notebook never uses: eBPF, perf counters, userfaultfd (a classic
    # way to win kernel races), io_uring (its operations bypass this filter), file handles
    # (open_by_handle_at reaches files outside the mount namespace) and the kernel log.
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "syslog",
    # The machine's own: kernel modules, another kernel, reboot, swap.
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
)
# The only socket families a notebook needs: AF_UNIX, and AF_INET and AF_INET6, which the
# submission's empty network namespace confines. Every other family is refused, known or not:
# AF_VSOCK reaches a virtual machine's host from inside that namespace, netlink the kernel's
# routing, device events and firewall; AF_PACKET, AF_ALG, AF_KEY… are kernel code no lesson
# uses. glibc's getaddrinfo asks netlink which families have addresses (AI_ADDRCONFIG) and,
# refused, assumes both: nothing else a notebook runs (torch, IPython, multiprocessing) opens one.
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
SOCKET_FAMILIES = (AF_UNIX, AF_INET, AF_INET6)
# clone with any of these flags makes a namespace.
NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}


PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class _Program(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> None:
    """Deny the calls above to this process and to every process it starts from now on (raises
    OSError where the filter cannot be installed). The process must have one thread (a fork
    has): the threads it starts later inherit the filter."""
    fprog, _ = _loadable()
    zero = ctypes.c_ulong(0)
    # no_new_privs first, as libseccomp sets it: no set-uid program sheds the filter
    for option, value, argument in (
        (PR_SET_NO_NEW_PRIVS, 1, zero),
        (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog)),
    ):
        if libc.prctl(option, ctypes.c_ulong(value), argument, zero, zero) != 0:
            raise OSError(ctypes.get_errno(), f"prctl: {os.strerror(ctypes.get_errno())}")


def prepare() -> None:
    """Build the program now, for the forks that follow (raises OSError where it cannot be)."""
    _loadable()


@functools.cache
def _loadable() -> tuple:
    """The program as prctl takes it (a struct sock_fprog), and the instructions it points to."""
    code = program()
    instructions = ctypes.create_string_buffer(code, len(code))
    return _Program(len(code) // 8, ctypes.addressof(instructions)), instructions  # 8 bytes each


@functools.cache
def program() -> bytes:
    """The filter as this machine's BPF program, built by libseccomp (raises OSError where it
    cannot be)."""
    if pyseccomp is None:
        raise OSError(errno.ENOSYS, MISSING)
    deny = pyseccomp.ERRNO(errno.EPERM)
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for name in DENIED:
        # A name this libseccomp does not know is newer than it (say, mount_setattr): skipped.
        if pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name) >= 0:
            rules.add_rule(deny, name)
    # clone3 passes its flags in memory, which a filter cannot read: "not implemented" makes
    # glibc fall back to clone, whose flags it can.
    rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    s390 = (pyseccomp.Arch.S390, pyseccomp.Arch.S390X)
    flags = 1 if pyseccomp.system_arch() in s390 else 0  # clone's flags argument
    for flag in NAMESPACE_FLAGS.values():
        rules.add_rule(deny, "clone", pyseccomp.Arg(flags, pyseccomp.MASKED_EQ, flag, flag))
    for call in ("socket", "socketpair"):
        for family in _refused_families():
            rules.add_rule(deny, call, family)
    exported = os.memfd_create("syscall-filter")
    try:
        with open(exported, "wb", closefd=False) as file:
            rules.export_bpf(file)
        return os.pread(exported, 1 << 20, 0)
    finally:
        os.close(exported)


def _refused_families() -> list:
    """Conditions on the family argument (all 64 bits) that match every family but those
    allowed: each number below the largest allowed one that is not allowed, and all above it."""
    last = max(SOCKET_FAMILIES)
    below = [pyseccomp.Arg(0, pyseccomp.EQ, n) for n in range(last) if n not in SOCKET_FAMILIES]
    return [*below, pyseccomp.Arg(0, pyseccomp.GT, last)]
