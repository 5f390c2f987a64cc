"""Runs in the grading process: cgroups for one sandbox, memory that counts every process and
shared page, and a CPU share.

A per-process limit (RLIMIT_AS) lets a submission spread its memory over many processes, or keep
it in System V shared memory and tmpfs files, which belong to no process. The kernel's memory
controller charges all of that to the cgroup the submission's processes are in. The grading
process makes a cgroup for each sandbox; each submission's first process moves itself in by
writing to `cgroup.procs` through a descriptor handed into the sandbox, before it drops its
privileges.

cgroup v1 mounts each controller on a folder of its own (`/sys/fs/cgroup/memory`, `.../cpu`); a
process is in one cgroup of each, and only root makes cgroups there: a memory cgroup and a `cpu`
group beside this process's own, both named after the sandbox channel.

cgroup v2 has one tree (`/sys/fs/cgroup/cgroup.controllers` shows it) and a process is in one
cgroup of it, which may either hold processes or hand controllers down to its children, never
both. The grader works under the cgroup it was started in, its *base*: it moves the processes
there into a leaf, `<base>/grader` (where it stays: later calls, and the grading processes it
forks, find their base as that leaf's parent), enables `memory` and `cpu` in the base's
`cgroup.subtree_control`, and makes for each sandbox channel

    <base>/<name>/              cpu.max (the CPU share), memory enabled for its children
    <base>/<name>/attendant     the channel's attendant (`create_cpu_share` returns it)
    <base>/<name>/submissions   memory.max, memory.swap.max 0, memory.oom.group 1 (`create`)

so that a submission killed for memory takes all its processes with it, never the attendant.
Root may do this anywhere, another user where the base is delegated to it (systemd's
`Delegate=yes`, as in `user@.service`).
"""

import contextlib
import errno
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
MEMBERSHIP = Path("/proc/self/cgroup")
LEAF = "grader"  # v2: where the grading processes go, beside the sandboxes' cgroups
SUBMISSIONS = "submissions"  # v2: the memory cgroup, inside a channel's cgroup
ATTENDANT = "attendant"  # v2: the attendant's place, inside a channel's cgroup


@dataclass(frozen=True)
class Hierarchy:
    """The cgroup hierarchy this process's memory and CPU controllers are on: `version` 1 or 2
    (0 where neither is), and for each controller the folder new cgroups for it go in (v1: the
    cgroup this process is in; v2: the base, for both)."""

    version: int
    folders: dict[str, Path] = field(default_factory=dict)


def hierarchy(root: Path | None = None, membership: str | None = None) -> Hierarchy:
    """Which hierarchy is in use under `root` (`ROOT`) for a process whose `/proc/self/cgroup`
    reads `membership` (this process's): v1 where it has a memory or cpu controller, else v2
    where `root` is a cgroup2 mount (a hybrid host's empty v2 tree under `unified` is not)."""
    root = ROOT if root is None else root
    if membership is None:
        membership = _read(MEMBERSHIP)
    v1, unified = {}, None
    for line in membership.splitlines():
        number, controllers, path = line.split(":", 2)
        relative = path.strip().lstrip("/")
        if number == "0" and controllers == "":
            unified = relative
        for controller in ("memory", "cpu"):
            if controller in controllers.split(","):
                v1[controller] = root / controllers / relative
    if v1:
        return Hierarchy(1, v1)
    if unified is not None and (root / "cgroup.controllers").exists():
        own = root / unified
        base = own.parent if own.name == LEAF and own != root else own
        return Hierarchy(2, {"memory": base, "cpu": base})
    return Hierarchy(0)


@dataclass
class MemoryCgroup:
    """A cgroup whose memory limit holds for all the processes in it together."""

    path: Path
    version: int

    def limit(self, memory_bytes: int) -> None:
        """Cap the memory of everything in the cgroup (without swap to spill into)."""
        if self.version == 2:
            _write(self.path / "memory.max", str(memory_bytes))
            with contextlib.suppress(OSError):  # only where swap is accounted
                _write(self.path / "memory.swap.max", "0")
            _write(self.path / "memory.oom.group", "1")  # one killed, all killed
        else:  # memory+swap may never be below memory alone: raise it first, lower it last
            swap = self.path / "memory.memsw.limit_in_bytes"
            with contextlib.suppress(OSError, ValueError):  # only where swap is accounted
                _write(swap, str(max(memory_bytes, int(swap.read_text()))))
            _write(self.path / "memory.limit_in_bytes", str(memory_bytes))
            with contextlib.suppress(OSError):
                _write(swap, str(memory_bytes))

    def open_procs(self) -> int:
        """A descriptor on `cgroup.procs`: writing "0" to it moves the writer in."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def oom_kills(self) -> int:
        """How many processes the kernel has killed here for want of memory."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError):
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return 0

    def held(self) -> int:
        """The bytes charged to the cgroup that the kernel cannot reclaim without swap:
        processes' anonymous memory and shared memory (tmpfs, System V segments), not the
        file cache (0 where it cannot be read)."""
        keys = ("anon", "shmem") if self.version == 2 else ("rss", "shmem")
        held = 0
        with contextlib.suppress(OSError, ValueError):
            for line in (self.path / "memory.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key in keys:
                    held += int(value)
        return held

    def wait_until_below(self, level: int, seconds: float = 5.0) -> bool:
        """Wait up to `seconds` for what the cgroup holds to fall under `level` bytes; whether
        it did.

        Memory a submission's processes leave charged after they have ended (System V shared
        memory, freed with its IPC namespace by a kernel worker some time later) would
        otherwise count against the next submission in the cgroup.
        """
        deadline = time.monotonic() + seconds
        while self.held() >= level:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def remove(self) -> None:
        """Delete the cgroup, once the processes that were killed in it have left."""
        remove_when_empty(self.path)


def remove_when_empty(path: Path, seconds: float = 5.0) -> None:
    """Delete a cgroup, waiting up to `seconds` for the processes still ending in it to leave;
    one still in use is left behind. On v2, the channel's cgroup around it goes too once both
    its memory cgroup and its attendant's are gone."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            _rmdir(path)
            break
        except FileNotFoundError:
            break
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                return
            time.sleep(0.01)
    if path.name in (SUBMISSIONS, ATTENDANT):
        with contextlib.suppress(OSError):  # the other one is still there
            _rmdir(path.parent)


def _remove_empty_siblings(parent: Path) -> None:
    """Delete the cgroups of grading processes that are gone (a sandbox that was killed cannot
    remove its cgroup at once, nor can a process that died); rmdir refuses any still in use."""
    for stale in parent.glob("grader-*"):
        owner = stale.name.rsplit("-", 1)[-1]
        if owner.isdigit() and not _alive(int(owner)):
            for inner in (SUBMISSIONS, ATTENDANT):  # v2: a channel's cgroups inside its own
                with contextlib.suppress(OSError):
                    _rmdir(stale / inner)
            with contextlib.suppress(OSError):
                _rmdir(stale)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def create(
    name: str, root: Path | None = None, membership: str | None = None
) -> tuple[MemoryCgroup | None, str]:
    """A new memory cgroup for a sandbox channel, or None and the reason it cannot be had
    (which names the hierarchy). `root` and `membership` are as for `hierarchy`."""
    found = hierarchy(root, membership)
    if found.version == 1:
        if "memory" not in found.folders:
            return None, "cgroup v1 without a memory controller"
        if os.geteuid() != 0:
            return None, "cgroup v1 memory cgroups need root"
        parent = found.folders["memory"]
        _remove_empty_siblings(parent)
        try:
            path = parent / name
            _mkdir(path)
            group = MemoryCgroup(path, 1)
            group.limit(1 << 62)
            return group, ""
        except OSError as error:
            return None, f"cgroup v1 at {parent}: {_why(error)}"
    if found.version == 2:
        base = found.folders["memory"]
        why_not = _enable(base, "memory")
        if why_not:
            return None, f"cgroup v2 at {base}: {why_not}"
        _remove_empty_siblings(base)
        try:
            _mkdir(base / name)
            _write(base / name / "cgroup.subtree_control", "+memory")
            _mkdir(base / name / SUBMISSIONS)
            group = MemoryCgroup(base / name / SUBMISSIONS, 2)
            group.limit(1 << 62)
            return group, ""
        except OSError as error:
            remove_when_empty(base / name / SUBMISSIONS, seconds=0)
            with contextlib.suppress(OSError):
                _rmdir(base / name)
            return None, f"cgroup v2 at {base / name}: {_why(error)}"
    return None, "no cgroup memory controller is mounted"


def cpu_share(
    name: str, cores: float = 1.0, root: Path | None = None, membership: str | None = None
) -> tuple[Path | None, str]:
    """A cgroup that lets everything in it use at most `cores` CPUs together, so that a
    submission's busy processes cannot take the core another worker's submission runs on:
    the folder whose `cgroup.procs` the channel's attendant writes itself into, or None and the
    reason it cannot be had. `root` and `membership` are as for `hierarchy`."""
    found = hierarchy(root, membership)
    if found.version == 1:
        if "cpu" not in found.folders:
            return None, "cgroup v1 without a cpu controller"
        if os.geteuid() != 0:
            return None, "cgroup v1 cpu groups need root"
        folder = found.folders["cpu"] / name
        _remove_empty_siblings(folder.parent)
        try:
            _mkdir(folder)
            period = int((folder / "cpu.cfs_period_us").read_text())
            _write(folder / "cpu.cfs_quota_us", str(int(period * cores)))
        except (OSError, ValueError) as error:
            return None, f"cgroup v1 at {folder.parent}: {_why(error)}"
        return folder, ""
    if found.version == 2:
        base = found.folders["cpu"]
        why_not = _enable(base, "cpu")
        if why_not:
            return None, f"cgroup v2 at {base}: {why_not}"
        _remove_empty_siblings(base)
        folder = base / name
        try:
            _mkdir(folder)
            _, _, period = _read(folder / "cpu.max").partition(" ")
            period = int(period or 100_000)
            _write(folder / "cpu.max", f"{int(period * cores)} {period}")
            _mkdir(folder / ATTENDANT)
        except (OSError, ValueError) as error:
            with contextlib.suppress(OSError):  # unless the memory cgroup is in it
                _rmdir(folder)
            return None, f"cgroup v2 at {folder}: {_why(error)}"
        return folder / ATTENDANT, ""
    return None, "no cgroup cpu controller is mounted"


def create_cpu_share(name: str, cores: float = 1.0) -> Path | None:
    """`cpu_share`'s folder alone: None where no CPU share can be had."""
    return cpu_share(name, cores)[0]


def _enable(base: Path, controller: str) -> str:
    """Make v2's `controller` available to new cgroups in `base`; why it cannot be ('' once it
    is). A cgroup that holds processes cannot hand controllers to its children (the root
    excepted): its processes move into the leaf `LEAF` first."""
    if controller in _read(base / "cgroup.subtree_control").split():
        return ""
    offered = _read(base / "cgroup.controllers").split()
    if controller not in offered:
        return (
            f"no {controller} controller delegated to it"
            f" (cgroup.controllers: {' '.join(offered) or 'none'})"
        )
    for _ in range(3):  # processes started meanwhile land in the base, and are moved again
        try:
            _write(base / "cgroup.subtree_control", f"+{controller}")
            return ""
        except OSError as error:
            if error.errno != errno.EBUSY:
                return f"cannot enable {controller} in cgroup.subtree_control: {_why(error)}"
        leaf = base / LEAF
        try:
            _mkdir(leaf)
            for pid in _read(base / "cgroup.procs").split():
                with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                    _write(leaf / "cgroup.procs", pid)
        except OSError as error:
            return f"cannot move its processes into {leaf}: {_why(error)}"
    return f"processes keep arriving in it, so {controller} cannot be enabled for its children"


def _why(error: OSError | ValueError) -> str:
    """An error's words, saying where permission is what is missing."""
    if not isinstance(error, OSError):
        return str(error)
    words = error.strerror or str(error)
    if error.errno in (errno.EACCES, errno.EPERM) and os.geteuid() != 0:
        return f"{words}: not delegated to this user (uid {os.geteuid()})"
    return words


# The file operations on cgroupfs, one place each (the unit tests stand a fake kernel in).


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, text: str) -> None:
    """Write a control file (that the kernel made: never create one)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mkdir(path: Path) -> None:
    path.mkdir(exist_ok=True)


def _rmdir(path: Path) -> None:
    path.rmdir()
