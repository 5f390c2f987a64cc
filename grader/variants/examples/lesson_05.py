"""Lesson 5's visible examples of each student's own: the function (and its points, or its start)
that partial_derivatives, gradient_descent and central_difference are tried on."""

import itertools
import math
from dataclasses import dataclass

from grader.variants.examples.base import Example
from grader.variants.examples.writing import fixed, minus, numbers, rounded, times

# Exercise 2 · Two partial derivatives at many points


@dataclass(frozen=True)
class OnPoints:
    """partial_derivatives' example: f(x, y) = a x sin(b y) at four points (xs[i], ys[i]), in no
    order and unevenly spaced (today's points, shifted)."""

    a: float
    b: float
    xs: tuple[float, ...]
    ys: tuple[float, ...]

    @property
    def formula(self) -> str:
        return f"lambda x, y: {times(self.a, 'x')} * torch.sin({times(self.b, 'y')})"

    def f(self, x, y):
        return self.a * x * (self.b * y).sin()  # torch.sin, without importing torch here

    @property
    def label(self) -> str:
        """How the visible test names the call."""
        return (
            f"partial_derivatives({self.formula}, xs, ys) for xs = {numbers(self.xs)}, "
            f"ys = {numbers(self.ys)}"
        )


class PartialDerivatives(Example):
    """Lesson 5, exercise 2: partial_derivatives(f, xs, ys), for f(x, y) = a x sin(b y)."""

    lesson = "05_gradients_at_work"
    exercise = "partial_derivatives"
    answer_cell = "derivative_on_grid"
    what = "example"
    xs, ys = (2.0, -1.0, 0.5, 1.0), (0.0, 1.5, -2.0, 3.0)
    default = OnPoints(a=1.0, b=1.0, xs=xs, ys=ys)
    coefficients = (0.5, 1.0, 2.0, 3.0)
    frequencies = (0.5, 1.0, 1.5, 2.0, 3.0)
    shifts = (-1.0, -0.5, 0.0, 0.5, 1.0)

    def every(self) -> list[OnPoints]:
        return [
            OnPoints(a, b, tuple(x + dx for x in self.xs), tuple(y + dy for y in self.ys))
            for a, b, dx, dy in itertools.product(
                self.coefficients, self.frequencies, self.shifts, self.shifts
            )
        ]

    def shown(self, examples: OnPoints, plain: bool = False) -> str:
        a, b = examples.a, examples.b
        dx = [a * math.sin(b * y) for y in examples.ys]
        dy = [a * b * x * math.cos(b * y) for x, y in zip(examples.xs, examples.ys, strict=True)]
        said = (
            f"`f = {examples.formula}` at the points `xs = {numbers(examples.xs)}`, "
            f"`ys = {numbers(examples.ys)}`. There, rounded, `dx` is `{rounded(dx)}` and `dy` "
            f"is `{rounded(dy)}`."
        )
        return said.replace("`", "") if plain else said


# Exercise 3 · Gradient descent in several variables, with its path


@dataclass(frozen=True)
class Start:
    """gradient_descent's example: f(x) = sum((x - c)**2) + k x[0] x[1], from x0, with lr 0.1,
    3 steps. |k| < 2, so f has one minimum; x0's coordinates differ, and every one moves."""

    c: float
    k: float
    x0: tuple[float, float, float]
    lr = 0.1
    steps = 3

    @property
    def formula(self) -> str:
        sign = "+" if self.k > 0 else "-"
        return (
            f"lambda x: (({minus('x', self.c)}) ** 2).sum() {sign} "
            f"{times(abs(self.k), 'x[0] * x[1]')}"
        )

    def f(self, x):
        return ((x - self.c) ** 2).sum() + self.k * x[0] * x[1]

    @property
    def gradient(self) -> tuple[float, float, float]:
        """f's gradient at x0, by the formula."""
        (p, q, r), c, k = self.x0, self.c, self.k
        return (2 * (p - c) + k * q, 2 * (q - c) + k * p, 2 * (r - c))

    @property
    def label(self) -> str:
        """How the visible test names the call."""
        return (
            f"gradient_descent({self.formula}, x0, {self.lr}, {self.steps}) for "
            f"x0 = {numbers(self.x0)}"
        )


class GradientDescent(Example):
    """Lesson 5, exercise 3: gradient_descent(f, x0, lr, steps), on a quadratic in 3 variables."""

    lesson = "05_gradients_at_work"
    exercise = answer_cell = "gradient_descent"
    what = "example"
    default = Start(c=1.0, k=1.0, x0=(2.0, -1.0, 0.5))
    centres = (-1.0, -0.5, 0.5, 1.0, 1.5, 2.0)
    couplings = (-1.0, -0.5, 0.5, 1.0)
    coordinates = (-2.0, -1.0, 0.5, 1.0, 2.0)

    def every(self) -> list[Start]:
        return [
            Start(c, k, x0)
            for c, k, x0 in itertools.product(
                self.centres, self.couplings, itertools.product(self.coordinates, repeat=3)
            )
            if len(set(x0)) == 3 and all(Start(c, k, x0).gradient)
        ]

    def shown(self, examples: Start, plain: bool = False) -> str:
        x = examples
        for _ in range(examples.steps):
            step = [v - examples.lr * g for v, g in zip(x.x0, x.gradient, strict=True)]
            x = Start(examples.c, examples.k, tuple(step))
        said = (
            f"`f = {examples.formula}`, from `x0 = {numbers(examples.x0)}`, with "
            f"`lr = {examples.lr}` and {examples.steps} steps. The path ends at "
            f"`{rounded(x.x0)}`."
        )
        return said.replace("`", "") if plain else said


# Exercise 4 · Central differences, element by element


@dataclass(frozen=True)
class Nudged:
    """central_difference's example: f(t) = sum((t - c)**3) at a point x of two elements whose
    partial derivatives are not 0 and differ, with h = 1e-3."""

    c: float
    x: tuple[float, float]
    h = 1e-3

    @property
    def formula(self) -> str:
        if self.c == 0:
            return "lambda t: (t**3).sum()"
        return f"lambda t: (({minus('t', self.c)}) ** 3).sum()"

    def f(self, t):
        return ((t - self.c if self.c else t) ** 3).sum()

    @property
    def label(self) -> str:
        """How the visible test names the call."""
        return f"central_difference({self.formula}, x, 1e-3)"


class CentralDifference(Example):
    """Lesson 5, exercise 4: central_difference(f, x, h), for a cubic, at two points."""

    lesson = "05_gradients_at_work"
    exercise = answer_cell = "central_difference"
    what = "example"
    default = Nudged(c=0.0, x=(1.0, 2.0))
    centres = (-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5)
    coordinates = (-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)

    def every(self) -> list[Nudged]:
        return [
            Nudged(c, x)
            for c, x in itertools.product(self.centres, itertools.permutations(self.coordinates, 2))
            if c not in x and abs(x[0] - c) != abs(x[1] - c)
        ]

    def shown(self, examples: Nudged, plain: bool = False) -> str:
        # for a cubic the central difference is exact but for h**2: 3 (x - c)**2 + h**2
        exact = [3 * (x - examples.c) ** 2 for x in examples.x]
        estimates = [d + examples.h**2 for d in exact]
        said = (
            f"`f = {examples.formula}` at `x = {numbers(examples.x)}`, with `h = 1e-3`. The "
            f"estimates are `[{', '.join(fixed(e) for e in estimates)}]`, a hair above the exact "
            f"derivatives `{numbers(exact)}`."
        )
        return said.replace("`", "") if plain else said


EXAMPLES: tuple[Example, ...] = (PartialDerivatives(), GradientDescent(), CentralDifference())
