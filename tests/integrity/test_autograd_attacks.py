"""Answers that get around "using autograd" earn nothing: what they differentiate is drawn at
grading time, so the probe's observations of a typed formula, a finite difference, a Richardson
extrapolation or a complex step differ from the reference's. Nor do answers to the graph
exercises that look for a walk of the graph beside them: there is none."""

from pathlib import Path

import pytest
import yaml
from answer_runs import SEED, answer_cases, tried_by_lesson

from grader.judging.verdict import verdict

CORPUS = Path(__file__).parent / "autograd_attacks.yml"
GRAPH_CORPUS = Path(__file__).parent / "graph_attacks.yml"


def _attacks(lesson: str) -> list[dict]:
    attacks = [*yaml.safe_load(CORPUS.read_text()), *yaml.safe_load(GRAPH_CORPUS.read_text())]
    return [
        {"style": a["name"], **{k: a[k] for k in ("cell", "test", "answer")}}
        for a in attacks
        if a["lesson"] == lesson
    ]


def test_every_using_autograd_lesson_is_attacked_by_each_class():
    """The corpus tries typed formulas, finite differences and complex steps."""
    classes = {a["class"] for a in yaml.safe_load(CORPUS.read_text())}
    assert {"typed formula", "finite difference", "complex step"} <= classes


@pytest.fixture(scope="module")
def attack_runs(tmp_path_factory):
    """Each lesson's attacks tried once, on first use."""
    return tried_by_lesson(_attacks, tmp_path_factory)


@pytest.mark.parametrize("case", answer_cases(_attacks))
def test_an_answer_that_does_not_differentiate_what_it_is_handed_earns_nothing(
    case, attack_runs, reference_server
):
    """The run ends with a report, and the judge rejects what the probe observed."""
    lesson, index = case
    attack = _attacks(lesson)[index]
    run = attack_runs(lesson)[index]
    assert "died" not in run, f"{attack['style']}: {run.get('died')}"
    expected = reference_server.observe(lesson, SEED)[attack["test"]]
    assert verdict(expected, run["observed"]) is not None, attack["style"]
