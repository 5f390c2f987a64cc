"""Functions drawn at grading time, for the exercises that ask for a result "using autograd".

A probe hands a drawn function to the student's answer where the lesson shows an example (the
function to differentiate, a loss, an activation, a recurrent cell). Two things make autograd the
only route to the numbers the grader expects, by construction rather than by reading the code:

- it is drawn for the submission, a sum of smooth terms with random coefficients, so no formula
  can be typed in advance;
- its value carries a *shadow*: a smooth term of the inputs **detached** (lesson 7's `detach()`),
  so autograd's gradient leaves it out while every estimate made from values (finite differences
  of any order, Richardson extrapolation, fits) takes in its derivative, which is of order one.
  Complex input is refused: no complex step either.

The reference runs the solution on the same drawn function, so an answer that differentiates what
it is handed with autograd (backward, torch.autograd.grad, torch.func) agrees with it.
"""

import random
from collections.abc import Callable

import torch

VARIABLE = "t"


class DrawnFunction:
    """An elementwise function of one or more tensors, drawn for one submission: its smooth part
    (what autograd differentiates) plus its shadow (computed from the inputs detached)."""

    def __init__(self, smooth: Callable, shadow: Callable, text: str, shadow_text: str):
        self.smooth, self.shadow = smooth, shadow
        self.smooth_text, self.shadow_text = text, shadow_text

    def __call__(self, *inputs):
        for given in inputs:
            if not isinstance(given, torch.Tensor):
                raise TypeError(
                    f"this function takes tensors, not {type(given).__name__}: "
                    "pass it a tensor (torch.tensor(x))"
                )
            if given.is_complex():
                raise TypeError("this function takes real tensors, not complex ones")
        detached = [given.detach() for given in inputs]
        return self.smooth(*inputs) + self.shadow(*detached)

    def then(self, outer: Callable, describe: Callable[[str], str]) -> "DrawnFunction":
        """outer applied to both parts: a matrix product, a running sum."""
        smooth, shadow = self.smooth, self.shadow
        return DrawnFunction(
            lambda *t: outer(smooth(*t)),
            lambda *t: outer(shadow(*t)),
            describe(self.smooth_text),
            describe(self.shadow_text),
        )

    def __repr__(self):
        return _signs(f"{self.smooth_text}, plus {self.shadow_text} of the inputs detached")


def _signs(text: str) -> str:
    """`a + -b` written `a - b`."""
    return text.replace("+ -", "- ").replace("- -", "+ ")


def _coefficient(rng: random.Random, low: float, high: float) -> float:
    """A number between low and high in size, of either sign, rounded to 2 decimals."""
    return round(rng.choice([-1, 1]) * rng.uniform(low, high), 2)


def _term(rng: random.Random, v: str = VARIABLE) -> tuple[Callable, str]:
    """One smooth term of one variable, bounded in slope on [-3, 3]."""
    a, b, c = _coefficient(rng, 0.5, 1.5), round(rng.uniform(0.5, 1.5), 2), _coefficient(rng, 0, 1)
    kind = rng.choice(["sin", "tanh", "exp", "softplus", "square", "cube", "t sin"])
    if kind == "sin":
        return lambda t: a * torch.sin(b * t + c), f"{a}*sin({b}*{v} + {c})"
    if kind == "tanh":
        return lambda t: a * torch.tanh(b * t + c), f"{a}*tanh({b}*{v} + {c})"
    if kind == "exp":
        b = round(b / 3, 2)
        return lambda t: a * torch.exp(b * t), f"{a}*exp({b}*{v})"
    if kind == "softplus":
        return (
            lambda t: a * torch.nn.functional.softplus(b * t + c),
            f"{a}*softplus({b}*{v} + {c})",
        )
    if kind == "square":
        return lambda t: a * (t + c) ** 2, f"{a}*({v} + {c})**2"
    if kind == "cube":
        a = round(a / 5, 2)
        return lambda t: a * t**3, f"{a}*{v}**3"
    return lambda t: a * t * torch.sin(b * t), f"{a}*{v}*sin({b}*{v})"


def _shadow(rng: random.Random, v: str = VARIABLE) -> tuple[Callable, str]:
    """p1 t + p2 t**2 with |p1| > 6 |p2|: on [-3, 3] a slope of at least 0.3 and a curvature of
    at least 0.4 in size, which autograd does not see."""
    p2 = _coefficient(rng, 0.2, 0.4)
    p1 = _coefficient(rng, 6 * abs(p2) + 0.3, 6 * abs(p2) + 1.0)
    return lambda t: p1 * t + p2 * t**2, f"{p1}*{v} + {p2}*{v}**2"


def _sum(terms: list[tuple[Callable, str]]) -> tuple[Callable, str]:
    functions = [fn for fn, _ in terms]
    return (lambda t: sum(fn(t) for fn in functions)), " + ".join(text for _, text in terms)


def elementwise(rng: random.Random, terms: int = 2) -> DrawnFunction:
    """A smooth function applied elementwise, f(t), with its shadow."""
    smooth, text = _sum([_term(rng) for _ in range(terms)])
    shadow, shadow_text = _shadow(rng)
    return DrawnFunction(smooth, shadow, text, shadow_text)


def convex(rng: random.Random) -> DrawnFunction:
    """An elementwise function whose second derivative stays between a > 0 and about 10 on
    [-3, 3]: a * (t - m)**2, a convex term, and a wave too gentle to undo the curvature."""
    a, m = round(rng.uniform(0.5, 1.5), 2), round(rng.uniform(-1.0, 1.0), 2)
    b = round(rng.uniform(0.3, 1.0), 2)
    extra, extra_text = rng.choice(
        [
            (lambda t: torch.cosh(b * t), f"cosh({b}*t)"),
            (lambda t: torch.nn.functional.softplus(3 * b * t), f"softplus({3 * b:.2f}*t)"),
            (lambda t: torch.exp(b * t), f"exp({b}*t)"),
        ]
    )
    k = round(rng.uniform(0.5, 2.0), 2)
    s = round(min(0.5 * a / k**2, 0.5) * rng.uniform(0.5, 1.0), 3)  # s k**2 <= a / 2
    c = _coefficient(rng, 0, 1)
    smooth = lambda t: a * (t - m) ** 2 + extra(t) + s * torch.sin(k * t + c)  # noqa: E731
    text = f"{a}*(t - {m})**2 + {extra_text} + {s}*sin({k}*t + {c})"
    shadow, shadow_text = _shadow(rng)
    return DrawnFunction(smooth, shadow, text, shadow_text)


def of_two(rng: random.Random) -> DrawnFunction:
    """A smooth function of two tensors of one shape, elementwise: f(x, y)."""
    (u, u_text), (w, w_text) = _term(rng, "x"), _term(rng, "y")
    mix, mix_text = _term(rng, "(x*y)")
    q3 = _coefficient(rng, 0.2, 0.4)  # each partial of the shadow at least 0.3 in size on [-3, 3]
    q1, q2 = (_coefficient(rng, 3 * abs(q3) + 0.3, 3 * abs(q3) + 1.0) for _ in range(2))
    return DrawnFunction(
        lambda x, y: u(x) * w(y) + mix(x * y),
        lambda x, y: q1 * x + q2 * y + q3 * x * y,
        f"({u_text}) * ({w_text}) + {mix_text}",
        f"{q1}*x + {q2}*y + {q3}*x*y",
    )


def mixing(rng: random.Random, size: int) -> tuple[DrawnFunction, int]:
    """A function of a 1-D tensor of `size` elements whose outputs mix its inputs (a matrix, a
    running sum, or elementwise), and the number of outputs it returns."""
    inner = elementwise(rng)
    kind = rng.choice(["matrix", "cumsum", "elementwise"])
    if kind == "elementwise":
        return inner, size
    if kind == "cumsum":
        return inner.then(lambda z: torch.cumsum(z, 0), lambda text: f"cumsum({text})"), size
    rows = rng.randint(2, 4)
    entries = [[round(rng.uniform(-2, 2), 1) for _ in range(size)] for _ in range(rows)]
    drawn = inner.then(
        lambda z: torch.tensor(entries, dtype=z.dtype) @ z, lambda text: f"A @ ({text})"
    )
    drawn.smooth_text += f" for A = {entries}"
    return drawn, rows
