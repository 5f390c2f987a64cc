"""Grade the attack corpus with stock nbgrader and with the fast engine, side by side.

    .venv/bin/python benchmarks/attack_comparison.py

Prints, for every attack in tests/integrity/attacks.yml, the score each engine gives out of the
lesson's maximum. Attacks that would harm this machine under stock nbgrader (no memory or
process limit there) are graded with the fast engine only.
"""

import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from integrity_tools import LESSON, answered, new_course, submit  # noqa: E402

from grader.course import solution_notebook  # noqa: E402
from grader.grading import autograde  # noqa: E402
from grader.sandbox import Limits  # noqa: E402

UNSAFE_FOR_STOCK = {"fork_bomb", "exhaust_memory", "kill_the_grader"}


def main() -> None:
    """Grade every attack with both engines and print the table."""
    attacks = yaml.safe_load((ROOT / "tests/integrity/attacks.yml").read_text())
    limits = Limits(cell_seconds=6, notebook_seconds=10, memory_bytes=1024**3)
    scores = {}
    for engine in ("nbgrader", "fast"):
        course = new_course(Path(tempfile.mkdtemp()) / engine)
        fill = {
            "canary": course / "canary.txt",
            "other_submission": course / "submitted/honest" / LESSON / f"{LESSON}.ipynb",
            "solution": solution_notebook(LESSON),
            "gradebook": course / "gradebook.db",
            "host": "127.0.0.1",
            "port": 9,
        }
        for attack in attacks:
            if engine == "nbgrader" and attack["name"] in UNSAFE_FOR_STOCK:
                continue
            code = attack["code"]
            for key, value in fill.items():
                code = code.replace("{" + key + "}", str(value))
            submit(course, attack["name"], answered(code))
        for result in autograde(course, LESSON, engine=engine, jobs=1, limits=limits):
            scores[(engine, result.student)] = f"{result.score:g}/{result.max_score:g}"
        if (course / "canary.txt").exists():
            scores[(engine, "write_outside")] += " (wrote the canary)"
    print(f"{'attack':28} {'stock nbgrader':22} fast engine")
    for name in ["honest"] + [a["name"] for a in attacks]:
        stock = scores.get(("nbgrader", name), "not run (unsafe)")
        print(f"{name:28} {stock:22} {scores[('fast', name)]}")


if __name__ == "__main__":
    main()
