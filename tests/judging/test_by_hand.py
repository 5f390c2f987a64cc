"""A derivative asked for by hand is read as a formula and evaluated by the grader, outside the
submission's process, at points drawn for it: only a formula equal to the solution's earns the
points. Wrong derivations, numerical estimates, autograd and code the reading cannot see earn
nothing, each with a one-line reason; correct spellings are in tests/lessons/alternative_answers.
"""

from pathlib import Path

import pytest
import yaml
from notebook_tools import solution_with_answers

from grader.course import lessons
from grader.judging import by_hand, formulas
from grader.judging.formula_reading import LARGEST, STEPS, NotAFormula, read
from grader.judging.reference import probes_file
from grader.judging.rules import judge_source
from grader.judging.syntax import parsed

ATTACKS = yaml.safe_load(
    (Path(__file__).parent.parent / "integrity" / "how_attacks.yml").read_text()
)
WRONG = [a for a in ATTACKS if a["class"] == "wrong derivation"]
TRICKS = [a for a in ATTACKS if a["class"] != "wrong derivation"]


def _judged(lesson: str, answers: dict[str, str], seed: int = 11) -> dict[str, str]:
    """Why each test earns nothing, with some answer cells replaced in the solution."""
    source, nb = solution_with_answers(lesson, answers)
    return judge_source(nb, source, probes_file(lesson).read_text(), seed).problems


def test_every_derivative_asked_by_hand_is_declared_and_the_solution_is_a_formula():
    """Seven functions in five lessons are formulas, and each solution passes at many seeds."""
    declared = {
        (lesson, function)
        for lesson in lessons()
        for functions in by_hand.declared(probes_file(lesson).read_text()).values()
        for function in functions
    }
    assert {f for _, f in declared} == {
        "dz_dx", "mean_grad", "df", "grad_after_three", "dg", "grads_by_hand", "df_branch"
    }  # fmt: skip
    for lesson in {lesson for lesson, _ in declared}:
        for seed in range(5):
            assert _judged(lesson, {}, seed) == {}, (lesson, seed)


@pytest.mark.parametrize("case", range(len(WRONG)), ids=[a["name"] for a in WRONG])
def test_a_wrong_derivation_earns_nothing_and_is_told_where(case):
    """A formula that differs from the solution's is evaluated and fails at a point it names."""
    attack = WRONG[case]
    problem = _judged(attack["lesson"], {attack["cell"]: attack["answer"]}).get(attack["test"])
    assert problem and "check your derivation" in problem and " = " in problem, problem


@pytest.mark.parametrize("case", range(len(TRICKS)), ids=[a["name"] for a in TRICKS])
def test_a_trick_against_by_hand_earns_nothing(case):
    """Finite differences of every order, complex steps, autograd, a CAS, code hidden from the
    reading: none is the formula, so none earns the points, and the reason is one line."""
    attack = TRICKS[case]
    answers = {attack["cell"]: attack["answer"], **attack.get("other_cells", {})}
    problem = _judged(attack["lesson"], answers).get(attack["test"])
    assert problem and "\n" not in problem, problem
    assert attack["says"] in problem, problem


def _statements(source: str):
    return parsed(source).body


def test_a_formula_shared_many_times_over_is_refused_at_the_size_limit_in_bounded_time():
    """Names doubling a formula forty times stand for 2**40 nodes: the reading stops at the cap."""
    lines = ["def dz_dx(x):", "    a0 = 2 * x + 3"]
    lines += [f"    a{i} = a{i - 1} + a{i - 1}" for i in range(1, 41)]
    lines += ["    return a40"]
    with pytest.raises(NotAFormula, match=f"more than {LARGEST} parts"):
        read("dz_dx", _statements("\n".join(lines)))


def test_branches_that_multiply_are_refused_at_the_step_limit():
    """Forty ifs in a row are 2**40 paths written out: the reading stops after STEPS steps."""
    lines = ["def dz_dx(x):", "    y = x"]
    lines += [f"    if x > {i}:\n        y = y + 0" for i in range(40)]
    lines += ["    return 12 * (2 * y + 3)"]
    with pytest.raises(NotAFormula, match="more code than a formula needs"):
        read("dz_dx", _statements("\n".join(lines)))
    assert STEPS < 2**20


def test_a_deeply_nested_expression_is_refused_not_crashed():
    """Two thousand nested minus signs end the reading with a reason, not a RecursionError."""
    source = "def dz_dx(x):\n    return " + "-" * 2000 + "x"
    with pytest.raises(NotAFormula, match="nest too deeply"):
        read("dz_dx", _statements(source))


def test_a_point_where_the_answer_has_no_real_value_is_named():
    """A formula undefined where the derivative is defined (log of a negative) says where."""
    source = (
        "import math\ndef dg(x):\n    return math.log(x) * 0 + 2*x*math.sin(x) + x**2*math.cos(x)\n"
    )
    problem = _judged("05_gradients_at_work", {"hand_derivative": source}).get(
        "test_hand_derivative"
    )
    assert problem and "has no value at x = " in problem, problem


def test_formulas_are_exact_to_far_more_digits_than_any_estimate_reaches():
    """The evaluation keeps DIGITS digits: a sixth-order estimate with a tiny step is off by far
    more than the tolerance, the exact formula by far less."""
    import mpmath

    with mpmath.workdps(formulas.DIGITS):
        x, h = mpmath.mpf("0.7"), mpmath.mpf("1e-30")
        exact = 3 * x**2 + 2
        estimate = ((x + h) ** 3 + 2 * (x + h) - (x - h) ** 3 - 2 * (x - h)) / (2 * h)
        rounded = exact + mpmath.mpf(10) ** (5 - formulas.DIGITS)
    assert formulas.agrees(rounded, exact)
    assert not formulas.agrees(estimate, exact)


def test_numbers_past_any_derivative_here_end_the_evaluation_at_once():
    """Towers of powers and exponentials would hold the grader for ever at 1000 digits: a value
    past 1e300 makes the formula undefined there, before anything is computed from it."""
    tower = "import math\ndef dz_dx(x):\n    return math.exp(math.exp(10**10**10)) * 0 + 24 * x\n"
    problem = _judged("03_backward_and_scalar_outputs", {"dz_dx": tower}).get("test_dz_dx")
    assert problem and "a number past 1e300" in problem, problem
