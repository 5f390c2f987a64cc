"""A sandbox's memory cgroup takes any limit it is given, and is gone once the sandbox stops.

These use this machine's kernel, where it offers a memory cgroup (`cgroup_host`: root on v1,
root or a delegated tree on v2); where it does not, the grader must refuse and say why (each
test then ends there). `test_cgroup_trees.py` checks each hierarchy's logic on a fake tree.
"""

import os
import secrets
import signal
import time

import pytest
from cgroup_host import offered

from grader.sandbox.outside import cgroups


@pytest.fixture
def group():
    """The host's memory cgroup for a sandbox channel, or None once the grader has refused one
    where the host offers none, with the host's reason."""
    offer = offered()
    made, why = cgroups.create(f"grader-test-{secrets.token_hex(4)}-{os.getpid()}")
    if not offer.memory:
        assert made is None and offer.memory_why_not in why, why
        assert not offer.version or why.startswith(f"cgroup v{offer.version}"), why
        yield None
        return
    assert made is not None and made.version == offer.version, why
    yield made
    made.remove()
    assert not made.path.exists()


def _limits(group) -> list[int]:
    names = ["memory.max"] if group.version == 2 else ["memory.limit_in_bytes"]
    if group.version == 1 and (group.path / "memory.memsw.limit_in_bytes").exists():
        names.append("memory.memsw.limit_in_bytes")
    return [int((group.path / name).read_text()) for name in names]


def test_a_limit_can_be_lowered_and_raised_again(group):
    """v1 refuses memory above memory+swap: raising must move that one first."""
    if group is None:  # refused, with the reason the host gives (the fixture checked)
        return
    for gib in (0.25, 2, 0.5, 4):
        group.limit(int(gib * 1024**3))
        assert set(_limits(group)) == {int(gib * 1024**3)}, gib


def test_a_cgroup_is_removed_once_its_killed_processes_have_left(group):
    """Processes killed just before still hold the cgroup while they end: removal waits."""
    if group is None:  # refused, with the reason the host gives (the fixture checked)
        return
    children = []
    for _ in range(3):
        ready_read, ready_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(os.open(group.path / "cgroup.procs", os.O_WRONLY), b"0")
            block = b"x" * (200 * 1024**2)  # takes the kernel a while to free
            os.write(ready_write, b"1")
            time.sleep(60)
            os._exit(len(block) and 0)
        assert os.read(ready_read, 1) == b"1"
        children.append(pid)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    group.remove()
    assert not group.path.exists()
    for pid in children:
        os.waitpid(pid, 0)


def test_waiting_for_memory_left_charged_ends_when_it_is_given_back(group):
    """Shared memory outlives the process that filled it: the wait ends only once it is freed,
    and gives up (saying so) when it never is."""
    if group is None:  # refused, with the reason the host gives (the fixture checked)
        return
    path = "/dev/shm/grader-test-held-" + secrets.token_hex(4)
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(os.open(group.path / "cgroup.procs", os.O_WRONLY), b"0")
        with open(path, "wb") as held:  # tmpfs: charged here, and no process's memory
            held.write(b"x" * (64 * 1024**2))
        os.write(ready_write, b"1")
        os._exit(0)
    assert os.read(ready_read, 1) == b"1"
    os.waitpid(pid, 0)
    try:
        assert group.held() >= 64 * 1024**2
        assert group.wait_until_below(32 * 1024**2, seconds=0.2) is False
        started = time.monotonic()
        remover = os.fork()
        if remover == 0:
            time.sleep(0.3)
            os.unlink(path)
            os._exit(0)
        assert group.wait_until_below(32 * 1024**2, seconds=5) is True
        assert time.monotonic() - started >= 0.25  # it waited for the memory to go
        os.waitpid(remover, 0)
    finally:
        if os.path.exists(path):
            os.unlink(path)
