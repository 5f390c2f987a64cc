"""The cgroup logic for each hierarchy, against a fake cgroupfs in a folder: v2 (one tree, a
cgroup holds processes or hands controllers down, never both) and v1 (a tree per controller).

This machine's kernel may offer only one of them (or none, to a user that is not root); the
fake kernel below keeps the rules the grader depends on, so each hierarchy's logic is checked
everywhere. `test_cgroups.py` and `test_limits.py` check the real one.
"""

import errno
import os
import subprocess
from pathlib import Path

import pytest

from grader.sandbox.outside import cgroups, isolation
from grader.sandbox.outside.isolation import Protections

GIB = 1024**3
OWN = "system.slice/grader.service"  # the cgroup the grader was started in
OTHER_PID = 999_999_999  # another process in that cgroup (the shell that started the grader)


class FakeKernel:
    """cgroupfs in a folder: making a cgroup fills it with the control files the controllers
    its parent hands down give it; writes follow the kernel's rules; `denied` (an errno) makes
    every change fail as on a read-only or undelegated tree."""

    def __init__(self, root: Path, version: int, controllers=("cpu", "memory", "pids")):
        self.root, self.version, self.controllers = root, version, set(controllers)
        self.denied: int | None = None
        self.swap = True
        self.writes: list[tuple[str, str]] = []  # (path under root, text), in order
        if version == 2:
            root.mkdir(exist_ok=True)
            self._fill(root, self.controllers)
            (root / "cgroup.subtree_control").write_text(" ".join(sorted(self.controllers)))
        else:
            for hierarchy in ("memory", "cpu,cpuacct"):
                (root / hierarchy).mkdir(parents=True)
                self._fill(root / hierarchy, set(hierarchy.split(",")))

    def install(self, monkeypatch) -> None:
        monkeypatch.setattr(cgroups, "_mkdir", self.mkdir)
        monkeypatch.setattr(cgroups, "_write", self.write)
        monkeypatch.setattr(cgroups, "_rmdir", self.rmdir)

    # set-up, as the system left it before the grader started

    def cgroup(self, relative: str, procs=(), subtree=(), controllers=None) -> Path:
        """A cgroup (and its parents) as systemd made it, holding `procs`, handing `subtree`
        down, and offered `controllers` (its parent's subtree_control otherwise)."""
        path = self.root / relative
        for parent in reversed(path.relative_to(self.root).parents):
            if parent != Path("."):
                self._make(self.root / parent)
        self._make(path)
        if controllers is not None:
            (path / "cgroup.controllers").write_text(" ".join(controllers))
        (path / "cgroup.subtree_control").write_text(" ".join(subtree))
        (path / "cgroup.procs").write_text("".join(f"{pid}\n" for pid in procs))
        return path

    def membership(self, relative: str) -> str:
        """What /proc/self/cgroup reads for a process in `relative`."""
        if self.version == 2:
            return f"0::/{relative}\n"
        return f"5:memory:/{relative}\n3:cpu,cpuacct:/{relative}\n1:name=systemd:/\n0::/\n"

    # the kernel's side

    def mkdir(self, path: Path) -> None:
        if path.exists():
            return
        if self.denied:
            raise OSError(self.denied, os.strerror(self.denied), str(path))
        self._make(path)

    def write(self, path: Path, text: str) -> None:
        if self.denied:
            raise OSError(self.denied, os.strerror(self.denied), str(path))
        if not path.exists():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        self.writes.append((str(path.relative_to(self.root)), text))
        cgroup = path.parent
        if path.name == "cgroup.subtree_control":
            enabled = set(path.read_text().split())
            for token in text.split():
                controller = token[1:]
                if controller not in (cgroup / "cgroup.controllers").read_text().split():
                    raise OSError(errno.ENOENT, "No such file or directory")
                if token[0] == "+" and _procs(cgroup) and cgroup != self.root:
                    raise OSError(errno.EBUSY, "Device or resource busy")  # no internal processes
                enabled = enabled | {controller} if token[0] == "+" else enabled - {controller}
            path.write_text(" ".join(sorted(enabled)))
            for child in _children(cgroup):  # what the children now have
                self._fill(child, enabled)
        elif path.name == "cgroup.procs":
            pid = str(os.getpid()) if text.strip() == "0" else text.strip()
            if self.version == 2 and (cgroup / "cgroup.subtree_control").read_text().split():
                raise OSError(errno.EBUSY, "Device or resource busy")  # no internal processes
            tree = self.root
            if self.version == 1:  # a tree per controller
                tree = self.root / cgroup.relative_to(self.root).parts[0]
            holders = [p for p in tree.rglob("cgroup.procs") if pid in _procs(p.parent)]
            if not holders and pid != str(os.getpid()):
                raise ProcessLookupError(errno.ESRCH, "No such process")
            for holder in holders:
                holder.write_text("".join(f"{p}\n" for p in _procs(holder.parent) if p != pid))
            path.write_text("".join(f"{p}\n" for p in [*_procs(cgroup), pid]))
        elif path.name == "memory.limit_in_bytes":  # v1: never above memory+swap
            swap = cgroup / "memory.memsw.limit_in_bytes"
            if swap.exists() and int(text) > int(swap.read_text()):
                raise OSError(errno.EINVAL, "Invalid argument")
            path.write_text(text)
        elif path.name == "memory.memsw.limit_in_bytes":  # v1: never below memory alone
            if int(text) < int((cgroup / "memory.limit_in_bytes").read_text()):
                raise OSError(errno.EINVAL, "Invalid argument")
            path.write_text(text)
        elif path.name == "cpu.max":
            quota, period = text.split()
            assert (quota == "max" or int(quota) >= 1000) and int(period) >= 1000, text
            path.write_text(text)
        else:
            path.write_text(text)

    def rmdir(self, path: Path) -> None:
        if self.denied:
            raise OSError(self.denied, os.strerror(self.denied), str(path))
        if not path.exists():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        if _procs(path) or _children(path):
            raise OSError(errno.EBUSY, "Device or resource busy")
        for file in path.iterdir():
            file.unlink()
        path.rmdir()

    def _make(self, path: Path) -> None:
        if path.exists():
            return
        path.mkdir()
        for name in ("cgroup.procs", "cgroup.subtree_control"):
            (path / name).write_text("")
        if self.version == 2:
            self._fill(path, set((path.parent / "cgroup.subtree_control").read_text().split()))
        else:
            self._fill(path, set(path.relative_to(self.root).parts[0].split(",")))

    def _fill(self, path: Path, controllers: set) -> None:
        """The control files a cgroup offered `controllers` has (made once, then kept)."""
        files = {"cgroup.procs": "", "cgroup.subtree_control": ""}
        if self.version == 2:
            files["cgroup.controllers"] = " ".join(sorted(controllers))
        if "memory" in controllers and self.version == 2:
            files |= {"memory.max": "max", "memory.oom.group": "0", "memory.stat": "anon 0\n"}
            files |= {"memory.events": "oom 0\noom_kill 0\n"}
            if self.swap:
                files["memory.swap.max"] = "max"
        if "memory" in controllers and self.version == 1:
            files |= {"memory.limit_in_bytes": str(1 << 62), "memory.stat": "rss 0\n"}
            files |= {"memory.oom_control": "oom_kill_disable 0\noom_kill 0\n"}
            if self.swap:
                files["memory.memsw.limit_in_bytes"] = str(1 << 62)
        if "cpu" in controllers and self.version == 2:
            files |= {"cpu.max": "max 100000", "cpu.stat": "nr_throttled 0\n"}
        if "cpu" in controllers and self.version == 1:
            files |= {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "-1"}
        for name, text in files.items():
            if name == "cgroup.controllers" or not (path / name).exists():
                (path / name).write_text(text)


def _procs(cgroup: Path) -> list[str]:
    return (cgroup / "cgroup.procs").read_text().split()


def _children(cgroup: Path) -> list[Path]:
    return [child for child in cgroup.iterdir() if child.is_dir()]


@pytest.fixture
def v2(tmp_path, monkeypatch):
    """A v2 host whose grader runs as root in a service's cgroup, with the shell that started
    it; memory, cpu and pids handed down to it."""
    kernel = FakeKernel(tmp_path / "cgroup", 2)
    kernel.cgroup("system.slice", subtree=["cpu", "memory", "pids"])
    kernel.cgroup(OWN, procs=[os.getpid(), OTHER_PID])
    kernel.install(monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    return kernel


def _create(kernel: FakeKernel, name: str = "grader-c0-1234abcd-1", own: str = OWN):
    return cgroups.create(name, kernel.root, kernel.membership(own))


def _share(kernel: FakeKernel, name="grader-c0-1234abcd-1", cores=1.0, own: str = OWN):
    return cgroups.cpu_share(name, cores, kernel.root, kernel.membership(own))


def test_the_hierarchy_is_told_from_the_mounts_and_membership(tmp_path):
    """v2 where the root is a cgroup2 tree; v1 where a v1 controller has this process, even
    beside a hybrid host's empty v2 tree; none where neither."""
    v2 = FakeKernel(tmp_path / "v2", 2)
    v1 = FakeKernel(tmp_path / "v1", 1)
    found = cgroups.hierarchy(v2.root, v2.membership(OWN))
    assert found.version == 2 and found.folders["memory"] == v2.root / OWN
    found = cgroups.hierarchy(v1.root, v1.membership("box"))
    assert found.version == 1 and found.folders["memory"] == v1.root / "memory/box"
    assert found.folders["cpu"] == v1.root / "cpu,cpuacct/box"
    assert cgroups.hierarchy(tmp_path / "none", "0::/\n").version == 0  # no cgroup2 mounted
    assert cgroups.hierarchy(tmp_path / "none", "").version == 0


def test_v2_the_grader_moves_into_a_leaf_then_hands_memory_and_cpu_down(v2):
    """The grader's cgroup holds processes, so it cannot hand controllers down: they move
    into `<own>/grader` first, then memory and cpu are enabled, and the channel's cgroup gets
    its memory cgroup (memory.max, no swap, killed as a group) and one core."""
    base = v2.root / OWN
    group, why = _create(v2)
    share, share_why = _share(v2)
    assert group is not None and share is not None, (why, share_why)
    assert _procs(base) == [] and _procs(base / "grader") == [str(os.getpid()), str(OTHER_PID)]
    assert set((base / "cgroup.subtree_control").read_text().split()) == {"cpu", "memory"}
    tried, moved, enabled = (
        v2.writes.index((f"{OWN}/cgroup.subtree_control", "+memory")),
        v2.writes.index((f"{OWN}/grader/cgroup.procs", str(os.getpid()))),
        len(v2.writes) - 1 - v2.writes[::-1].index((f"{OWN}/cgroup.subtree_control", "+memory")),
    )
    assert tried < moved < enabled  # refused (busy), moved, then enabled
    channel = base / "grader-c0-1234abcd-1"
    assert (group.path, group.version) == (channel / "submissions", 2)
    assert share == channel / "attendant"  # the attendant is out of the memory cgroup
    assert (channel / "cgroup.subtree_control").read_text().split() == ["memory"]
    group.limit(2 * GIB)
    limits = {name: (group.path / name).read_text() for name in ("memory.max", "memory.swap.max")}
    assert limits == {"memory.max": str(2 * GIB), "memory.swap.max": "0"}
    assert (group.path / "memory.oom.group").read_text() == "1"
    assert (channel / "cpu.max").read_text() == "100000 100000"  # one core


def test_v2_a_share_below_one_core_and_a_host_without_swap(v2):
    """The quota is the share of the period; where swap is not accounted, memory.max alone."""
    v2.swap = False
    group, why = _create(v2)
    assert group is not None, why
    group.limit(GIB // 2)
    assert (group.path / "memory.max").read_text() == str(GIB // 2)
    assert not (group.path / "memory.swap.max").exists()
    share, why = _share(v2, cores=0.4)
    assert (share.parent / "cpu.max").read_text() == "40000 100000", why


def test_v2_the_grading_processes_find_their_base_from_inside_the_leaf(v2):
    """After the move, this process (and the workers it forks) are in `<own>/grader`: their
    cgroups go beside the leaf, not inside it."""
    _create(v2, "grader-c0-aaaa-1")
    group, why = _create(v2, "grader-c1-bbbb-1", own=f"{OWN}/grader")
    share, _ = _share(v2, "grader-c1-bbbb-1", own=f"{OWN}/grader")
    assert group.path == v2.root / OWN / "grader-c1-bbbb-1/submissions", why
    assert share == v2.root / OWN / "grader-c1-bbbb-1/attendant"
    assert _children(v2.root / OWN / "grader") == []


def test_v2_a_root_cgroup_hands_controllers_down_with_its_processes_in_it(v2):
    """The root cgroup is exempt from the no-internal-processes rule: nothing moves."""
    (v2.root / "cgroup.subtree_control").write_text("")
    (v2.root / "cgroup.procs").write_text(f"{os.getpid()}\n")
    group, why = _create(v2, own="")
    assert group is not None and group.path == v2.root / "grader-c0-1234abcd-1/submissions", why
    assert not (v2.root / "grader").exists() and _procs(v2.root) == [str(os.getpid())]


def test_v2_both_of_a_channels_cgroups_go_whichever_is_removed_first(v2):
    """The channel's cgroup goes with the second of its two: the client removes the memory
    cgroup first, the sandbox's trial the CPU share first."""
    for memory_first in (True, False):
        name = f"grader-c0-{memory_first}-1"
        group, _ = _create(v2, name)
        share, _ = _share(v2, name)
        paths = [group.path, share] if memory_first else [share, group.path]
        cgroups.remove_when_empty(paths[0])
        assert (v2.root / OWN / name).exists()
        cgroups.remove_when_empty(paths[1])
        assert not (v2.root / OWN / name).exists(), memory_first


def test_v2_cgroups_a_dead_grader_left_are_removed(v2):
    """A grading process that died leaves its channels' cgroups (and the two inside each):
    the next one removes them; a live one's stay."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    _create(v2, "grader-c1-eeee-1")
    for owner in (dead.pid, os.getpid()):
        for inner in ("submissions", "attendant"):
            v2.cgroup(f"{OWN}/grader-c0-ffff-{owner}/{inner}")
    _share(v2, "grader-c1-eeee-1")
    assert not (v2.root / OWN / f"grader-c0-ffff-{dead.pid}").exists()
    assert (v2.root / OWN / f"grader-c0-ffff-{os.getpid()}/submissions").exists()


def test_v2_without_a_memory_controller_delegated_nothing_moves(v2):
    """Where the grader's cgroup is not offered memory, it says so, and what it is offered;
    a CPU share can still be had; no process was moved for the memory cgroup."""
    (v2.root / OWN / "cgroup.controllers").write_text("cpu pids")
    group, why = _create(v2)
    assert group is None
    assert why == (
        f"cgroup v2 at {v2.root / OWN}: no memory controller delegated to it"
        " (cgroup.controllers: cpu pids)"
    )
    assert not (v2.root / OWN / "grader").exists()
    share, why = _share(v2)
    assert share is not None and (share.parent / "cpu.max").read_text() == "100000 100000", why


@pytest.mark.parametrize(
    ("denied", "uid", "words"),
    [
        (errno.EROFS, 0, "Read-only file system"),
        (errno.EACCES, 1000, "Permission denied: not delegated to this user (uid 1000)"),
    ],
)
def test_v2_a_tree_the_grader_may_not_change_says_why(v2, monkeypatch, denied, uid, words):
    """A read-only cgroupfs (a container's), or a user's cgroup not delegated to it: no
    memory cgroup or CPU share, the reason given, and nothing moved."""
    v2.denied = denied
    monkeypatch.setattr(os, "geteuid", lambda: uid)
    group, why = _create(v2)
    assert group is None
    assert why == (
        f"cgroup v2 at {v2.root / OWN}: cannot enable memory in cgroup.subtree_control: {words}"
    )
    share, share_why = _share(v2)
    assert share is None and share_why.startswith(f"cgroup v2 at {v2.root / OWN}: ")
    assert words in share_why
    assert _procs(v2.root / OWN) == [str(os.getpid()), str(OTHER_PID)]


def test_v2_a_delegated_tree_serves_a_user_that_is_not_root(v2, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    group, why = _create(v2)
    assert group is not None and group.version == 2, why


def test_v2_memory_held_and_kills_are_read_from_v2_files(v2):
    group, _ = _create(v2)
    (group.path / "memory.stat").write_text("anon 300\nfile 5000\nshmem 20\n")
    (group.path / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n")
    assert (group.held(), group.oom_kills()) == (320, 2)


def test_the_protections_line_names_the_hierarchy_and_why_a_cgroup_is_off(v2, monkeypatch):
    """The sandbox's cgroup trial, on a fake v2 host: both on, said to be v2; without memory
    handed down, the line says there is no memory cgroup, where, and why."""
    membership = v2.root.parent / "membership"
    membership.write_text(v2.membership(OWN))
    monkeypatch.setattr(cgroups, "ROOT", v2.root)
    monkeypatch.setattr(cgroups, "MEMBERSHIP", membership)
    memory, cpu, version, missing = isolation._cgroups_here()
    assert (memory, cpu, version, missing) == (True, True, 2, [])
    assert list((v2.root / OWN).glob("grader-trial-*")) == []  # the trial's cgroups are gone
    line = Protections(True, True, True, memory, cpu, missing, cgroup_version=version).describe()
    assert "memory limit over all of a submission's processes and shared memory (cgroup v2)" in line
    assert "at most one core per grading process (cgroup v2)" in line

    (v2.root / OWN / "cgroup.subtree_control").write_text("")
    (v2.root / OWN / "cgroup.controllers").write_text("pids")
    memory, cpu, version, missing = isolation._cgroups_here()
    line = Protections(True, True, True, memory, cpu, missing, cgroup_version=version).describe()
    assert (memory, cpu) == (False, False) and "memory limit per process" in line
    assert (
        f"no memory cgroup (cgroup v2 at {v2.root / OWN}: no memory controller delegated to it"
        " (cgroup.controllers: pids)): memory is limited per process"
    ) in line
    assert f"no CPU share (cgroup v2 at {v2.root / OWN}: no cpu controller delegated" in line


@pytest.fixture
def v1(tmp_path, monkeypatch):
    kernel = FakeKernel(tmp_path / "cgroup", 1)
    kernel.cgroup("memory/box")
    kernel.cgroup("cpu,cpuacct/box")
    kernel.install(monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    return kernel


def test_v1_memory_and_swap_limits_keep_their_order_and_the_share_its_quota(v1):
    """v1 refuses memory above memory+swap, and memory+swap below memory: each change of the
    limit, up or down, moves them in the order the kernel takes."""
    group, why = cgroups.create("grader-c0-1", v1.root, v1.membership("box"))
    assert (group.path, group.version) == (v1.root / "memory/box/grader-c0-1", 1), why
    for gib in (0.25, 2, 0.5, 4):
        group.limit(int(gib * GIB))
        for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            assert int((group.path / name).read_text()) == int(gib * GIB), (gib, name)
    share, why = cgroups.cpu_share("grader-c0-1", 0.4, v1.root, v1.membership("box"))
    assert share == v1.root / "cpu,cpuacct/box/grader-c0-1", why
    assert (share / "cpu.cfs_quota_us").read_text() == "40000"
    group.remove()
    cgroups.remove_when_empty(share)
    assert not group.path.exists() and not share.exists()


def test_v1_needs_root(v1, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert cgroups.create("grader-c0-1", v1.root, v1.membership("box")) == (
        None,
        "cgroup v1 memory cgroups need root",
    )
    share = cgroups.cpu_share("grader-c0-1", 1.0, v1.root, v1.membership("box"))
    assert share == (None, "cgroup v1 cpu groups need root")
    assert _children(v1.root / "memory/box") == _children(v1.root / "cpu,cpuacct/box") == []
