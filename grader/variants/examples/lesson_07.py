"""Lesson 7's visible examples of each student's own: the function and points newton_step is
tried on, and the function g and points of clipped_gradient."""

import itertools
import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from grader.variants.examples.base import Example
from grader.variants.examples.writing import fixed, numbers, rounded, times


@dataclass(frozen=True)
class Quartic:
    """newton_step's example: f(t) = t**4 + a t**2 at three points x, none 0, so f'' > 0 and
    f' != 0 at each."""

    a: float
    x: tuple[float, float, float]

    @property
    def formula(self) -> str:
        return f"lambda t: t**4 + {times(self.a, 't**2')}"

    def f(self, t):
        return t**4 + self.a * t**2


class NewtonStep(Example):
    """Lesson 7, exercise 5: newton_step(f, x), for a quartic with a minimum at 0."""

    lesson = "07_stopping_and_shaping_gradients"
    exercise = "newton_step"
    answer_cell = "second_derivative"
    what = "example"
    default = Quartic(a=1.0, x=(1.0, -0.5, 2.0))
    coefficients = (0.5, 1.0, 1.5, 2.0, 3.0)
    coordinates = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0)

    def every(self) -> list[Quartic]:
        return [
            Quartic(a, x)
            for a, x in itertools.product(
                self.coefficients, itertools.permutations(self.coordinates, 3)
            )
        ]

    def shown(self, examples: Quartic, plain: bool = False) -> str:
        a = examples.a
        d1 = [4 * x**3 + 2 * a * x for x in examples.x]
        d2 = [12 * x**2 + 2 * a for x in examples.x]
        new = [x - p / q for x, p, q in zip(examples.x, d1, d2, strict=True)]
        said = (
            f"`f = {examples.formula}` at `x = {numbers(examples.x)}`. There f′ is "
            f"`{rounded(d1)}` and f″ is `{rounded(d2)}`, so one Newton step gives "
            f"`{rounded(new)}`."
        )
        return said.replace("`", "") if plain else said


@dataclass(frozen=True)
class Clipped:
    """clipped_gradient's example: g(h) = a h**2 on h = x**3 at three points x; the gradient into
    h, 2 a h, is longer than 2 (clipped with max_norm 2) and shorter than 100 (unchanged with
    max_norm 100)."""

    a: float
    x: tuple[float, float, float]
    max_norms = (2.0, 100.0)

    @property
    def formula(self) -> str:
        return f"lambda h: {times(self.a, 'h ** 2')}"

    def g(self, h):
        return self.a * h**2

    @property
    def h(self) -> list[float]:
        return [v**3 for v in self.x]

    @property
    def loss(self) -> float:
        return sum(self.a * e**2 for e in self.h)

    @property
    def into_h(self) -> list[float]:
        """The gradient flowing into h, g'(h) = 2 a h."""
        return [2 * self.a * e for e in self.h]

    @property
    def length(self) -> float:
        return math.hypot(*self.into_h)

    def grads(self, max_norm: float) -> dict[str, list[float]]:
        """x.grad with the gradient into h clipped to max_norm ("right"), and after each slip
        check_clipped names: not clipped, each entry clamped, x's gradient clipped instead, the
        gradient stretched to max_norm although shorter."""
        slope = [3 * v**2 for v in self.x]  # dh/dx
        into_h, length = self.into_h, self.length
        unclipped = [s * u for s, u in zip(slope, into_h, strict=True)]
        x_length = math.hypot(*unclipped)
        return {
            "right": [e * min(1.0, max_norm / length) for e in unclipped],
            "unclipped": unclipped,
            "clamped": [
                s * max(-max_norm, min(max_norm, u)) for s, u in zip(slope, into_h, strict=True)
            ],
            "x": [e * min(1.0, max_norm / x_length) for e in unclipped],
            "stretched": [e * max_norm / length for e in unclipped],
        }


def _slips_apart(example: Clipped) -> bool:
    """For each max_norm, x.grad and the slips' values it tells apart are at least 0.01 apart:
    with max_norm 2 the gradient is clipped ("stretched" gives x.grad), with 100 it passes
    unchanged (only "stretched" differs)."""
    clipped, unchanged = (example.grads(m) for m in example.max_norms)
    cases = [
        [clipped[k] for k in ("right", "unclipped", "clamped", "x")],
        [unchanged[k] for k in ("right", "stretched")],
    ]
    return all(
        max(abs(p - q) for p, q in zip(u, v, strict=True)) > 0.01
        for values in cases
        for u, v in itertools.combinations(values, 2)
    )


def _four(values) -> str:
    """Results to four decimals, halves away from 0 (-22.78125 is -22.7813): [-5.2469, 96]."""
    places = Decimal("0.0001")
    return numbers(float(Decimal(repr(v)).quantize(places, ROUND_HALF_UP)) for v in values)


class ClippedGradient(Example):
    """Lesson 7, exercise 6: clipped_gradient(x, max_norm, g), for g(h) = a h**2, a from 0.5 to
    2, at three distinct points x of halves in [-2, 2], none 0."""

    lesson = "07_stopping_and_shaping_gradients"
    exercise = answer_cell = "clipped_gradient"
    what = "example"
    default = Clipped(a=0.5, x=(-1.5, 0.5, 2.0))
    coefficients = (0.5, 1.0, 1.5, 2.0)
    coordinates = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0)

    def every(self) -> list[Clipped]:
        return [
            example
            for a, x in itertools.product(
                self.coefficients, itertools.permutations(self.coordinates, 3)
            )
            if 2 * 2 < (example := Clipped(a, x)).length < 100 / 2 and _slips_apart(example)
        ]

    def shown(self, examples: Clipped, plain: bool = False) -> str:
        a, length = examples.a, examples.length
        into = "`h` itself" if a == 0.5 else f"`{times(2 * a, 'h')}`"
        clipped, unchanged = (examples.grads(m)["right"] for m in examples.max_norms)
        said = (
            f"`g = {examples.formula}` at `x = {numbers(examples.x)}`: `h = x**3 = "
            f"{numbers(examples.h)}` and the loss is `{fixed(examples.loss)}`. The gradient into "
            f"h is {into}, of length `{length:.4f}`. With `max_norm = 2` it is scaled by "
            f"2 / {length:.4f}, and times dh/dx = 3 x**2 it gives `x.grad = {_four(clipped)}`; "
            f"with `max_norm = 100` it passes unchanged: `x.grad = {_four(unchanged)}`."
        )
        return said.replace("`", "") if plain else said


EXAMPLES: tuple[Example, ...] = (NewtonStep(), ClippedGradient())
