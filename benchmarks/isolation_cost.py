"""What the per-submission isolation and the per-submission reference cost.

    .venv/bin/python benchmarks/isolation_cost.py [--rounds 30]

Prints, in milliseconds per submission (median of the rounds):
- a one-cell submission run in the sandbox with the per-submission namespaces, user and memory
  cgroup, and the same with them switched off (what the sandbox cost before they existed);
- the reference server's observations for one seed, per lesson, once its lesson process is warm.
"""

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.course import lessons  # noqa: E402
from grader.judging.reference import ReferenceServer  # noqa: E402
from grader.sandbox.outside.client import Sandbox, SandboxProcess  # noqa: E402
from grader.sandbox.outside.isolation import Limits  # noqa: E402

CELLS = [(0, "x = 1 + 1")]


def _median_ms(action, rounds: int) -> float:
    action()  # warm
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def sandbox_run_ms(isolated: bool, rounds: int) -> float:
    """Median time to run a one-cell submission, with or without per-submission isolation."""
    template = SandboxProcess(Limits())
    if not isolated:
        template.protections = replace(
            template.protections, per_submission=False, memory_cgroup=False
        )
    template.start()
    sandbox = Sandbox(Limits(), template.channels[0])
    try:
        return _median_ms(lambda: sandbox.run(CELLS, {}), rounds)
    finally:
        sandbox.stop()
        template.stop()


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    print(f"median of {rounds} rounds, milliseconds per submission")
    on, off = sandbox_run_ms(True, rounds), sandbox_run_ms(False, rounds)
    print(f"sandbox, one-cell submission, isolated per submission: {on:7.1f}")
    print(f"sandbox, one-cell submission, shared scratch (before):  {off:7.1f}")
    print(f"cost of the per-submission isolation:                   {on - off:7.1f}")
    server = ReferenceServer()
    seeds = iter(range(10**6))
    try:
        for lesson in lessons():
            ms = _median_ms(lambda lesson=lesson: server.observe(lesson, next(seeds)), rounds)
            print(f"reference for one seed, {lesson}: {ms:7.1f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
