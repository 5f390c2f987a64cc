"""Lesson 7's visible examples of each student's own: the function and points newton_step is
tried on."""

import functools
import itertools
from dataclasses import dataclass

from grader.variants.examples.base import Example
from grader.variants.examples.lesson_05 import numbers, rounded, times


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
        return list(self.grid)

    @functools.cached_property
    def grid(self) -> tuple[Quartic, ...]:
        """every(), made once: a look at a student's example draws from it."""
        return tuple(
            Quartic(a, x)
            for a, x in itertools.product(
                self.coefficients, itertools.permutations(self.coordinates, 3)
            )
        )

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


EXAMPLES: tuple[Example, ...] = (NewtonStep(),)
