"""Runs in the grading process: which protections this machine gives the sandbox student code
runs in, and the command that starts it.

Student code runs in forks of a template process (`grader.sandbox.inside.cell_server`) started
inside bubblewrap: no network, its own process and IPC namespaces, and a filesystem that holds
only the system, the Python environment and the `grader` package (read-only) plus an empty /tmp.
The course folder, the solutions, the gradebook and other students' work are not in it. When the
grader runs as root, each submission also gets a fresh /tmp, /dev/shm, IPC and network namespace,
a /proc that shows it no other user's process (Linux 5.8+), a memory cgroup, and a user of its
own, so that the process limit binds. (The memory cgroup and the CPU share need root on cgroup
v1; on v2 a user the grader's cgroup is delegated to has them too:
`grader.sandbox.outside.cgroups`.) Each submission's process installs a system-call filter
(`grader.sandbox.inside.syscall_filter`) before it runs any of the submission's code. Each
submission runs with resource limits (memory, processes, CPU time, file size) and wall-clock
limits per cell and per notebook.
"""

import dataclasses
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import grader
from grader.sandbox.outside import cgroups


@dataclass(frozen=True)
class Limits:
    """Resource limits for one submission."""

    cell_seconds: float = 30.0
    notebook_seconds: float = 120.0
    memory_bytes: int = 2 * 1024**3
    processes: int = 64
    output_bytes: int = 8 * 1024**2
    file_bytes: int = 64 * 1024**2
    cpu_cores: float = 1.0  # what all of a sandbox's processes may use together (cgroup)


@dataclass(frozen=True)
class Protections:
    """What isolates student code on this machine, and what is missing."""

    # bubblewrap's namespaces: no network, a private filesystem view, and a PID namespace of
    # the template's own, so every process below a server can be found
    pid_namespace: bool
    own_user: bool  # each submission runs as an unprivileged user of its own (needs root)
    per_submission: bool = False
    memory_cgroup: bool = False
    cpu_share: bool = False
    missing: list[str] = field(default_factory=list)
    syscall_filter: bool = False
    cgroup_version: int = 0  # the hierarchy the memory cgroup and CPU share are on (1 or 2)
    # each submission's /proc shows no other user's process (hidepid: root, Linux 5.8+)
    processes_hidden: bool = False

    @property
    def shareable(self) -> bool:
        """Whether submissions of several grading processes may run in one template at once:
        only where each has its own user, mounts and namespaces, and sees none of the others'
        processes."""
        return (
            self.pid_namespace and self.own_user and self.per_submission and self.processes_hidden
        )

    def describe(self) -> str:
        """One line for the instructor: active protections, then missing ones."""
        active = ["time limits", "process limit", "file size limit"]
        cgroup = f"cgroup v{self.cgroup_version}" if self.cgroup_version else "cgroup"
        active.append(
            f"memory limit over all of a submission's processes and shared memory ({cgroup})"
            if self.memory_cgroup
            else "memory limit per process"
        )
        if self.pid_namespace:
            active += ["no network", "private filesystem view", "own process namespace"]
        if self.per_submission:
            active.append("fresh /tmp, /dev/shm, IPC and network namespace for each submission")
        if self.processes_hidden:
            active.append("no other process visible")
        if self.cpu_share:
            active.append(f"at most one core per grading process ({cgroup})")
        if self.own_user:
            active.append("unprivileged user of its own")
        if self.syscall_filter:
            active.append(
                "system-call filter (no kernel keyrings, namespaces, tracing, mounts or sockets"
                " but unix and IP)"
            )
        text = "sandbox: " + ", ".join(active)
        return text + (f"; missing: {'; '.join(self.missing)}" if self.missing else "")


class Detected(NamedTuple):
    """The protections available here, and the command prefix that starts the sandbox."""

    protections: Protections
    command: list[str]


def _bind_args() -> list[str]:
    python_home = Path(sys.base_prefix).resolve()
    env_home = Path(sys.prefix).resolve()
    package = Path(grader.__file__).resolve().parent
    args = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    targets = sorted({python_home, env_home, package})
    parents = sorted({a for t in targets for a in t.parents if a != Path("/")}, key=len_of)
    for parent in parents:  # bwrap would make them root-only, hiding the binds from the sandbox
        args += ["--perms", "0755", "--dir", str(parent)]
    for path in targets:
        args += ["--ro-bind", str(path), str(path)]
    return args


def len_of(path: Path) -> int:
    """Path depth, so that parents are made before their children."""
    return len(path.parts)


def _bwrap_command(as_root: bool) -> list[str]:
    """bwrap with the namespaces and, for root, the few capabilities the template needs.

    As root no user namespace is needed to build the view; the template keeps only what it
    takes to give each submission its own mounts and user (`grader.sandbox.inside.isolate`), and
    each submission drops to a user of its own, so that the process limit binds (it never binds
    root).
    """
    if as_root:
        namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        caps = ["--cap-drop", "ALL"]
        for cap in ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_KILL"):
            caps += ["--cap-add", cap]
    else:
        namespaces, caps = ["--unshare-all"], []
    return [
        "bwrap",
        *namespaces,
        *caps,
        "--die-with-parent",
        "--new-session",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        # /tmp first: binds that live under /tmp (a checkout there) are then mounted inside it
        "--perms",
        "1777",
        "--size",
        str(512 * 1024**2),
        "--tmpfs",
        "/tmp",
        *_bind_args(),
        "--chdir",
        "/tmp",
        # The caller's HOME, as a kernel would have it: tracebacks shorten paths under it to ~.
        "--setenv",
        "HOME",
        os.path.expanduser("~"),
        "--setenv",
        "IPYTHONDIR",
        "/tmp/ipython",
        "--setenv",
        "MPLCONFIGDIR",
        "/tmp/matplotlib",
        "--",
    ]


# Run inside the sandbox by `detect_protections`: can a submission get mount, IPC and network
# namespaces of its own (unprivileged, inside a user namespace of its own), and in them a /proc
# that hides other users' processes (`grader.sandbox.inside.isolate`)? Exits 0 for both, 2 for
# the namespaces alone, 1 for neither.
_UNSHARE_TRIAL = (
    "import ctypes, os, sys; libc = ctypes.CDLL(None); user = 0x10000000 if os.geteuid() else 0\n"
    "libc.unshare(0x48020000 | user) and sys.exit(1)\n"
    "libc.mount(b'none', b'/', None, 0x44000, None)\n"  # MS_REC | MS_PRIVATE
    "sys.exit(2 if libc.mount(b'proc', b'/proc', b'proc', 14, b'hidepid=invisible') else 0)"
)


# Run by `detect_protections`: can a process install the submissions' system-call filter here?
_FILTER_TRIAL = "from grader.sandbox.inside import syscall_filter; syscall_filter.install()"


def detect_protections() -> Detected:
    """The protections available here, and the command prefix that starts the sandbox."""
    trial = subprocess.Popen(  # tried while bubblewrap's trial runs
        [sys.executable, "-c", _FILTER_TRIAL], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    protections, command = _detect_isolation()
    why_not = trial.communicate()[1].decode(errors="replace").strip().splitlines()[-1:]
    if trial.returncode == 0:
        return Detected(dataclasses.replace(protections, syscall_filter=True), command)
    missing = [*protections.missing, _NO_FILTER.format(" ".join(why_not))]
    return Detected(dataclasses.replace(protections, missing=missing), command)


def _detect_isolation() -> Detected:
    """The namespaces, cgroups and users available here, and the command prefix that starts
    the sandbox."""
    as_root = os.geteuid() == 0
    missing = []
    if shutil.which("bwrap") is None:
        missing.append("bubblewrap is not installed (apt-get install bubblewrap)")
    else:
        command = _bwrap_command(as_root)
        trial = [*command, sys.executable, "-c", _UNSHARE_TRIAL]
        trial = subprocess.run(trial, capture_output=True)
        if trial.returncode in (0, 1, 2):
            memory, cpu, version, missing = _cgroups_here()
            own_user = as_root and trial.returncode != 1  # a user of its own needs both
            if trial.returncode == 1:
                missing.append(_SHARED_SCRATCH)
            if trial.returncode != 0:
                missing.append(_PROCESSES_SHOWN)
            if not own_user:
                missing.insert(0, _NOT_ROOT)
            protections = Protections(
                pid_namespace=True,
                own_user=own_user,
                per_submission=trial.returncode != 1,
                memory_cgroup=memory,
                cpu_share=cpu,
                missing=missing,
                cgroup_version=version,
                processes_hidden=trial.returncode == 0,
            )
            return Detected(protections, command)
        reason = trial.stderr.decode(errors="replace").strip().splitlines()[-1:]
        missing.append(f"bubblewrap cannot create namespaces here ({' '.join(reason)})")
    missing.append(
        "network, filesystem and process isolation are OFF (a submission sees every process on"
        " the machine)"
    )
    if as_root:
        missing.append("student code runs as root: the process limit does not bind")
    # The cgroups need no namespace: a host that offers them limits memory and CPU all the same.
    memory, cpu, version, cgroups_missing = _cgroups_here()
    protections = Protections(
        pid_namespace=False,
        own_user=False,
        memory_cgroup=memory,
        cpu_share=cpu,
        missing=missing + cgroups_missing,
        cgroup_version=version,
    )
    return Detected(protections, [])


def _cgroups_here() -> tuple[bool, bool, int, list[str]]:
    """Whether each sandbox channel can have a memory cgroup and a CPU share here (root on
    cgroup v1; root, or a user the tree is delegated to, on v2), the hierarchy's version, and
    what is missing, with the reasons."""
    trial = f"grader-trial-{os.getpid()}"
    version = cgroups.hierarchy().version
    group, why_not = cgroups.create(trial)
    cpu, cpu_why_not = cgroups.cpu_share(trial)
    missing = [] if cpu else [_NO_CPU_SHARE.format(cpu_why_not)]
    if cpu is not None:
        cgroups.remove_when_empty(cpu)
    if group is not None:
        group.remove()
    else:
        missing.append(f"no memory cgroup ({why_not}): memory is limited per process")
    return group is not None, cpu is not None, version, missing


_NO_FILTER = (
    "no system-call filter ({}): a submission can make kernel keyrings and namespaces, trace its"
    " own processes and open sockets of any family (AF_VSOCK reaches a virtual machine's host)"
)
_NO_CPU_SHARE = "no CPU share ({}): a submission's busy processes can slow another worker's"
_NOT_ROOT = (
    "not run as root, so submissions run as the grader's own user, whose process limit all the"
    " grading workers share"
)
_PROCESSES_SHOWN = (
    "no /proc of each submission's own (needs root and Linux 5.8): a submission can list the"
    " sandbox's processes and read their command lines"
)
_SHARED_SCRATCH = (
    "no nested user namespaces, so submissions share the sandbox's /tmp and IPC namespace"
    " (/tmp and /dev/shm are emptied between submissions instead)"
)
