"""The verdict on each test cell, decided in the grading process from data alone.

The submission's process reports what its probes observed (`grader.probing`); a clean process
reports what the solution gives on the same inputs (`grader.reference`). A test cell keeps its
points only if it passed in the submission's run and the two reports agree. Whatever the
submission patches in its own process, it cannot reach this comparison, nor the reference.
"""

import json
import math

from nbconvert.preprocessors import Preprocessor
from nbformat import from_dict
from nbgrader import utils
from traitlets import Bool

INTRO = "Checked again outside this notebook, on inputs chosen at grading time"


def verdict(reference: list, reported) -> str | None:
    """None when the reported observations match the reference's; otherwise what differs."""
    if not isinstance(reported, list):
        return "no observations came back from the submission"
    for position, (label, wanted, rule) in enumerate(reference):
        item = reported[position] if position < len(reported) else None
        if not isinstance(item, list) or len(item) < 2:
            return f"{label}: nothing was reported"
        if item[0] == "error" and len(item) == 2:
            return f"{label}: the code stopped with {_show(item[1], quoted=False)}"
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
        return type(got) in (int, float) and math.isclose(got, wanted, rel_tol=rtol, abs_tol=atol)
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


def _show(value, quoted: bool = True) -> str:
    text = json.dumps(value) if quoted else str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _is_test(cell) -> bool:
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def autograded_tests(nb) -> dict[int, str]:
    """The autograded test cells of a notebook: index -> grade id."""
    return {i: c.metadata.nbgrader["grade_id"] for i, c in enumerate(nb.cells) if _is_test(c)}


class JudgeVerdicts(Preprocessor):
    """After the run: a test cell whose observations differ from the reference's fails.

    Reads `resources["grader_references"]` (from `grader.reference`) and
    `resources["probe_reports"]` (from the sandbox); the failure is an error output, so
    nbgrader scores the cell 0 and the feedback says why.
    """

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        """Add a failure to every test cell that passed in the submission but not here."""
        references = (resources.get("grader_references") or {}).get("observations", {})
        reports = resources.get("probe_reports") or {}
        unjudged = []
        for index, grade_id in autograded_tests(nb).items():
            cell = nb.cells[index]
            if grade_id not in references:
                unjudged.append(grade_id)
                continue
            if any(out.output_type == "error" for out in cell.outputs):
                continue
            problem = verdict(references[grade_id], reports.get(grade_id))
            if problem is not None:
                cell.outputs.append(_failure(problem))
        resources["unjudged_tests"] = unjudged
        return nb, resources


def _failure(problem: str):
    return from_dict(
        {
            "output_type": "error",
            "ename": "CheckFailed",
            "evalue": f"{INTRO}: {problem}",
            "traceback": [f"CheckFailed: {INTRO}: {problem}"],
        }
    )
