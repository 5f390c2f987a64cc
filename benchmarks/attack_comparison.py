"""Grade the attack corpus with stock nbgrader and with the fast engine, side by side.

    .venv/bin/python benchmarks/attack_comparison.py

Prints, for every attack in tests/integrity/attacks.yml, the score each engine gives out of the
lesson's maximum. Stock nbgrader has no sandbox, so only the attacks that forge a verdict and a
few harmless ones are graded with it; the others (memory, processes left running, planted files)
would harm this machine, and are graded with the fast engine only.
"""

import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from integrity_tools import LESSON, answered, attack_values, fill, new_course, submit  # noqa: E402

from grader.grading.class_run import autograde  # noqa: E402
from grader.judging.reference import ReferenceServer  # noqa: E402
from grader.sandbox.outside.isolation import Limits  # noqa: E402

# Stock nbgrader has no sandbox: only these attacks are safe to grade with it on this machine.
SAFE_FOR_STOCK = {"read_the_solutions", "read_the_gradebook", "write_outside", "network"}
SAFE_FOR_STOCK |= {"always_equal", "system_exit", "exit_interpreter"}


def main() -> None:
    """Grade every attack with both engines and print the table."""
    attacks = yaml.safe_load((ROOT / "tests/integrity/attacks.yml").read_text())
    limits = Limits(cell_seconds=6, notebook_seconds=10, memory_bytes=1024**3)
    server = ReferenceServer()
    recorded = server.observe(LESSON, 12345)
    server.stop()
    scores = {}
    for engine in ("nbgrader", "fast"):
        course = new_course(Path(tempfile.mkdtemp()) / engine)
        values = attack_values(course, "honest", 9, recorded)
        for attack in attacks:
            if engine == "nbgrader" and not (
                attack.get("forges") or attack["name"] in SAFE_FOR_STOCK
            ):
                continue
            submit(course, attack["name"], answered(fill(attack["code"], values)))
        for result in autograde(course, LESSON, engine=engine, jobs=1, limits=limits):
            scores[(engine, result.student)] = f"{result.score:g}/{result.max_score:g}"
        if (course.root / "canary.txt").exists():
            scores[(engine, "write_outside")] += " (wrote the canary)"
    print(f"{'attack':44} {'stock nbgrader':26} fast engine")
    for name in ["honest"] + [a["name"] for a in attacks]:
        stock = scores.get(("nbgrader", name), "not run: unsafe")
        print(f"{name:44} {stock:26} {scores[('fast', name)]}")


if __name__ == "__main__":
    main()
