"""Warm processes prepare their forks: a child's garbage collection leaves the objects made
before the fork alone, so it does not copy their pages."""

import gc
import resource

from forked import in_a_fork

from grader import forking
from grader.sandbox.outside.client import Sandbox
from grader.sandbox.outside.isolation import Limits


def _faults_of_a_full_collection() -> int:
    def collect():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        gc.collect()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    return in_a_fork(collect)


def test_a_childs_collection_leaves_the_objects_made_before_the_fork_alone():
    def compare():
        objects = [{"n": [i]} for i in range(300_000)]  # noqa: F841 -- kept alive
        unfrozen = _faults_of_a_full_collection()
        forking.prepare_to_fork()
        return unfrozen, _faults_of_a_full_collection(), gc.get_freeze_count()

    unfrozen, frozen, count = in_a_fork(compare)
    assert count >= 300_000
    assert unfrozen > 2000  # the collection wrote to every page of them, and so copied it
    assert frozen < unfrozen / 10


def test_a_submission_starts_with_the_templates_objects_frozen():
    sandbox = Sandbox(Limits())
    try:
        report = sandbox.run([(0, "import gc\nprint(gc.get_freeze_count() > 100_000)")], {})
    finally:
        sandbox.stop()
    assert report.cells[0]["outputs"][0]["text"] == "True\n"


def _huge_kib() -> int:
    """This process's anonymous memory mapped by huge pages (one entry per 2 MiB)."""
    with open("/proc/self/smaps_rollup") as rollup:
        return next(int(line.split()[1]) for line in rollup if line.startswith("AnonHugePages:"))


def test_a_fork_maps_the_memory_its_parent_backed_with_huge_pages_by_huge_pages():
    """After the warm process backs its memory with huge pages, a fork of it maps the same
    objects by 2 MiB entries (fewer to copy at the fork, fewer to tear down at its exit), and
    finds them as they were."""

    def compare():
        objects = [[i] * 4 for i in range(1_500_000)]  # some 150 MiB, as a warm process has
        before = in_a_fork(_huge_kib)
        collapsed = forking.back_with_huge_pages()
        after = in_a_fork(_huge_kib)
        intact = in_a_fork(lambda: sum(len(o) for o in objects) == 4 * len(objects))
        return before, collapsed, after, intact

    before, collapsed, after, intact = in_a_fork(compare)
    assert collapsed >= 100 * 1024**2 and intact
    assert after >= before + 100 * 1024


def test_imports_and_warming_up_run_with_no_collection_and_the_collector_comes_back():
    """Each full collection while torch is imported visits every object made so far; paused, a
    block that makes cycles runs none (the same block unpaused runs many), and the collector is
    as it was after it (off stays off)."""

    def count():
        collections = []
        gc.callbacks.append(lambda phase, info: collections.append(phase == "start"))

        def make_cycles():
            cycles = [[] for _ in range(50_000)]
            for cycle in cycles:
                cycle.append(cycle)
            return sum(collections)

        unpaused = make_cycles()
        collections.clear()
        with forking.collector_paused():
            paused = make_cycles()
        after_on = gc.isenabled()
        gc.disable()
        with forking.collector_paused():
            pass
        return unpaused, paused, after_on, gc.isenabled()

    unpaused, paused, after_on, after_off = in_a_fork(count)
    assert unpaused > 10 and paused == 0
    assert after_on and not after_off
