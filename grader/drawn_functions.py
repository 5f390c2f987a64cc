"""Functions drawn at grading time, for the exercises that ask for a result "using autograd".

A probe hands a drawn function to the student's answer where the lesson shows an example (the
function to differentiate, an error function, a loss, an activation, a recurrent cell). Two
things make autograd the only route to the numbers the grader expects, by construction rather
than by reading the code:

- it is drawn for the submission, a sum of smooth terms with random coefficients, so no formula
  can be typed in advance. In grading, it is drawn and evaluated outside the submission's
  process (`grader.function_oracle`): the submission holds a handle (`grader.remote_functions`),
  never a term or a coefficient, however it reads its own memory;
- its value carries a *shadow*: a smooth term of the inputs **detached** (lesson 7's `detach()`),
  so autograd's gradient leaves it out while every estimate made from values (finite differences
  of any order, Richardson extrapolation, fits) takes in its derivative, of order one. Complex
  input is refused (no complex step).

`FunctionDraws` draws them from a key: the reference server draws here, from the key the grading
process draws the submission's from, so the solution runs on the same functions.
"""

import random
from collections.abc import Callable

import torch

from grader.drawn_programs import Program, draw_program
from grader.hand_graphs import HandGraph, draw_hand_graph

Parts = tuple[Callable, Callable]  # (smooth, shadow): what autograd sees, and what it does not
SHOWN = "a function drawn at grading time"  # how labels name one: its formula is nowhere
KINDS = ("elementwise", "convex", "of_two", "mixing")


class FunctionDraws:
    """The functions drawn from `key`: the one a test draws `index`-th is the same wherever it is
    drawn from the same key (the grading process's oracle, the reference server)."""

    def __init__(self, key: str):
        self.key = key

    def parts(self, test: str, index: int, kind: str, size: int = 0) -> tuple[Parts, int]:
        """The parts of the function and the number of outputs a mixing one returns (else 0)."""
        if kind not in KINDS:
            raise ValueError(f"no drawn function of kind {kind!r}")
        rng = random.Random(f"{self.key}/{test}/{index}")
        if kind == "mixing":
            return mixing_parts(rng, size)
        return {"elementwise": elementwise_parts, "convex": convex_parts}.get(kind, of_two_parts)(
            rng
        ), 0

    def draw(self, test: str, index: int, kind: str, size: int = 0, rows: int = 0):
        """The function itself (at most `rows` values per input where given), and its outputs."""
        parts, outputs = self.parts(test, index, kind, size)
        return drawn_function(parts, rows), outputs

    def program(self, test: str, index: int, inputs: int, nodes: int, runs: int) -> Program:
        """Lesson 11's secrets of a drawn program of `inputs` inputs and `nodes` drawn nodes,
        to run `runs` times (`grader.drawn_programs`)."""
        return draw_program(random.Random(f"{self.key}/{test}/{index}"), inputs, nodes, runs)

    def hand_graph(
        self, test: str, index: int, leaves: int, size: int, steps: int, runs: int
    ) -> HandGraph:
        """Lesson 6's hand graph, its steps owned by the grading process (`grader.hand_graphs`),
        to walk `runs` times."""
        rng = random.Random(f"{self.key}/{test}/{index}")
        return draw_hand_graph(rng, leaves=leaves, size=size, steps=steps, runs=runs)


def drawn_function(parts: Parts, rows: int = 0) -> Callable:
    """A function of one or more tensors whose value is the smooth part plus the shadow, computed
    from the inputs detached; with `rows`, it takes at most that many values per input."""
    smooth, shadow = parts

    def drawn(*inputs, **named):
        inputs = (*inputs, *named.values())  # f(t=x): whatever the student calls its input
        for given in inputs:
            refuse(given, rows)
        return smooth(*inputs) + shadow(*(given.detach() for given in inputs))

    return drawn


def refuse(given, rows: int = 0) -> None:
    """Raise the error a student reads when `given` is no input of a drawn function."""
    if not isinstance(given, torch.Tensor):
        raise TypeError(
            f"this function takes tensors, not {type(given).__name__}: pass it a torch.Tensor"
        )
    if given.is_complex():
        raise TypeError("this function takes real tensors, not complex ones")
    if rows and given.numel() > rows:
        raise ValueError(
            f"this function takes at most {rows} values at a time, but it was given "
            f"{given.numel()}: call it on one chunk at a time"
        )


def _coefficient(rng: random.Random, low: float, high: float) -> float:
    """A number between low and high in size, of either sign, rounded to 2 decimals."""
    return round(rng.choice([-1, 1]) * rng.uniform(low, high), 2)


def _term(rng: random.Random) -> Callable:
    """One smooth term of one variable, of moderate slope on [-3, 3]."""
    a, b, c = _coefficient(rng, 0.5, 1.5), round(rng.uniform(0.5, 1.5), 2), _coefficient(rng, 0, 1)
    kind = rng.choice(["sin", "tanh", "exp", "softplus", "square", "cube", "t sin"])
    if kind == "sin":
        return lambda t: a * torch.sin(b * t + c)
    if kind == "tanh":
        return lambda t: a * torch.tanh(b * t + c)
    if kind == "exp":
        return lambda t: a * torch.exp(b / 3 * t)
    if kind == "softplus":
        return lambda t: a * torch.nn.functional.softplus(b * t + c)
    if kind == "square":
        return lambda t: a * (t + c) ** 2
    if kind == "cube":
        return lambda t: a / 5 * t**3
    return lambda t: a * t * torch.sin(b * t)


def _shadow(rng: random.Random) -> Callable:
    """p1 t + p2 t**2 with |p1| > 6 |p2|: on [-3, 3] a slope of at least 0.3 and a curvature of
    at least 0.4 in size, which autograd does not see."""
    p2 = _coefficient(rng, 0.2, 0.4)
    p1 = _coefficient(rng, 6 * abs(p2) + 0.3, 6 * abs(p2) + 1.0)
    return lambda t: t * p1 + t * t * p2


def elementwise_parts(rng: random.Random, terms: int = 2) -> Parts:
    """A sum of smooth terms applied elementwise, and its shadow."""
    chosen = [_term(rng) for _ in range(terms)]
    return (lambda t: sum(term(t) for term in chosen)), _shadow(rng)


def convex_parts(rng: random.Random) -> Parts:
    """Elementwise, with a second derivative between a > 0 and about 10 on [-3, 3]:
    a * (t - m)**2, a convex term, and a wave too gentle to undo the curvature; and its shadow."""
    a, m = round(rng.uniform(0.5, 1.5), 2), round(rng.uniform(-1.0, 1.0), 2)
    b = round(rng.uniform(0.3, 1.0), 2)
    extra = rng.choice(
        [
            lambda t: torch.cosh(b * t),
            lambda t: torch.nn.functional.softplus(3 * b * t),
            lambda t: torch.exp(b * t),
        ]
    )
    k = round(rng.uniform(0.5, 2.0), 2)
    s = round(min(0.5 * a / k**2, 0.5) * rng.uniform(0.5, 1.0), 3)  # s k**2 <= a / 2
    c = _coefficient(rng, 0, 1)
    return (lambda t: a * (t - m) ** 2 + extra(t) + s * torch.sin(k * t + c)), _shadow(rng)


def of_two_parts(rng: random.Random) -> Parts:
    """A smooth function of two tensors of one shape, elementwise, f(x, y), and its shadow."""
    u, w, mix = _term(rng), _term(rng), _term(rng)
    q3 = _coefficient(rng, 0.2, 0.4)  # each partial of the shadow at least 0.3 in size on [-3, 3]
    q1, q2 = (_coefficient(rng, 3 * abs(q3) + 0.3, 3 * abs(q3) + 1.0) for _ in range(2))
    shadow = lambda x, y: x * q1 + y * q2 + x * y * q3  # noqa: E731
    return (lambda x, y: u(x) * w(y) + mix(x * y)), shadow


def mixing_parts(rng: random.Random, size: int) -> tuple[Parts, int]:
    """A function of a 1-D tensor of `size` elements whose outputs mix its inputs (a matrix, a
    running sum, or elementwise), and the number of outputs it returns."""
    smooth, shadow = elementwise_parts(rng)
    kind = rng.choice(["matrix", "cumsum", "elementwise"])
    if kind == "elementwise":
        return (smooth, shadow), size
    if kind == "cumsum":
        outer, outputs = (lambda z: torch.cumsum(z, 0)), size
    else:
        outputs = rng.randint(2, 4)
        entries = [[round(rng.uniform(-2, 2), 1) for _ in range(size)] for _ in range(outputs)]
        outer = lambda z: torch.tensor(entries, dtype=z.dtype) @ z  # noqa: E731
    return ((lambda t: outer(smooth(t))), (lambda t: outer(shadow(t)))), outputs


def elementwise(rng: random.Random) -> Callable:
    """f(t), applied elementwise."""
    return drawn_function(elementwise_parts(rng))


def convex(rng: random.Random) -> Callable:
    """f(t), applied elementwise, with f'' > 0.4 on [-3, 3] (for Newton's method and descent)."""
    return drawn_function(convex_parts(rng))


def of_two(rng: random.Random) -> Callable:
    """f(x, y), applied elementwise."""
    return drawn_function(of_two_parts(rng))


def mixing(rng: random.Random, size: int) -> tuple[Callable, int]:
    """f(t) for a 1-D t of `size` elements, whose outputs mix its inputs; and their number."""
    parts, outputs = mixing_parts(rng, size)
    return drawn_function(parts), outputs
