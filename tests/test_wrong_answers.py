"""Typical wrong answers fail their tests with a message that names the mistake."""

import copy
from pathlib import Path

import nbformat
import pytest
import yaml
from notebook_tools import execute

from grader.course import lessons, solution_notebook

WRONG_ANSWERS = Path(__file__).parent / "wrong_answers"


def _wrong_answers(lesson: str) -> list[dict]:
    path = WRONG_ANSWERS / f"{lesson}.yml"
    return yaml.safe_load(path.read_text()) if path.exists() else []


def _cells_by_grade_id(nb) -> dict:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}


def _rounds(answers: list[dict]) -> list[list[dict]]:
    """Group the wrong answers so that each run replaces any answer cell at most once."""
    rounds: list[list[dict]] = []
    for answer in answers:
        free = next((r for r in rounds if all(a["cell"] != answer["cell"] for a in r)), None)
        if free is None:
            rounds.append(free := [])
        free.append(answer)
    return rounds


def _failures_after(lesson: str, wrong: list[dict], tmp_path: Path) -> dict[str, list]:
    """Run the solution with `wrong` answers put in; return each test cell's error outputs."""
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    cells = _cells_by_grade_id(nb)
    for answer in wrong:
        cells[answer["cell"]].source = answer["answer"]
    path = tmp_path / f"{lesson}.ipynb"
    nbformat.write(nb, path)
    ran = _cells_by_grade_id(execute(path))
    return {gid: ran[gid].outputs for gid in {a["test"] for a in wrong}}


def test_every_exercise_has_a_typical_wrong_answer(lesson):
    """Each answer cell of the lesson is exercised by at least one wrong answer."""
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    answer_cells = {
        gid for gid, c in _cells_by_grade_id(nb).items() if c.metadata["nbgrader"]["solution"]
    }
    covered = {a["cell"] for a in _wrong_answers(lesson)}
    assert answer_cells - covered == set()


@pytest.mark.parametrize(
    "lesson_round",
    [
        pytest.param((lesson, i), id=f"{lesson}-{i}")
        for lesson in lessons()
        for i in range(len(_rounds(_wrong_answers(lesson))))
    ],
)
def test_wrong_answers_fail_with_the_explaining_message(lesson_round, tmp_path):
    """Each wrong answer makes its test cell raise CheckFailed with the explanation, no stderr."""
    lesson, index = lesson_round
    wrong = _rounds(_wrong_answers(lesson))[index]
    outputs = _failures_after(lesson, copy.deepcopy(wrong), tmp_path)
    for answer in wrong:
        outs = outputs[answer["test"]]
        errors = [o for o in outs if o.output_type == "error"]
        stderr = [o.text for o in outs if o.output_type == "stream" and o.name == "stderr"]
        assert stderr == [], f"{answer['mistake']}: the test cell wrote to stderr"
        assert errors, f"{answer['mistake']}: {answer['test']} passed"
        assert errors[0].ename == "CheckFailed", (answer["mistake"], errors[0].evalue)
        assert answer["message"] in errors[0].evalue, (answer["mistake"], errors[0].evalue)
