"""Runs in the grading process: the solution's formula for each student's own task of the
derivations by hand (`grader.variants.families`), which the judge reads as it reads the
solution's own (`grader.judging.by_hand`). It is kept here, not with the families: a student's
notebook imports `grader.variants` to show its tasks, and a task must not come with its answer.
"""

from collections.abc import Callable

from grader.variants.families import Family, Params


def _chain_rule(task: Params) -> str:
    return (
        "def dz_dx(x):\n"
        f"    y = x**2 - {task.b} * x\n"
        f"    return {3 * task.a} * y**2 * (2 * x - {task.b})\n"
    )


def _mean_gradient(task: Params) -> str:
    a, b = task.a, task.b
    return f"def mean_grad(x):\n    return {3 * a} * ({a} * x + {b}) ** 2 / x.numel()\n"


def _product_rule(task: Params) -> str:
    a, b = task.a, task.b
    return (
        "import math\n\n\n"
        "def dg(x):\n"
        f"    return {a} * x**{a - 1} * math.sin({b} * x) + {b} * x**{a} * math.cos({b} * x)\n"
    )


def _branches(task: Params) -> str:
    a, b = task.a, task.b
    return (
        "import math\n\n\n"
        "def df_branch(x):\n"
        "    if x > 0.5:\n"
        f"        return {a} * x**{a - 1}\n"
        f"    return {b} * math.cos({b} * x)\n"
    )


def _accumulation(task: Params) -> str:
    a, b = task.a, task.b
    return (
        f"def df(x):\n    return {a} * x**{a - 1} + {b}\n\n\n"
        f"def grad_after_three(x):\n    return 3 * ({a} * x**{a - 1} + {b})\n"
    )


def _two_paths(task: Params) -> str:
    k, c = task.a, task.b
    return (
        "def grads_by_hand(a, b):\n"
        f"    h = a * b + {k} * a\n"
        f"    return {2 * c} * h * (b + {k}), {2 * c} * h * a\n"
    )


# by each family's lesson and answer cell
FORMULAS: dict[tuple[str, str], Callable[[Params], str]] = {
    ("03_backward_and_scalar_outputs", "dz_dx"): _chain_rule,
    ("03_backward_and_scalar_outputs", "mean_grad"): _mean_gradient,
    ("04_retain_graph_and_accumulation", "derive_by_hand"): _accumulation,
    ("05_gradients_at_work", "hand_derivative"): _product_rule,
    ("06_backward_by_hand", "chain_by_hand"): _two_paths,
    ("10_branches_and_kinks", "branch_derivative"): _branches,
}


def solution(family: Family, task: Params) -> str:
    """The source of the solution's function(s) for `task` of `family`, a formula."""
    return FORMULAS[family.lesson, family.answer_cell](task)
