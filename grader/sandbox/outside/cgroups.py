"""Runs in the grading process: cgroups for one sandbox, memory that counts every process and
shared page, and a CPU share.

A per-process limit (RLIMIT_AS) lets a submission spread its memory over many processes, or keep
it in System V shared memory and tmpfs files, which belong to no process. The kernel's memory
controller charges all of that to the cgroup the submission's processes are in. The grading
process (root) makes a cgroup for each sandbox; each submission's first process moves itself in
by writing to `cgroup.procs` through a descriptor handed into the sandbox, before it drops its
privileges. cgroup v2 (`memory.max`) is used where it can be, else the v1 memory controller.
"""

import contextlib
import errno
import os
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


@dataclass
class MemoryCgroup:
    """A cgroup whose memory limit holds for all the processes in it together."""

    path: Path
    version: int

    def limit(self, memory_bytes: int) -> None:
        """Cap the memory of everything in the cgroup (without swap to spill into)."""
        if self.version == 2:
            (self.path / "memory.max").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                (self.path / "memory.swap.max").write_text("0")
            (self.path / "memory.oom.group").write_text("1")
        else:  # memory+swap may never be below memory alone: raise it first, lower it last
            swap = self.path / "memory.memsw.limit_in_bytes"
            with contextlib.suppress(OSError):  # only where swap is accounted
                swap.write_text(str(max(memory_bytes, int(swap.read_text()))))
            (self.path / "memory.limit_in_bytes").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                swap.write_text(str(memory_bytes))

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
    one still in use is left behind."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                return
            time.sleep(0.01)


def _remove_empty_siblings(parent: Path) -> None:
    """Delete the cgroups of grading processes that are gone (a sandbox that was killed cannot
    remove its cgroup at once, nor can a process that died); rmdir refuses any still in use."""
    for stale in parent.glob("grader-*"):
        owner = stale.name.rsplit("-", 1)[-1]
        if owner.isdigit() and not _alive(int(owner)):
            with contextlib.suppress(OSError):
                stale.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def create(name: str) -> tuple[MemoryCgroup | None, str]:
    """A new cgroup beside this process's own, or None and the reason it cannot be had."""
    if os.geteuid() != 0:
        return None, "a memory cgroup needs root"
    errors = []
    for version, parent in _candidates():
        _remove_empty_siblings(parent)
        try:
            path = parent / name
            path.mkdir(exist_ok=True)
            group = MemoryCgroup(path, version)
            group.limit(1 << 62)
            return group, ""
        except OSError as error:
            errors.append(f"cgroup v{version} at {parent}: {error.strerror or error}")
    return None, "; ".join(errors) or "no cgroup memory controller is mounted"


def _candidates() -> list[tuple[int, Path]]:
    """(version, parent folder) for each memory hierarchy this process belongs to."""
    found = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        relative = path.lstrip("/")
        if number == "0" and controllers == "":
            folder = ROOT / relative
            if "memory" in _read(folder / "cgroup.controllers").split():
                found.append((2, folder))
        elif "memory" in controllers.split(","):
            found.append((1, ROOT / "memory" / relative))
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def create_cpu_share(name: str, cores: float = 1.0) -> Path | None:
    """A cgroup v1 `cpu` group that lets everything in it use at most `cores` CPUs, so that a
    submission's busy processes cannot take the core another worker's submission runs on.
    None where the v1 cpu controller is not available to this process."""
    if os.geteuid() != 0:
        return None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            folder = ROOT / controllers / path.lstrip("/") / name
            _remove_empty_siblings(folder.parent)
            try:
                folder.mkdir(exist_ok=True)
                period = int((folder / "cpu.cfs_period_us").read_text())
                (folder / "cpu.cfs_quota_us").write_text(str(int(period * cores)))
            except (OSError, ValueError):
                return None
            return folder
    return None
