"""Grade a generated class with stock `nbgrader autograde` and with the fast engine.

    .venv/bin/python benchmarks/grading_speed.py [--stock-students 4] [--sizes 20 100 500]

Builds a class from the bundled example class (full, partial and blank work alike), grades the
same submissions with both engines in this run (every lesson in one call, as `grader
autograde --all` does), and prints seconds per notebook, the ratio, the seconds until the first
submission is graded and where they went (its steps, and the call's start before it was taken
up), the peak memory of the whole grading process tree, whether every grade is
identical, and the seconds per notebook of each step (start-up, lesson prefix, fork, student
cells, probes, clean, reference, judge, nbgrader steps, gradebook, bookkeeping). A step's figure
is the wall-clock time the grading processes spent in it, summed over them: with two of them at
work, the steps add up to about twice the run's own seconds. Then it grades classes of growing
size with the fast engine.
"""

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.commands.export import grade_rows  # noqa: E402
from grader.commands.init import init_course  # noqa: E402
from grader.course import EXAMPLE_CLASS, Course, lessons  # noqa: E402
from grader.grading.class_run import GradingSession, grade_submissions  # noqa: E402
from grader.sandbox.outside.isolation import Limits  # noqa: E402
from grader.timings import Timings  # noqa: E402

EXAMPLES = sorted(p.name for p in (EXAMPLE_CLASS / "submitted").iterdir())


def build_class(folder: Path, students: int, chosen: list[str]) -> Path:
    """A course with `students` students, each a copy of one example student, in every lesson
    `chosen`."""
    course = init_course(folder)
    for i in range(students):
        example = EXAMPLES[i % len(EXAMPLES)]
        for lesson in chosen:
            source = EXAMPLE_CLASS / "submitted" / example / lesson
            shutil.copytree(source, course.root / "submitted" / f"{example}{i:04d}" / lesson)
    return course


class PeakMemory:
    """Samples the proportional set size (PSS) of this process and all its descendants once a
    second: reading it walks every process's page tables, about 57 ms of CPU for the fast
    engine's thirteen processes, so that twice a second took 6 % of the two cores the engine
    being measured runs on (and ten times a second, a third). Grading's memory is a plateau,
    which one sample a second finds."""

    INTERVAL = 1.0

    def __init__(self):
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        while not self._stop.wait(self.INTERVAL):
            self.peak = max(self.peak, sum(_pss(pid) for pid in _tree(os.getpid())))


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class FirstGraded(GradingSession):
    """A grading session that notes when its first submission is graded, and that report."""

    first: float | None = None
    first_report = None

    def grade(self, tasks, bar):
        """Grade as a session does, noting the time of the first submission done."""
        update = bar.update

        def noted(*args, **kwargs):
            self.first = self.first or time.perf_counter()
            return update(*args, **kwargs)

        bar.update = noted
        reports = super().grade(tasks, bar)  # in the order they were done
        self.first_report = self.first_report or (reports[0] if reports else None)
        return reports


def grade_all(
    course: Course, chosen: list[str], engine: str, jobs: int | None
) -> tuple[float, Timings, int, Timings]:
    """Grade every lesson `chosen` in one call; return (seconds, the first submission's steps
    with `FIRST_WAIT` for the time before it was taken up, peak bytes, seconds per step summed
    over the submissions)."""
    with PeakMemory() as memory, FirstGraded(Limits(), jobs) as session:
        started = time.perf_counter()
        reports = grade_submissions(course, chosen, engine=engine, force=True, session=session)
        seconds = time.perf_counter() - started
    steps = Timings()
    for report in reports:
        for name, spent in report.timings.items():
            steps.add(name, spent)
    spent = session.first_report.timings if session.first_report else {}
    latency = (session.first or time.perf_counter()) - started
    first = Timings({FIRST_WAIT: max(0.0, latency - sum(spent.values())), **spent})
    return seconds, first, memory.peak, steps


FIRST_WAIT = "before grading it"  # the call's start: imports, the gradebook, the workers


def first_graded(first: Timings) -> str:
    """When the first submission was graded, and where those seconds went."""
    split = ", ".join(f"{name} {spent:.1f}" for name, spent in first.items() if spent >= 0.05)
    return f"first graded after {sum(first.values()):.1f} s ({split})"


def print_steps(steps: Timings, notebooks: int) -> None:
    """Each step's seconds per notebook (summed over every worker, so they add up to more
    than the wall clock when several workers grade at once)."""
    for name, spent in sorted(steps.items(), key=lambda item: -item[1]):
        print(f"    {name:15s} {spent / notebooks:.3f} s/notebook")


def grades(course: Course) -> dict:
    """(lesson, student, column) -> value for every score column of the export."""
    header, rows = grade_rows(course)
    columns = ["score", *header[header.index("verdicts") + 1 :]]  # grades, not review notes
    return {
        (r["assignment"], r["student_id"], c): r.get(c)
        for r in rows
        for c in columns
        if r.get("outcome") != "no submission"
    }


def main() -> None:
    """Run the comparison, then the scaling series, printing figures as they come."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stock-students", type=int, default=4)
    parser.add_argument("--sizes", type=int, nargs="*", default=[20, 100, 500])
    parser.add_argument("--jobs", type=int, default=None, help="fast engine jobs (default: cores)")
    parser.add_argument("--lessons", nargs="*", choices=lessons(), help="default: every lesson")
    args = parser.parse_args()
    chosen = args.lessons or lessons()
    work = Path(tempfile.mkdtemp(prefix="grading-speed-"))
    notebooks = args.stock_students * len(chosen)
    print(
        f"machine: {os.cpu_count()} cores; class of {args.stock_students} students x "
        f"{len(chosen)} lessons = {notebooks} notebooks"
    )
    stock_course = build_class(work / "stock", args.stock_students, chosen)
    fast_course = build_class(work / "fast", args.stock_students, chosen)
    stock_s, stock_first, stock_mem, stock_steps = grade_all(stock_course, chosen, "nbgrader", 1)
    fast_s, fast_first, fast_mem, fast_steps = grade_all(fast_course, chosen, "fast", args.jobs)
    same = grades(stock_course) == grades(fast_course)
    print(
        f"stock nbgrader autograde: {stock_s / notebooks:.3f} s/notebook, "
        f"peak {stock_mem / 1e9:.2f} GB, {first_graded(stock_first)}"
    )
    print(
        f"fast engine:              {fast_s / notebooks:.3f} s/notebook, "
        f"peak {fast_mem / 1e9:.2f} GB, {first_graded(fast_first)}"
    )
    print(f"speed-up: {stock_s / fast_s:.1f}x; all grades identical: {same}")
    print("  stock, per step:")
    print_steps(stock_steps, notebooks)
    print("  fast, per step:")
    print_steps(fast_steps, notebooks)
    for size in args.sizes:
        course = build_class(work / f"n{size}", size, chosen)
        seconds, first, peak, steps = grade_all(course, chosen, "fast", args.jobs)
        count = size * len(chosen)
        print(
            f"fast engine, {size:4d} students ({count:5d} notebooks): {seconds:7.1f} s, "
            f"{seconds / count:.3f} s/notebook ({stock_s / notebooks / (seconds / count):.1f}x "
            f"stock), peak {peak / 1e9:.2f} GB, {first_graded(first)}"
        )
        print_steps(steps, count)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
