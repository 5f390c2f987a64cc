"""The exercises whose task varies from student to student, each a *family* of tasks of one
structure: the class-wide task (what the lesson's text shows), every task a student may draw,
and how a task is shown. A student's notebook imports this module, so it holds no answer: the
solution's formula for each task is the grading process's (`grader.judging.hand_solutions`). The
tasks of a family are equally hard: the same structure, with coefficients from ranges the
exercise's wording allows.
"""

import itertools
from dataclasses import dataclass


@dataclass(frozen=True)
class Params:
    """A task's coefficients, by name."""

    a: int
    b: int


def times(coefficient: int, name: str) -> str:
    """`coefficient` times `name` as a formula is written: 3x, but x for 1."""
    return name if coefficient == 1 else f"{coefficient}{name}"


class Family:
    """One exercise's tasks."""

    lesson: str
    exercise: str  # the exercise's name: the function it asks for, or (several) the answer's
    functions: tuple[str, ...] = ()  # the functions it asks for, where not only `exercise`
    answer_cell: str  # the grade id of the cell the student writes them in
    default: Params
    a_values: range  # the coefficients a task may have
    b_values: range
    what = "task"  # what the lesson's cell shows: "**Your task** (...)"

    def every(self) -> list[Params]:
        """Every task a student may draw, the class-wide one among them."""
        return [Params(a, b) for a, b in itertools.product(self.a_values, self.b_values)]

    def draw(self, rng) -> Params:
        """One task, each equally likely."""
        return rng.choice(self.every())

    def shown(self, task: Params, plain: bool = False) -> str:
        """The task as the notebook shows it (Markdown with TeX, or `plain` text)."""
        raise NotImplementedError

    def function(self, task: Params, *x):
        """The task's function at `x` (tensors: its inputs), whose derivative the exercise asks
        for."""
        raise NotImplementedError

    def asked(self) -> tuple[str, ...]:
        """The functions the exercise asks for."""
        return self.functions or (self.exercise,)

    def times_derivative(self, function: str) -> int:
        """What `function` returns, in derivatives of the task's function (1: the derivative)."""
        return 1


class ChainRule(Family):
    """Lesson 3, exercise 1: dz/dx by hand for z = a y^3, y = x^2 - b x."""

    lesson = "03_backward_and_scalar_outputs"
    exercise = answer_cell = "dz_dx"
    default = Params(a=2, b=3)
    a_values, b_values = range(2, 7), range(1, 7)

    def shown(self, task: Params, plain: bool = False) -> str:
        inner, outer = f"x^2 - {times(task.b, 'x')}", times(task.a, "y^3")
        if plain:
            return f"y = {inner}, z = {outer}"
        return f"$y = {inner}$, $\\;z = {outer}$"

    def function(self, task: Params, x):
        return task.a * (x**2 - task.b * x) ** 3


class MeanGradient(Family):
    """Lesson 3, exercise 2: the gradient of out = mean((a x + b)^3) by hand, for a tensor x."""

    lesson = "03_backward_and_scalar_outputs"
    exercise = answer_cell = "mean_grad"
    default = Params(a=2, b=1)
    a_values, b_values = range(2, 5), range(1, 4)

    def shown(self, task: Params, plain: bool = False) -> str:
        inner = f"{task.a}x + {task.b}"
        if plain:
            return f"out = mean(({inner})^3)"
        return f"$\\text{{out}} = \\frac{{1}}{{n}}\\sum_{{i=1}}^{{n}} ({task.a}x_i + {task.b})^3$"

    def function(self, task: Params, x):
        return ((task.a * x + task.b) ** 3).mean()


class ProductRule(Family):
    """Lesson 5, exercise 1: g'(x) by hand for g(x) = x^a sin(b x)."""

    lesson = "05_gradients_at_work"
    exercise, answer_cell = "dg", "hand_derivative"
    default = Params(a=2, b=1)
    a_values, b_values = range(2, 5), range(1, 4)

    def shown(self, task: Params, plain: bool = False) -> str:
        if plain:
            return f"g(x) = x^{task.a} sin({times(task.b, 'x')})"
        return f"$g(x) = x^{task.a}\\sin({times(task.b, 'x')})$"

    def function(self, task: Params, x):
        import torch

        return x**task.a * torch.sin(task.b * x)


class Branches(Family):
    """Lesson 10, exercise 2: by hand, the derivative of the branch that ran, for
    f(x) = x^a if x > 0.5, else sin(b x)."""

    lesson = "10_branches_and_kinks"
    exercise, answer_cell = "df_branch", "branch_derivative"
    default = Params(a=3, b=2)
    a_values, b_values = range(2, 5), range(1, 4)

    def shown(self, task: Params, plain: bool = False) -> str:
        sine = f"sin({times(task.b, 'x')})"
        if plain:
            return f"f_branch(x) = x**{task.a} if x > 0.5, else {sine}"
        return f"$f(x) = x^{task.a}$ if $x > 0.5$, else $\\{sine}$"

    def function(self, task: Params, x):
        import torch

        return x**task.a if x > 0.5 else torch.sin(task.b * x)


class Accumulation(Family):
    """Lesson 4, exercise 6: by hand, f'(x) and x.grad after three backward() calls, for
    f(x) = x^a + b x."""

    lesson = "04_retain_graph_and_accumulation"
    exercise = answer_cell = "derive_by_hand"
    functions = ("df", "grad_after_three")
    default = Params(a=3, b=2)
    a_values, b_values = range(2, 5), range(1, 5)

    def shown(self, task: Params, plain: bool = False) -> str:
        if plain:
            return f"f(x) = x**{task.a} + {times(task.b, 'x')}"
        return f"$f(x) = x^{task.a} + {times(task.b, 'x')}$"

    def function(self, task: Params, x):
        return x**task.a + task.b * x

    def times_derivative(self, function: str) -> int:
        return 3 if function == "grad_after_three" else 1


class TwoPaths(Family):
    """Lesson 6, exercise 2: by hand, the gradient of out = c h^2 with h = a b + k a, where a
    reaches h along two paths (the task's `a` is k, its `b` is c)."""

    lesson = "06_backward_by_hand"
    exercise, answer_cell = "grads_by_hand", "chain_by_hand"
    default = Params(a=1, b=1)
    a_values, b_values = range(1, 4), range(1, 4)

    def shown(self, task: Params, plain: bool = False) -> str:
        inner, outer = f"a*b + {times(task.a, 'a')}", times(task.b, "h^2")
        if plain:
            return f"h = {inner}, out = {outer}"
        return f"$h = a \\cdot b + {times(task.a, 'a')}$, $\\;\\text{{out}} = {outer}$"

    def function(self, task: Params, a, b):
        return task.b * (a * b + task.a * a) ** 2


FAMILY_LIST: tuple[Family, ...] = (
    ChainRule(),
    MeanGradient(),
    Accumulation(),
    ProductRule(),
    TwoPaths(),
    Branches(),
)
# Each family by its lesson and by its exercise's name and each function it asks for
FAMILIES: dict[tuple[str, str], Family] = {
    (family.lesson, name): family
    for family in FAMILY_LIST
    for name in dict.fromkeys((family.exercise, *family.asked()))
}
