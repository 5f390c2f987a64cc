"""The instructor's limits reach the sandbox and hold for the whole submission.

Each limit is set on the command line, as an instructor types it, to a value other than the
default; the same submission graded under the default limits shows the limit is what acted.

The memory limit over a whole submission and the CPU share need cgroups: root on cgroup v1,
root or a delegated tree on v2 (`cgroup_host` reads what this machine offers). Where it offers
them, they must be on and act; where it does not (CI's user is not root), the protections line
must say that they are off, and why.
"""

from pathlib import Path

import pytest
from cgroup_host import Offer, offered
from integrity_tools import FULL_MARKS, LESSON, autograded, new_course, solution_with, submit

from grader.cli import main
from grader.commands.export import grade_rows
from grader.grading.results import scores_of
from grader.sandbox.outside import cgroups
from grader.sandbox.outside.isolation import detect_protections

pytestmark = pytest.mark.integration  # grades or serves whole courses through the real pipeline

SLEEP_16_S = "import time\ntime.sleep(16)\n"
TWO_SLEEPS = "import time\ntime.sleep(2)\n"
# Three processes of 250 MB each: each under a 0.5 GiB limit, together well over it.
SPREAD_OVER_PROCESSES = """\
import os, time
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = b"x" * (250 * 1024**2)
        time.sleep(4)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""
# A System V shared memory segment of 400 MB, every page touched: it belongs to no process.
SHARED_SEGMENT = """\
import ctypes, mmap
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
size = 400 * 1024**2
segment = libc.shmget(0, ctypes.c_size_t(size), 0o1600)
address = libc.shmat(segment, None, 0)
assert segment >= 0 and address != ctypes.c_void_p(-1).value, ctypes.get_errno()
for offset in range(0, size, mmap.PAGESIZE):
    ctypes.c_char.from_address(address + offset).value = b"x"
"""


def exercise_scores(course, student: str) -> dict:
    """The student's score per exercise, as the gradebook holds it."""
    header, rows = grade_rows(course)
    (row,) = [r for r in rows if (r["assignment"], r["student_id"]) == (LESSON, student)]
    return {column: row.get(column) for column in header[header.index("verdicts") + 1 :]}


def _grade(course, student: str, *flags: str):
    args = ["autograde", LESSON, "--course-dir", str(course.root), "--student", student, "--force"]
    assert main([*args, "--jobs", "1", *flags]) == 0
    (result,) = scores_of(course, LESSON, [student])
    return result


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course with one submission per limit to cross, each otherwise the solution."""
    course = new_course(tmp_path_factory.mktemp("limits") / "course")
    submit(course, "sleeps", solution_with(SLEEP_16_S))
    submit(course, "sleeps_twice", solution_with(TWO_SLEEPS, cells=2))
    submit(course, "spreads", solution_with(SPREAD_OVER_PROCESSES))
    submit(course, "shares", solution_with(SHARED_SEGMENT))
    return course


def test_a_stuck_cell_costs_its_exercise_as_in_stock_nbgrader(course):
    """A first answer cell sleeping 16 s passes under the default 30 s limit. Under 8 s it is
    interrupted (KeyboardInterrupt, as nbgrader's kernel is on a cell timeout) and the rest of
    the notebook runs: that exercise earns nothing, every other keeps its points, and stock
    nbgrader, given the same limit, gives the same score per exercise. (8 s, not less: on a
    busy machine stock nbgrader's first cell, which imports torch, can take several seconds.)"""
    assert _grade(course, "sleeps").score == FULL_MARKS
    limited = _grade(course, "sleeps", "--cell-timeout", "8")
    assert limited.outcome == "graded", limited.detail
    assert 0 < limited.score < FULL_MARKS
    nb = autograded(course, "sleeps")
    first = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    assert [o.get("ename") for o in first.outputs if o.output_type == "error"] == [
        "KeyboardInterrupt",
        "CellTimeoutError",  # what nbgrader's Execute adds on a timeout
    ]
    fast = exercise_scores(course, "sleeps")
    stock = _grade(course, "sleeps", "--cell-timeout", "8", "--engine", "nbgrader")
    assert (stock.score, exercise_scores(course, "sleeps")) == (limited.score, fast)


def test_notebook_timeout_reaches_the_sandbox(course):
    """Two cells of 2 s each pass one by one but overrun a notebook limit of 3 s."""
    assert _grade(course, "sleeps_twice").score == FULL_MARKS
    limited = _grade(course, "sleeps_twice", "--notebook-timeout", "3", "--cell-timeout", "10")
    assert limited.outcome == "timed out" and "the notebook time limit" in limited.detail


def _says_the_memory_cgroup_is_off(offer: Offer) -> None:
    """The protections line says memory is limited per process here, and why."""
    line = detect_protections()[0].describe()
    assert "memory limit per process" in line and "no memory cgroup (" in line, line
    assert offer.memory_why_not in line, line
    assert not offer.version or f"cgroup v{offer.version}" in line, line


def test_this_machine_limits_memory_over_the_whole_submission():
    """Where this machine offers a memory cgroup, the sandbox uses it, and the protections line
    names the hierarchy; where it does not, the line says the memory cgroup is off, and why."""
    offer = offered()
    protections = detect_protections()[0]
    line = protections.describe()
    assert protections.memory_cgroup == offer.memory, line
    assert protections.cgroup_version == offer.version, line
    if offer.memory:
        assert f"shared memory (cgroup v{offer.version})" in line
    else:
        _says_the_memory_cgroup_is_off(offer)


def test_memory_spread_over_processes_counts_together(course):
    """750 MB over three processes passes under 2 GiB and hits a limit of 0.5 GiB. Without a
    memory cgroup each process has the limit to itself: the line says so, and all pass."""
    offer = offered()
    assert _grade(course, "spreads").score == FULL_MARKS
    limited = _grade(course, "spreads", "--memory-gib", "0.5")
    if offer.memory:
        assert limited.outcome == "memory limit", limited.detail
    else:
        _says_the_memory_cgroup_is_off(offer)
        assert (limited.outcome, limited.score) == ("graded", FULL_MARKS), limited.detail


def test_shared_memory_segments_count_too(course):
    """A 400 MB System V segment passes under 2 GiB and hits a limit of 0.25 GiB. (Its first
    answer cell reaches the segment through ctypes: that exercise, 2 points, earns nothing and
    is flagged for review.) Without a memory cgroup the segment is no process's memory: the
    line says so, and it passes."""
    offer = offered()
    graded = _grade(course, "shares")
    assert (graded.score, graded.review) == (FULL_MARKS - 2, "make_leaf imports ctypes")
    limited = _grade(course, "shares", "--memory-gib", "0.25")
    if offer.memory:
        assert limited.outcome == "memory limit", limited.detail
    else:
        _says_the_memory_cgroup_is_off(offer)
        assert (limited.outcome, limited.score) == ("graded", FULL_MARKS - 2), limited.detail


# Four processes busy for 3 s of wall time: on two cores they would take both.
FOUR_BUSY_PROCESSES = """\
import os, time
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 8
        while time.monotonic() < end:
            pass
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""


def _throttled(share: Path, cores: float) -> bool:
    """Whether the CPU share `share` allows `cores` cores and has held its processes back (on
    v2 the quota is on the channel's cgroup around the attendant's, `share`)."""
    if offered().version == 2:
        share = share.parent
        quota, period = (share / "cpu.max").read_text().split()
    else:
        period, quota = ((share / f"cpu.cfs_{n}_us").read_text() for n in ("period", "quota"))
    assert int(quota) == int(int(period) * cores)
    stat = dict(line.split() for line in (share / "cpu.stat").read_text().splitlines())
    return int(stat["nr_throttled"]) > 0


def _says_there_is_no_cpu_share(offer: Offer) -> None:
    line = detect_protections()[0].describe()
    assert "at most one core" not in line and "no CPU share (" in line, line
    assert offer.cpu_why_not in line, line
    assert not offer.version or f"cgroup v{offer.version}" in line, line


def _shares_of(pids: list[int]) -> list[Path]:
    """The CPU shares the grading processes `pids` hold now (found in the cgroup tree: a
    worker's own sandbox is in its own process)."""
    folder = cgroups.hierarchy().folders.get("cpu")
    if folder is None:
        return []
    owned = [
        path
        for path in folder.glob("grader-c*")
        if path.name.endswith(tuple(f"-{p}" for p in pids))
    ]
    return sorted(path / cgroups.ATTENDANT if offered().version == 2 else path for path in owned)


def test_a_sandbox_gets_at_most_one_core_however_many_processes_run(tmp_path):
    """A submission's busy processes are throttled to the sandbox's CPU share (one core by
    default), so the other core stays for the submission another worker grades meanwhile."""
    from grader.grading.class_run import GradingSession, autograde
    from grader.sandbox.outside.isolation import Limits

    course = new_course(tmp_path / "course")
    submit(course, "busy", solution_with(FOUR_BUSY_PROCESSES))
    # A share of a quarter core and 8 s of spinning, so the four processes exceed it in some
    # period even on a machine whose other work leaves them a small part of a core: the
    # throttling shows however busy the machine is (a 0.4 share and 3 s did not, under load).
    offer = offered()
    limits = Limits(cell_seconds=40, notebook_seconds=120, cpu_cores=0.25)
    with GradingSession(limits, jobs=1) as session:
        (result,) = autograde(course, LESSON, ["busy"], session=session)
        assert (result.score, result.outcome) == (FULL_MARKS, "graded"), result.detail
        shares = session.warm.get().sandbox.own.cpus
        if offer.cpu:
            assert len(shares) == 1, detect_protections()[0].describe()
            assert _throttled(shares[0], 0.25) and Limits().cpu_cores == 1.0
        else:
            assert shares == []
            _says_there_is_no_cpu_share(offer)


def test_workers_sharing_a_sandbox_each_get_a_cpu_share_of_their_own(tmp_path):
    """Grading processes that share one sandbox template still get a CPU share each: both
    busy submissions, graded at once, are held to their own share. (They share one only where
    each submission has a user and a /proc of its own, as root; otherwise each has its own
    sandbox, and its own share all the same, where the machine offers CPU shares.)"""
    from grader.grading.class_run import GradingSession, autograde
    from grader.sandbox.outside.isolation import Limits

    offer = offered()
    protections = detect_protections()[0]
    course = new_course(tmp_path / "course", honest=None)
    for student in ("busy_a", "busy_b"):
        submit(course, student, solution_with(FOUR_BUSY_PROCESSES))
    limits = Limits(cell_seconds=40, notebook_seconds=120, cpu_cores=0.25)
    with GradingSession(limits, jobs=2) as session:
        results = autograde(course, LESSON, session=session)
        assert [(r.score, r.outcome) for r in results] == [(FULL_MARKS, "graded")] * 2
        shared = protections.shareable
        assert (session.sandbox is not None) == shared, protections.describe()
        if shared:
            shares = session.sandbox.cpus
        else:
            shares = _shares_of([worker.pid for worker in session._workers])
        if offer.cpu:
            assert len(shares) == 2 and all(_throttled(share, 0.25) for share in shares)
        else:
            assert shares == []
            _says_there_is_no_cpu_share(offer)
