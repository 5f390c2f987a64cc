"""Warm processes prepare their forks: huge pages for fewer page-table entries to copy, and
frozen objects that a child's garbage collection leaves alone."""

import gc
import mmap
import os
import resource

from grader import forking
from grader.course import lessons
from grader.judging.reference import ReferenceServer
from grader.sandbox.client import SandboxProcess
from grader.sandbox.isolation import Limits

MIB = 1024**2

SMAPS = """\
55d000000000-55d000800000 rw-p 00000000 00:00 0                          [heap]
Rss:                8192 kB
VmFlags: rd wr mr mw me ac
7f0000000000-7f0004000000 rw-p 00000000 00:00 0
Rss:                 512 kB
VmFlags: rd wr mr mw me ac
7f0004000000-7f0004800000 rw-p 00000000 00:00 0
Rss:                8192 kB
VmFlags: rd wr mr mw me nh ac
7f0005000000-7f0005400000 rw-p 00001000 08:01 42                         /usr/lib/libtorch.so
Rss:                4096 kB
VmFlags: rd wr mr mw me ac
7f0006000000-7f0006400000 r--p 00000000 00:00 0
Rss:                4096 kB
VmFlags: rd mr mw me ac
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                 132 kB
VmFlags: rd wr mr mw me gd ac
"""


def test_only_private_writable_anonymous_memory_is_considered(tmp_path):
    smaps = tmp_path / "smaps"
    smaps.write_text(SMAPS)
    heap, sparse, no_huge = forking.anonymous_mappings(str(smaps))
    assert (heap.start, heap.end, heap.resident, heap.no_huge) == (
        0x55D000000000,
        0x55D000800000,
        8 * MIB,
        False,
    )
    assert heap.dense() and heap.huge_span() == (heap.start, heap.end)
    assert not sparse.dense()  # collapsing it would fill 60 MiB nobody uses
    assert no_huge.no_huge


def test_a_span_is_cut_to_whole_huge_pages():
    mapping = forking.Mapping(3 * MIB, 9 * MIB + 5, 0, False)
    assert mapping.huge_span() == (4 * MIB, 8 * MIB)


def _in_a_child(action) -> str:
    """Run `action` in a fork of this process; its result, as text."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, str(action()).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as answer:
        return answer.read()


def _huge_page_bytes_of_a_fork() -> int:
    """How much of a fork of this process's memory is mapped by huge pages as it starts: each
    of those took the fork one page-table entry to copy instead of 512."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(read, 1)
        os._exit(0)
    try:
        return forking.huge_page_bytes(pid)
    finally:
        os.write(write, b"x")
        os.waitpid(pid, 0)


def test_a_fork_of_a_collapsed_process_shares_its_huge_pages():
    def compare():
        memory = mmap.mmap(-1, 256 * MIB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        memory.write(b"\1" * (256 * MIB))  # in memory, page by page
        before = _huge_page_bytes_of_a_fork()
        collapsed = forking.collapse_memory()
        return before, collapsed, _huge_page_bytes_of_a_fork()

    before, collapsed, after = eval(_in_a_child(compare))
    assert before < 64 * MIB  # the test process's own memory, as pytest left it
    assert collapsed >= 250 * MIB
    assert after - before >= 250 * MIB


def test_a_sparse_mapping_is_not_filled_in():
    def resident_after_collapse():
        memory = mmap.mmap(-1, 64 * MIB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        memory[0] = 1  # one page in memory
        forking.collapse_memory()
        start = next(m for m in forking.anonymous_mappings() if m.end - m.start == 64 * MIB)
        return start.resident

    assert int(_in_a_child(resident_after_collapse)) < 4 * MIB


def _faults_of_a_full_collection() -> int:
    def collect():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        gc.collect()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    return int(_in_a_child(collect))


def test_a_childs_collection_leaves_the_objects_made_before_the_fork_alone():
    def compare():
        objects = [{"n": [i]} for i in range(300_000)]  # noqa: F841 -- kept alive
        unfrozen = _faults_of_a_full_collection()
        forking.prepare_to_fork()
        return unfrozen, _faults_of_a_full_collection(), gc.get_freeze_count()

    unfrozen, frozen, count = eval(_in_a_child(compare))
    assert count >= 300_000
    assert unfrozen > 2000  # the collection wrote to every page of them, and so copied it
    assert frozen < unfrozen / 10


def _python_below(root: int) -> list[int]:
    """The Python processes below `root`, nearest first."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop(0)
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            todo += [int(child) for child in children.read().split()]
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if b"python" in cmdline.read().split(b"\0")[0]:
                found.append(pid)
    return found


def test_the_reference_server_forks_its_lessons_from_huge_pages():
    server = ReferenceServer()
    try:
        server.observe(lessons()[0], 1)
        assert forking.huge_page_bytes(server.process.pid) >= 64 * MIB
    finally:
        server.stop()


def test_the_sandbox_template_forks_its_servers_from_huge_pages():
    sandbox = SandboxProcess(Limits())
    sandbox.start()
    try:
        template = _python_below(sandbox.process.pid)[0]
        assert forking.huge_page_bytes(template) >= 64 * MIB
    finally:
        sandbox.stop()
