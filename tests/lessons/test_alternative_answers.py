"""Correct answers written in other styles than the solution earn full marks: their test cells
pass without errors or stderr, and the judge accepts what the lessons' probes observe."""

from pathlib import Path

import nbformat
import pytest
import yaml
from answer_runs import SEED, answer_cases, tried_by_lesson
from notebook_tools import checked_answers

from grader.cells import by_grade_id
from grader.course import solution_notebook
from grader.judging.verdict import verdict

ALTERNATIVE_ANSWERS = Path(__file__).parent / "alternative_answers"


def _alternative_answers(lesson: str) -> list[dict]:
    path = ALTERNATIVE_ANSWERS / f"{lesson}.yml"
    return yaml.safe_load(path.read_text()) if path.exists() else []


def test_every_exercise_has_two_alternative_answers(lesson):
    """Each answer cell a test checks is exercised by at least two alternative answers."""
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    cells = by_grade_id(nb)
    answer_cells = checked_answers(nb)
    answers = _alternative_answers(lesson)
    for answer in answers:
        assert set(answer) == {"cell", "test", "answer", "style"}, answer
        assert answer["cell"] in answer_cells and answer["test"] in cells, answer["style"]
    counts = {gid: sum(a["cell"] == gid for a in answers) for gid in answer_cells}
    assert {gid: n for gid, n in counts.items() if n < 2} == {}


@pytest.fixture(scope="module")
def alternative_answer_runs(tmp_path_factory):
    """Each lesson's alternative answers tried once, on first use."""
    return tried_by_lesson(_alternative_answers, tmp_path_factory)


@pytest.mark.parametrize("case", answer_cases(_alternative_answers))
def test_alternative_answer_earns_full_marks(case, alternative_answer_runs, reference_server):
    """The alternative answer passes its test cell, without stderr, and the judge accepts it."""
    lesson, index = case
    answer = _alternative_answers(lesson)[index]
    run = alternative_answer_runs(lesson)[index]
    assert "died" not in run, f"{answer['style']}: {run.get('died')}"
    outs = run["outputs"]
    errors = [f"{o['ename']}: {o['evalue']}" for o in outs if o["output_type"] == "error"]
    stderr = [o["text"] for o in outs if o["output_type"] == "stream" and o["name"] == "stderr"]
    assert not (errors or stderr), f"{answer['style']}: {answer['test']} failed: {errors or stderr}"
    expected = reference_server.observe(lesson, SEED)[answer["test"]]
    problem = verdict(expected, run["observed"])
    assert problem is None, f"{answer['style']}: the judge rejects it: {problem}"
