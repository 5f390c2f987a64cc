"""The corpora hold on every task of every family: each right answer, in several spellings, passes
the judge's formula check and the visible test for its own task, and fails another task's saying
that it solves a different task; each typical slip fails both, the visible test naming the slip.
No sandbox: the judge's by-hand check and the lesson's visible check are called directly."""

import dataclasses
import re

import nbformat
import pytest
import torch

from grader.checks import CheckFailed, call_by_hand
from grader.course import probes_file
from grader.course_keys import Variant
from grader.judging import by_hand
from grader.lesson_checks import lesson_03, lesson_04, lesson_05, lesson_06, lesson_10
from grader.variants import Task
from grader.variants.families import FAMILIES, FAMILY_LIST, Params

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@dataclasses.dataclass(frozen=True)
class Fixed(Variant):
    """A student whose task is `fixed`."""

    fixed: Params = None

    def task(self, exercise: str) -> Params:
        return self.fixed


def chain_rule_spellings(t: Params) -> list[str]:
    """dz/dx for z = a y^3, y = x^2 - b x, as students write it."""
    a, b = t.a, t.b
    return [
        f"def dz_dx(x):\n    y = x**2 - {b} * x\n    dz_dy = {3 * a} * y**2\n"
        f"    dy_dx = 2 * x - {b}\n    return dz_dy * dy_dx\n",
        f"def dz_dx(x):\n    return {a} * 3 * (x**2 - {b} * x) ** 2 * (2 * x - {b})\n",
        f"dz_dx = lambda x: 3 * {a} * (x * x - {b} * x) ** 2 * (2 * x - {b})  # noqa: E731\n",
        f"import math\n\ndef dz_dx(x):\n    return 3 * {a} * math.pow(x**2 - {b} * x, 2) "
        f"* (2 * x - {b})\n",
        f"def dz_dx(x):\n    return {3 * a} * x**2 * (x - {b}) ** 2 * (2 * x - {b})\n",
    ]


def chain_rule_slips(t: Params) -> list[tuple[str, str]]:
    """Typical wrong answers, and words of what the visible test says to each."""
    a, b = t.a, t.b
    outer = f"{3 * a} * (x**2 - {b} * x) ** 2"
    return [
        (f"def dz_dx(x):\n    return {outer}\n", "leaves out the derivative of the inner"),
        (f"def dz_dx(x):\n    return {outer} * 2\n", "multiplies dz/dy by 2"),
        (f"def dz_dx(x):\n    return {outer} * 2 * x\n", "the derivative of x^2 alone"),
        (f"def dz_dx(x):\n    return {outer} * (2 * x + {b})\n", "with the wrong sign"),
    ]


def mean_gradient_spellings(t: Params) -> list[str]:
    """The gradient of mean((a x + b)^3), as students write it."""
    a, b = t.a, t.b
    return [
        f"def mean_grad(x):\n    n = torch.numel(x)\n"
        f"    return ({3 * a**3} * x.pow(2) + {6 * a * a * b} * x + {3 * a * b * b}) / n\n",
        f"def mean_grad(x):\n    inner = {a} * x + {b}\n    outer_slope = 3 * inner**2\n"
        f"    return outer_slope * {a} / len(x.flatten())\n",
        f"def mean_grad(x):\n    scale = torch.full_like(x, {3 * a}.0 / x.nelement())\n"
        f"    return scale * torch.square({a} * x + {b})\n",
        f"import math\n\ndef mean_grad(x):\n    n = math.prod(x.shape)\n"
        f"    return x.mul({a}).add({b}).pow(2).mul({3 * a}).div(n)\n",
    ]


def mean_gradient_slips(t: Params) -> list[tuple[str, str]]:
    a, b = t.a, t.b
    return [
        (f"def mean_grad(x):\n    return {3 * a} * ({a} * x + {b}) ** 2\n", "gradient of the sum"),
        (
            f"def mean_grad(x):\n    return 3 * ({a} * x + {b}) ** 2 / x.numel()\n",
            f"the inner function {a}x + {b} has derivative {a}",
        ),
        (
            f"def mean_grad(x):\n    return {3 * a} * ({a} * x + {b}) ** 3 / x.numel()\n",
            "mean_grad(torch.ones(2, 2))",
        ),
    ]


def accumulation_spellings(t: Params) -> list[str]:
    """f'(x) and x.grad after three backward() calls, for f(x) = x^a + b x."""
    a, b = t.a, t.b
    return [
        f"def df(x):\n    return {a} * x ** ({a} - 1) + {b}\n\n"
        f"def grad_after_three(x):\n    return 3 * df(x)\n",
        f"def df(x):\n    return {b} + {a} * x**{a - 1}\n\n"
        f"def grad_after_three(x):\n    once = {a} * x**{a - 1} + {b}\n"
        "    return once + once + once\n",
        f"df = lambda x: {a} * x**{a - 1} + {b}  # noqa: E731\n"
        f"grad_after_three = lambda x: {3 * a} * x**{a - 1} + {3 * b}  # noqa: E731\n",
    ]


def accumulation_slips(t: Params) -> list[tuple[str, str]]:
    a, b = t.a, t.b
    df = f"def df(x):\n    return {a} * x**{a - 1} + {b}\n\n"
    return [
        (df + f"def grad_after_three(x):\n    return {a} * x**{a - 1} + {b}\n", "ONE backward()"),
        (
            f"def df(x):\n    return {a} * x**{a - 1}\n\n"
            f"def grad_after_three(x):\n    return 3 * {a} * x**{a - 1}\n",
            "Check your derivation (power rule, constant factors)",
        ),
        (df + f"def grad_after_three(x):\n    return 9 * x**{a - 1} + {b}\n", "add it up three"),
    ]


def two_paths_spellings(t: Params) -> list[str]:
    """(d out/da, d out/db) for out = c h^2, h = a b + k a (the task's a is k, its b is c)."""
    k, c = t.a, t.b
    return [
        f"def grads_by_hand(a, b):\n    h = a * b + {k} * a\n    d_out_dh = {2 * c} * h\n"
        f"    return d_out_dh * (b + {k}), d_out_dh * a\n",
        f"def grads_by_hand(a, b):\n    return ({2 * c} * (a * b + {k} * a) * b "
        f"+ {2 * c} * (a * b + {k} * a) * {k}, {2 * c} * a * (a * b + {k} * a))\n",
        f"def grads_by_hand(a, b):\n    h = a * (b + {k})\n    return [{2 * c} * h * (b + {k}), "
        f"{2 * c} * h * a]\n",
    ]


def two_paths_slips(t: Params) -> list[tuple[str, str]]:
    k, c = t.a, t.b
    return [
        (
            f"def grads_by_hand(a, b):\n    h = a * b + {k} * a\n"
            f"    return {2 * c} * h * b, {2 * c} * h * a\n",
            "add both paths",
        ),
        (
            f"def grads_by_hand(a, b):\n    return b + {k}, a\n",
            "misses the outer factor",
        ),
    ]


def product_rule_spellings(t: Params) -> list[str]:
    """g'(x) for g(x) = x^a sin(b x), as students write it."""
    a, b = t.a, t.b
    return [
        f"import math\n\ndef dg(x):\n    u, du = x**{a}, {a} * x**{a - 1}\n"
        f"    v, dv = math.sin({b} * x), {b} * math.cos({b} * x)\n    return du * v + u * dv\n",
        f"import numpy as np\n\ndef dg(x):\n    return x**{a - 1} * ({a} * np.sin({b} * x) "
        f"+ {b} * x * np.cos({b} * x))\n",
        f"from math import cos, sin\n\ndg = lambda x: {a} * x**{a - 1} * sin({b} * x) "
        f"+ {b} * x**{a} * cos({b} * x)  # noqa: E731\n",
    ]


def product_rule_slips(t: Params) -> list[tuple[str, str]]:
    a, b = t.a, t.b
    said = "Check your derivation (product rule, chain rule, constant factors)"
    return [
        (f"import math\n\ndef dg(x):\n    return {a} * x**{a - 1} * math.cos({b} * x)\n", said),
        (
            f"import math\n\ndef dg(x):\n    return {a} * x**{a - 1} * math.sin({b} * x) "
            f"+ x**{a} * math.cos({b} * x)\n"
            if b != 1
            else f"import math\n\ndef dg(x):\n    return {a} * x**{a - 1} * math.sin(x) "
            f"- x**{a} * math.cos(x)\n",
            said,
        ),
        (
            f"import math\n\ndef dg(x):\n    return {a} * x**{a} * math.sin({b} * x) "
            f"+ {b} * x**{a} * math.cos({b} * x)\n",
            said,
        ),
    ]


def branches_spellings(t: Params) -> list[str]:
    """The derivative of the branch that ran, for x**a if x > 0.5, else sin(b x)."""
    a, b = t.a, t.b
    return [
        f"import math\n\ndef df_branch(x):\n    if x <= 0.5:\n"
        f"        return {b} * math.cos({b} * x)\n    return {a} * x ** ({a} - 1)\n",
        f"import numpy as np\n\ndef df_branch(x):\n"
        f"    return {a} * x**{a - 1} if x > 0.5 else {b} * np.cos({b} * x)\n",
        f"from math import cos\n\ndef df_branch(x):\n    slope = {b} * cos({b} * x)\n"
        f"    if x > 0.5:\n        slope = {a} * x**{a - 1}\n    return slope\n",
    ]


def branches_slips(t: Params) -> list[tuple[str, str]]:
    a, b = t.a, t.b
    sine, power = f"sin({'x' if b == 1 else f'{b}x'})", f"x**{a}"
    return [
        (  # one formula for both sides
            f"def df_branch(x):\n    return {a} * x**{a - 1}\n",
            f"the branch {sine} runs",
        ),
        (  # the branches swapped
            f"import math\n\ndef df_branch(x):\n    if x > 0.5:\n"
            f"        return {b} * math.cos({b} * x)\n    return {a} * x**{a - 1}\n",
            f"the branch {power} runs",
        ),
        (  # the chain rule's factor b left out
            f"import math\n\ndef df_branch(x):\n    if x > 0.5:\n"
            f"        return {a} * x**{a - 1}\n    return math.cos({b} * x) * {b + 1}\n",
            f"the branch {sine} runs",
        ),
    ]


def _dz_dx_visible(answers, task: Params) -> None:
    lesson_03.check_dz_dx(call_by_hand(answers["dz_dx"], -3.0, name="dz_dx"), -3.0, task)


def _mean_grad_visible(answers, task: Params) -> None:
    x = torch.ones(2, 2)
    right = 3 * task.a * (task.a * x + task.b) ** 2 / x.numel()
    grad = call_by_hand(answers["mean_grad"], x.clone(), name="mean_grad")
    lesson_03.check_mean_grad(grad, x, right, "mean_grad(torch.ones(2, 2))", task)


def _accumulation_visible(answers, task: Params) -> None:
    values = {}
    for x in (1.0, 2.0):
        for name in ("df", "grad_after_three"):
            values[name, x] = call_by_hand(answers[name], x, name=name)
    slopes = {x: task.a * x ** (task.a - 1) + task.b for x in (1.0, 2.0)}
    three = {x: 3 * slope for x, slope in slopes.items()}
    lesson_04.check_df_and_grad_after_three(values, slopes=slopes, after_three=three)


def _two_paths_visible(answers, task: Params) -> None:
    found = call_by_hand(answers["grads_by_hand"], 1.0, 2.0, name="grads_by_hand")
    family = FAMILIES["06_backward_by_hand", "grads_by_hand"]
    lesson_06.check_grads_by_hand(found, 1.0, 2.0, Task(family.lesson, family.exercise, task))


def _dg_visible(answers, task: Params) -> None:
    family = FAMILIES["05_gradients_at_work", "dg"]
    for x in (1.0, 2.0):
        leaf = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        (right,) = torch.autograd.grad(family.function(task, leaf), leaf)
        lesson_05.check_dg(call_by_hand(answers["dg"], x, name="dg"), x, right.item())


def _df_branch_visible(answers, task: Params) -> None:
    family = FAMILIES["10_branches_and_kinks", "df_branch"]
    for x in (1.0, 0.0, 0.5):
        leaf = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        (right,) = torch.autograd.grad(family.function(task, leaf), leaf)
        answer = call_by_hand(answers["df_branch"], x, name="df_branch")
        lesson_10.check_branch(answer, x, right.item(), task)


# family: (test, spellings, slips, the visible test)
CORPORA = {
    FAMILIES["03_backward_and_scalar_outputs", "dz_dx"]: (
        "test_dz_dx",
        chain_rule_spellings,
        chain_rule_slips,
        _dz_dx_visible,
    ),
    FAMILIES["03_backward_and_scalar_outputs", "mean_grad"]: (
        "test_mean_grad",
        mean_gradient_spellings,
        mean_gradient_slips,
        _mean_grad_visible,
    ),
    FAMILIES["04_retain_graph_and_accumulation", "derive_by_hand"]: (
        "test_derive_by_hand",
        accumulation_spellings,
        accumulation_slips,
        _accumulation_visible,
    ),
    FAMILIES["05_gradients_at_work", "dg"]: (
        "test_hand_derivative",
        product_rule_spellings,
        product_rule_slips,
        _dg_visible,
    ),
    FAMILIES["06_backward_by_hand", "grads_by_hand"]: (
        "test_chain_by_hand",
        two_paths_spellings,
        two_paths_slips,
        _two_paths_visible,
    ),
    FAMILIES["10_branches_and_kinks", "df_branch"]: (
        "test_branch_derivative",
        branches_spellings,
        branches_slips,
        _df_branch_visible,
    ),
}
CASES = [(family, task) for family in CORPORA for task in family.every()]


def _notebook(answer: str, test: str):
    """The lesson's import, an answer cell and the exercise's test cell, as the judge reads a
    submission."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import torch"),
        nbformat.v4.new_code_cell(answer, metadata={"nbgrader": {"solution": True}}),
        nbformat.v4.new_code_cell(
            "", metadata={"nbgrader": {"grade": True, "grade_id": test, "points": 2}}
        ),
    ]
    return nb


def _judged(family, answer: str, task: Params) -> str | None:
    test = CORPORA[family][0]
    declared = by_hand.declared(probes_file(family.lesson).read_text())
    probes = f"BY_HAND = { ({test: declared[test]})!r}\n"
    student = Fixed("s", "s-AAAAAAAAAA", family.lesson, fixed=task)
    nb, solution = _notebook(answer, test), _notebook("", test)
    return by_hand.problems(nb, solution, probes, seed=7, variant=student).get(test)


def _visible(family, answer: str, task: Params) -> None:
    namespace: dict = {"torch": torch}
    exec(answer, namespace)
    CORPORA[family][3](namespace, task)


def _id(case) -> str:
    family, task = case
    return f"{family.exercise}-a{task.a}b{task.b}"


@pytest.mark.parametrize("case", CASES, ids=map(_id, CASES))
def test_right_answers_pass_their_own_task_and_no_other(case):
    family, task = case
    other = next(t for t in family.every() if t != task)
    for answer in CORPORA[family][1](task):
        assert _judged(family, answer, task) is None, answer
        _visible(family, answer, task)
        said = _judged(family, answer, other)
        assert said is not None and "it solves a different task" in said, (answer, said)
        with pytest.raises(CheckFailed):
            _visible(family, answer, other)


@pytest.mark.parametrize("case", CASES, ids=map(_id, CASES))
def test_typical_slips_fail_on_every_task_and_are_named(case):
    family, task = case
    for answer, words in CORPORA[family][2](task):
        said = _judged(family, answer, task)
        assert said is not None and "check your derivation" in said, (answer, said)
        assert f"your task: {family.shown(task, plain=True)}" in said
        with pytest.raises(CheckFailed, match=re.escape(words)):
            _visible(family, answer, task)


def test_every_family_has_its_corpora():
    assert set(CORPORA) == set(FAMILY_LIST)


@pytest.mark.parametrize(
    "answer",
    ["def df_branch(x, y):\n    return x\n", "def df_branch():\n    return 1\n"],
)
def test_an_answer_of_another_shape_is_told_so_not_a_grading_error(answer):
    """Before it is compared with the other tasks, an answer's parameters are checked."""
    family = FAMILIES["10_branches_and_kinks", "df_branch"]
    said = _judged(family, answer, family.default)
    assert said is not None and "parameters; the exercise gives it 1" in said
