"""The verdict on each test cell, decided in the grading process from data alone.

The submission's process reports what its probes observed (`grader.probing`); the reference
server reports what the solution gives on the same inputs (`grader.judging.reference`). A test cell
keeps its points only if it passed in the submission's run and the two reports agree, and the
score is written from here, not read back from outputs the submission could shape. Whatever the
submission patches in its own process, it cannot reach this comparison, nor the reference.
"""

import json
import math
from dataclasses import dataclass

from nbformat import from_dict
from nbgrader import utils

from grader.cells import autograded_tests

INTRO = "Checked again outside this notebook, on inputs chosen at grading time"
ADVICE = (
    "This test passed in your notebook, so your answer may fit only the visible example (a "
    "number or tensor written into the code, or a special case) or, where the exercise asks for "
    "autograd, not take its result from autograd. Make it compute the result from its inputs as "
    "the exercise says, so that it works for any input it allows, then run the test again."
)


@dataclass(frozen=True)
class Verdict:
    """One test cell's score, and why it earned nothing when it did."""

    points: float
    problem: str | None = None


def verdict(reference: list, reported) -> str | None:
    """None when the reported observations match the reference's; otherwise what differs.

    `reported` is whatever the submission sent: any JSON value gets an answer, never an error.
    """
    try:
        return _compare(reference, reported)
    except (ArithmeticError, ValueError, TypeError, RecursionError):
        return "the report could not be read"


def _compare(reference: list, reported) -> str | None:
    if not isinstance(reported, list):
        return "no observations came back from the submission"
    for position, (label, wanted, rule) in enumerate(reference):
        item = reported[position] if position < len(reported) else None
        if not isinstance(item, list) or len(item) < 2:
            return f"{label}: nothing was reported"
        if item[0] == "error" and len(item) == 2:
            return f"{label}: the code stopped with {_show(item[1])}"
        if item[0] != label:
            return f"{label}: {_show(item[0])} was reported instead"
        if not _matches(wanted, item[1], rule):
            return f"{label}: {_show(item[1])} is not what a correct answer gives"
    if len(reported) > len(reference):
        return "more observations came back than the test asks for"
    return None


def _matches(wanted, got, rule: dict) -> bool:
    if "one_of" in rule:
        return isinstance(got, str) and got in rule["one_of"]
    return _same(wanted, got, rule["rtol"], rule["atol"])


def _same(wanted, got, rtol: float, atol: float) -> bool:
    """Structural equality, numbers within tolerance; walks `wanted`, which is trusted."""
    if wanted is None or isinstance(wanted, bool | str):
        return type(got) is type(wanted) and got == wanted
    if isinstance(wanted, int):
        return type(got) is int and got == wanted
    if isinstance(wanted, float):
        if type(got) not in (int, float):
            return False
        try:
            return math.isclose(float(got), wanted, rel_tol=rtol, abs_tol=atol)
        except OverflowError:  # a whole number too large for a float is not close to one
            return False
    if isinstance(wanted, list):
        return (
            isinstance(got, list)
            and len(got) == len(wanted)
            and all(_same(w, g, rtol, atol) for w, g in zip(wanted, got, strict=True))
        )
    return (
        isinstance(got, dict)
        and set(got) == set(wanted)
        and got["shape"] == wanted["shape"]
        and _same(wanted["values"], got["values"], rtol, atol)
    )


def _show(value) -> str:
    """A reported value as JSON: quoted and escaped, so it cannot pose as the grader's text."""
    try:
        text = json.dumps(value)
    except ValueError:
        text = "a value too large to show"
    return text if len(text) <= 120 else text[:117] + "..."


def judge_tests(nb, references: dict[str, list], reports: dict) -> dict[str, Verdict]:
    """Score every test cell from the probes' observations, and make its outputs say so.

    A test earns its points only if its cell ran without an error (or stderr) and what the
    probe observed in the submission matches the reference. The cell's outputs are set so that
    they agree with the score: a result the submission made the cell return is shown as a plain
    display (nbgrader would read it as partial credit), and a failure the cell does not show
    itself is added as the judge's explanation.
    """
    verdicts = {}
    for index, grade_id in autograded_tests(nb).items():
        cell = nb.cells[index]
        for out in cell.outputs:
            if out.output_type == "execute_result":
                out.output_type = "display_data"
                del out["execution_count"]
        inside, max_points = utils.determine_grade(cell)
        if grade_id not in references:
            problem = "this test has no probe, so it cannot be judged (the instructor must add one)"
        elif inside != max_points:
            verdicts[grade_id] = Verdict(0.0, "the test cell failed")
            continue
        else:
            problem = verdict(references[grade_id], reports.get(grade_id))
        if problem is None:
            verdicts[grade_id] = Verdict(max_points)
        else:
            verdicts[grade_id] = Verdict(0.0, problem)
            advice = "" if grade_id not in references else f". {ADVICE}"
            cell.outputs.append(_failure(problem + advice))
    return verdicts


def _failure(problem: str):
    return from_dict(
        {
            "output_type": "error",
            "ename": "CheckFailed",
            "evalue": f"{INTRO}: {problem}",
            "traceback": [f"CheckFailed: {INTRO}: {problem}"],
        }
    )
