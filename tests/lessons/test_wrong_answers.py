"""Typical wrong answers fail their tests with a message that names the mistake, and the judge,
comparing what the lesson's probes observe with the solution, rejects every one of them too."""

import ast
import re
from collections import Counter
from functools import cache
from pathlib import Path

import nbformat
import pytest
import yaml
from answer_runs import SEED, answer_cases, tried_by_lesson
from notebook_tools import checked_answers

from grader.cells import by_grade_id
from grader.course import solution_notebook
from grader.judging.verdict import verdict

WRONG_ANSWERS = Path(__file__).parent / "wrong_answers"


def _wrong_answers(lesson: str) -> list[dict]:
    path = WRONG_ANSWERS / f"{lesson}.yml"
    return yaml.safe_load(path.read_text()) if path.exists() else []


@pytest.fixture(scope="module")
def wrong_answer_runs(tmp_path_factory):
    """Each lesson's wrong answers tried once, on first use."""
    return tried_by_lesson(_wrong_answers, tmp_path_factory)


def _fragments(code: str) -> set[str]:
    """Pieces of code a message could hand over: method calls (`detach()`,
    `requires_grad_(False)`), dotted calls (`torch.no_grad()`), in-place updates (`p -=`),
    and short assignments (`w.grad = None`)."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            args = ", ".join(ast.unparse(a) for a in [*node.args, *node.keywords])
            found.add(f"{node.func.attr}({args})")
            found.add(ast.unparse(node))
        elif isinstance(node, ast.AugAssign):
            target = ast.unparse(node.target)  # `p -= lr * g` gives `p -=`
            found.add(target + ast.unparse(node)[len(target) :].partition("=")[0] + "=")
        elif isinstance(node, ast.Assign) and len(ast.unparse(node)) <= 30:
            found.add(ast.unparse(node))
    return {f for f in found if len(f) >= 4}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", ""))


@cache
def _cells(lesson: str) -> dict:
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    return {grade_id: cell.source for grade_id, cell in by_grade_id(nb).items()}


def handed_over(message: str, lesson: str, answer: dict) -> set[str]:
    """The code of the fix in `message`: pieces of the solution's answer cell that the wrong
    answer and the test cell do not have."""
    cells = _cells(lesson)
    fix = _fragments(cells[answer["cell"]]) - _fragments(answer["answer"])
    fix -= _fragments(cells[answer["test"]])
    flat = _flat(message)
    return {piece for piece in fix if _flat(piece) in flat}


def test_every_exercise_has_three_typical_wrong_answers(lesson):
    """Each answer cell a test checks is exercised by at least three wrong answers."""
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    answer_cells = checked_answers(nb)
    counts = Counter(a["cell"] for a in _wrong_answers(lesson))
    assert {cell: counts[cell] for cell in answer_cells if counts[cell] < 3} == {}


@pytest.mark.parametrize("case", answer_cases(_wrong_answers))
def test_wrong_answer_fails_with_the_explaining_message(case, wrong_answer_runs, reference_server):
    """The wrong answer makes its test cell raise CheckFailed with the explanation, no stderr,
    and the judge finds its probe's observations differ from the solution's."""
    lesson, index = case
    answer = _wrong_answers(lesson)[index]
    run = wrong_answer_runs(lesson)[index]
    assert "died" not in run, f"{answer['mistake']}: {run.get('died')}"
    expected = reference_server.observe(lesson, SEED)[answer["test"]]
    problem = verdict(expected, run["observed"])
    assert problem is not None, f"{answer['mistake']}: the judge accepts it"
    if "message" not in answer:  # the judge's alone to catch: the test cell cannot tell
        return
    outs = run["outputs"]
    errors = [o for o in outs if o["output_type"] == "error"]
    stderr = [o["text"] for o in outs if o["output_type"] == "stream" and o["name"] == "stderr"]
    assert stderr == [], f"{answer['mistake']}: the test cell wrote to stderr"
    assert errors, f"{answer['mistake']}: {answer['test']} passed"
    assert errors[0]["ename"] == "CheckFailed", (answer["mistake"], errors[0]["evalue"])
    assert answer["message"] in errors[0]["evalue"], (answer["mistake"], errors[0]["evalue"])
    assert handed_over(errors[0]["evalue"], lesson, answer) == set(), (
        f"{answer['mistake']}: the message hands over the code of the fix"
    )
