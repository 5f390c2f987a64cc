"""The sandbox student code runs in: which protections this machine gives, and how to start it.

Student code runs in a warm process (see `grader.zygote`) started inside bubblewrap: no network,
its own process and IPC namespaces, and a filesystem that holds only the system, the Python
environment and the `grader` package (read-only) plus an empty /tmp. The course folder, the
solutions, the gradebook and other students' work are not in it. When the grader runs as root,
the sandbox is entered as an unprivileged user, so that the process limit binds. Each
submission then runs in a fork with resource limits (memory, processes, CPU time, file size)
and wall-clock limits per cell and per notebook.
"""

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import grader

SANDBOX_UID = 65534  # nobody: owns no file of the course


@dataclass(frozen=True)
class Limits:
    """Resource limits for one submission."""

    cell_seconds: float = 30.0
    notebook_seconds: float = 120.0
    memory_bytes: int = 2 * 1024**3
    processes: int = 64
    output_bytes: int = 8 * 1024**2
    file_bytes: int = 64 * 1024**2


@dataclass(frozen=True)
class Protections:
    """What isolates student code on this machine, and what is missing."""

    namespaces: bool
    unprivileged: bool
    missing: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line for the instructor: active protections, then missing ones."""
        active = ["time limits", "memory limit", "process limit", "file size limit"]
        if self.namespaces:
            active += ["no network", "private filesystem view", "own process namespace"]
        if self.unprivileged:
            active.append("unprivileged user")
        text = "sandbox: " + ", ".join(active)
        return text + (f"; missing: {'; '.join(self.missing)}" if self.missing else "")


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
    """bwrap, then (for root) setpriv inside it, so student code never runs as root."""
    if as_root:
        # root needs no user namespace to build the view; it drops to SANDBOX_UID inside it,
        # so that the process limit binds (it never binds root).
        namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        uid = str(SANDBOX_UID)
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    else:
        namespaces, drop = ["--unshare-all"], []
    return [
        "bwrap",
        *namespaces,
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
        *drop,
    ]


def probe() -> tuple[Protections, list[str]]:
    """The protections available here, and the command prefix that starts the sandbox."""
    as_root = os.geteuid() == 0
    missing = []
    if shutil.which("bwrap") is None:
        missing.append("bubblewrap is not installed (apt-get install bubblewrap)")
    elif as_root and shutil.which("setpriv") is None:
        missing.append("setpriv is not installed, so root cannot drop its privileges")
    else:
        command = _bwrap_command(as_root)
        trial = subprocess.run([*command, sys.executable, "-c", "pass"], capture_output=True)
        if trial.returncode == 0:
            return Protections(namespaces=True, unprivileged=True), command
        reason = trial.stderr.decode(errors="replace").strip().splitlines()[-1:]
        missing.append(f"bubblewrap cannot create namespaces here ({' '.join(reason)})")
    missing.append("network, filesystem and process isolation are OFF")
    if as_root:
        missing.append("student code runs as root: the process limit does not bind")
    return Protections(namespaces=False, unprivileged=not as_root, missing=missing), []
