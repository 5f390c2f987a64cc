"""What this machine offers the grader in cgroups, read from the kernel's files here and not
through the grader's own code, so that the tests can hold the grader to it: root on cgroup v1;
on v2, root or a user the grader's cgroup is delegated to, where that cgroup has the controller.
"""

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Offer:
    """The hierarchy (1, 2, or 0 for none), whether a memory cgroup and a CPU share can be had,
    and words the protections line must give for each that cannot."""

    version: int
    memory: bool
    cpu: bool
    memory_why_not: str = ""
    cpu_why_not: str = ""


def offered() -> Offer:
    """What this process, as it runs, can have."""
    lines = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
    v1 = {name for _, names, _ in lines for name in names.split(",") if name}
    root_user = os.geteuid() == 0
    if v1 & {"memory", "cpu"}:
        memory, cpu = "memory" in v1 and root_user, "cpu" in v1 and root_user
        why = ("cgroup v1 memory cgroups need root", "cgroup v1 cpu groups need root")
        return Offer(1, memory, cpu, *("" if root_user else words for words in why))
    unified = [path for number, names, path in lines if number == "0" and names == ""]
    if unified and (ROOT / "cgroup.controllers").exists():
        own = ROOT / unified[0].strip().lstrip("/")
        base = own.parent if own.name == "grader" else own  # where the grader put itself
        controllers = (base / "cgroup.controllers").read_text().split()
        files = (base, base / "cgroup.subtree_control", base / "cgroup.procs")
        writable = all(os.access(path, os.W_OK) for path in files)
        denied = "not delegated to this user" if not root_user else "Read-only file system"
        why = {}
        for controller in ("memory", "cpu"):
            if controller not in controllers:
                why[controller] = f"no {controller} controller delegated"
            else:
                why[controller] = "" if writable else denied
        return Offer(2, not why["memory"], not why["cpu"], why["memory"], why["cpu"])
    mounted = "no cgroup memory controller is mounted", "no cgroup cpu controller is mounted"
    return Offer(0, False, False, *mounted)
