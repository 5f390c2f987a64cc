"""Correct answers written in other styles than the solution earn full marks: their test cells
pass without errors or stderr, and the judge accepts what the lessons' probes observe."""

import copy
from pathlib import Path

import nbformat
import pytest
import yaml
from test_wrong_answers import SEED, _cells_by_grade_id, _failures_after, _rounds

from grader.course import lessons, solution_notebook
from grader.judge import verdict

ALTERNATIVE_ANSWERS = Path(__file__).parent / "alternative_answers"


def _alternative_answers(lesson: str) -> list[dict]:
    path = ALTERNATIVE_ANSWERS / f"{lesson}.yml"
    return yaml.safe_load(path.read_text()) if path.exists() else []


def test_every_exercise_has_two_alternative_answers(lesson):
    """Each answer cell of the lesson is exercised by at least two alternative answers."""
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    cells = _cells_by_grade_id(nb)
    answer_cells = {gid for gid, c in cells.items() if c.metadata["nbgrader"]["solution"]}
    answers = _alternative_answers(lesson)
    for answer in answers:
        assert set(answer) == {"cell", "test", "answer", "style"}, answer
        assert answer["cell"] in answer_cells and answer["test"] in cells, answer["style"]
    counts = {gid: sum(a["cell"] == gid for a in answers) for gid in answer_cells}
    assert {gid: n for gid, n in counts.items() if n < 2} == {}


@pytest.mark.parametrize(
    "lesson_round",
    [
        pytest.param((lesson, i), id=f"{lesson}-{i}")
        for lesson in lessons()
        for i in range(len(_rounds(_alternative_answers(lesson))))
    ],
)
def test_alternative_answers_earn_full_marks(lesson_round, tmp_path, reference_server):
    """Each alternative answer passes its test cell, without stderr, and the judge accepts it."""
    lesson, index = lesson_round
    alternatives = _rounds(_alternative_answers(lesson))[index]
    outputs, observed = _failures_after(lesson, copy.deepcopy(alternatives), tmp_path)
    expected = reference_server.observe(lesson, SEED)
    problems = []
    for answer in alternatives:
        outs = outputs[answer["test"]]
        errors = [f"{o.ename}: {o.evalue}" for o in outs if o.output_type == "error"]
        stderr = [o.text for o in outs if o.output_type == "stream" and o.name == "stderr"]
        if errors or stderr:
            problems.append(f"{answer['style']}: {answer['test']} failed: {errors or stderr}")
        problem = verdict(expected[answer["test"]], observed[answer["test"]])
        if problem is not None:
            problems.append(f"{answer['style']}: the judge rejects it: {problem}")
    assert not problems, "\n".join(problems)
