"""The verdict on each test cell, decided in the grading process from data alone.

The submission's process reports what its probes observed (`grader.probing`); the reference
server reports what the solution gives on the same inputs (`grader.judging.reference`). A test cell
keeps its points only if it passed in the submission's run and the two reports agree, and the
score is written from here, not read back from outputs the submission could shape. Whatever the
submission patches in its own process, it cannot reach this comparison, nor the reference.
"""

import builtins
import math
from dataclasses import dataclass

from nbformat import from_dict
from nbgrader import utils

from grader.cells import autograded_tests
from grader.judging import node_listings

INTRO = "Checked again outside this notebook, on inputs chosen at grading time"
SOURCE_INTRO = "Read from your code at grading time"
VERDICT_KEY = "grader_verdict"  # a test cell's metadata: the judge's explanation, or None
TASK_KEY = "grader_own_task"  # a test cell's metadata: the student's own task it was graded on
CELL_FAILED = (
    "This test did not pass when your notebook ran at grading time (it stopped with an error or "
    "wrote to stderr): run it in your notebook to see why."
)
# Error types named in an explanation: a name the submission picked could carry any text.
TORCH_ERRORS = frozenset({"LinAlgError", "OutOfMemoryError", "DeferredCudaCallError"})
BUILTIN_ERRORS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)
HOW_WORDS = ("autograd", "hook", "optimizer")  # observations of how an answer works
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
    """What differs, in words chosen here: the reference's label and the kind of problem only.
    How the answer works (whether it called autograd, registered a hook, stepped an optimizer)
    is named first: values that differ because of it are explained by it."""
    if not isinstance(reported, list):
        return "no observations came back from the submission"
    differences = []
    for position, (label, wanted, rule) in enumerate(reference):
        item = reported[position] if position < len(reported) else None
        if not isinstance(item, list) or len(item) < 2:
            return f"{label}: nothing was reported"
        if item[0] == "error" and len(item) == 2:
            return f"{label}: the code stopped with {_error_kind(item[1])}"
        if item[0] != label:
            return f"{label}: something else was reported in its place"
        if "nodes" in rule:
            listed = node_listings.problem(wanted, item[1], rule)
            differences += [f"{label}: {listed}"] if listed else []
        elif not _matches(wanted, item[1], rule):
            differences.append(_difference(label, wanted))
    if len(reported) > len(reference):
        return "more observations came back than the test asks for"
    how = [text for text in differences if any(word in text for word in HOW_WORDS)]
    return (how + differences)[0] if differences else None


def _difference(label: str, wanted) -> str:
    if wanted is True and any(word in label for word in HOW_WORDS):
        return f"{label}: no, but the exercise asks for it, and a correct answer does"
    return f"{label}: the value differs from what a correct answer gives"


def _matches(wanted, got, rule: dict) -> bool:
    if rule.get("drawn"):
        return _same_draws(wanted, got)
    if "one_of" in rule:
        return isinstance(got, str) and got in rule["one_of"]
    return _same(wanted, got, rule["rtol"], rule["atol"])


def _same_draws(wanted: list, got: list) -> bool:
    """Every draw the submission's run answered has the settings the reference's run drew it
    with (a run stopped early drew less, and its values tell)."""
    settings = dict(map(tuple, wanted))
    return all(index not in settings or settings[index] == asked for index, asked in got)


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


def _error_kind(message) -> str:
    """The error's type when it is one Python or torch defines, else just "an error"."""
    name = message.split(":", 1)[0] if isinstance(message, str) else ""
    return name if name in BUILTIN_ERRORS | TORCH_ERRORS else "an error"


def judge_tests(
    nb,
    references: dict[str, list],
    reports: dict,
    read: dict[str, str] | None = None,
    *,
    judged: bool = True,
    read_first: frozenset[str] = frozenset(),
) -> dict[str, Verdict]:
    """Score every test cell from the probes' observations, and make its outputs say so.

    A test earns its points only if its cell ran without an error (or stderr), what the
    probe observed in the submission matches the reference, and the answer's source breaks no
    rule on how it is worked out (`read`: why, by grade id; `grader.judging.how`). The cell's
    outputs are set so that they agree with the score: a result the submission made the cell
    return is shown as a plain display (nbgrader would read it as partial credit), and a failure
    the cell does not show itself is added as the judge's explanation. That explanation, worded
    here from the reference's labels alone, is also kept in the cell's metadata (VERDICT_KEY)
    for the feedback page, which shows no output of the run.

    A lesson with no probes at all (`judged=False`) is scored as stock nbgrader scores it: each
    test cell by its own outputs in the submission's process (no error: its points).

    For the tests in `read_first` (those of a task of the student's own), what the reading found
    is said before a failed cell: an answer to another student's task fails the visible test
    too, and the reading says why.
    """
    verdicts, read = {}, read or {}
    for index, grade_id in autograded_tests(nb).items():
        cell = nb.cells[index]
        cell.metadata[VERDICT_KEY] = None  # set here only: a submitted value never stands
        cell.metadata.pop(TASK_KEY, None)  # likewise, set by the grader after judging
        if not judged:  # as nbgrader: a number the cell returns is partial credit
            inside, max_points = utils.determine_grade(cell)
            verdicts[grade_id] = Verdict(inside, None if inside == max_points else "failed")
            cell.metadata[VERDICT_KEY] = None if inside == max_points else CELL_FAILED
            continue
        for out in cell.outputs:
            if out.output_type == "execute_result":
                out.output_type = "display_data"
                del out["execution_count"]
        inside, max_points = utils.determine_grade(cell)
        intro, advice = INTRO, ""
        if grade_id not in references:
            problem = "this test has no probe, so it cannot be judged (the instructor must add one)"
        elif grade_id in read and grade_id in read_first:
            intro, problem = SOURCE_INTRO, read[grade_id]
        elif inside != max_points:
            verdicts[grade_id] = Verdict(0.0, "the test cell failed")
            cell.metadata[VERDICT_KEY] = CELL_FAILED
            continue
        elif grade_id in read:
            intro, problem = SOURCE_INTRO, read[grade_id]
        else:
            problem = verdict(references[grade_id], reports.get(grade_id))
            advice = f". {ADVICE}"
        if problem is None:
            verdicts[grade_id] = Verdict(max_points)
        else:
            verdicts[grade_id] = Verdict(0.0, problem)
            cell.outputs.append(_failure(f"{intro}: {problem}{advice}"))
            cell.metadata[VERDICT_KEY] = f"{intro}: {problem}{advice}"
    return verdicts


def _failure(explanation: str):
    return from_dict(
        {
            "output_type": "error",
            "ename": "CheckFailed",
            "evalue": explanation,
            "traceback": [f"CheckFailed: {explanation}"],
        }
    )
