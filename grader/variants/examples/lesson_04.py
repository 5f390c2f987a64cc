"""Lesson 4's visible examples of each student's own: the weights and batches batch_gradients and
accumulated_gradient differentiate `mse` on, the sequence fit_sequence trains on, and the
function and points of hidden_gradient's chain."""

import itertools
import math
from dataclasses import dataclass

from grader.variants.examples.base import Example
from grader.variants.examples.writing import far_apart, rounded


def floats(values) -> str:
    """A list of numbers as a float tensor's source writes them: [1.0, -0.5]."""
    return "[" + ", ".join(repr(float(v) + 0.0) for v in values) + "]"


def rows(matrix) -> str:
    """A matrix as a float tensor's source writes it: [[1.0, 2.0], [0.0, 1.0]]."""
    return "[" + ", ".join(floats(row) for row in matrix) + "]"


def mse_gradient(w, x, y) -> list[float]:
    """The gradient of mean((x @ w - y)**2) with respect to w, written out:
    (2 / n) x^T (x w - y)."""
    errors = [
        sum(a * b for a, b in zip(row, w, strict=True)) - t for row, t in zip(x, y, strict=True)
    ]
    return [
        2 * sum(e * row[j] for e, row in zip(errors, x, strict=True)) / len(y)
        for j in range(len(w))
    ]


# Exercise 1 · One gradient per batch


@dataclass(frozen=True)
class Batches:
    """batch_gradients' example: w = (p, q), and two batches of `mse` whose targets are today's,
    shifted by c (the first) and d (the second)."""

    p: float
    q: float
    c: float
    d: float

    x0 = ((1.0, 2.0), (0.0, 1.0), (3.0, 1.0), (1.0, 1.0), (2.0, 0.0))
    x1 = ((2.0, 1.0), (1.0, -1.0), (0.0, 2.0), (1.0, 0.0))

    @property
    def w(self) -> tuple[float, float]:
        return (self.p, self.q)

    @property
    def y0(self) -> tuple[float, ...]:
        return tuple(t + self.c for t in (0.0, 1.0, 1.0, 2.0, 1.0))

    @property
    def y1(self) -> tuple[float, ...]:
        return tuple(t + self.d for t in (1.0, 0.0, -1.0, 2.0))

    @property
    def gradients(self) -> tuple[list[float], list[float]]:
        """Each batch's gradient of `mse`, by the formula."""
        return mse_gradient(self.w, self.x0, self.y0), mse_gradient(self.w, self.x1, self.y1)


class BatchGradients(Example):
    """Lesson 4, exercise 1: batch_gradients(w, batches, mse), on two batches of 5 and 4 rows."""

    lesson = "04_retain_graph_and_accumulation"
    exercise = answer_cell = "batch_gradients"
    what = "example"
    default = Batches(p=1.0, q=-1.0, c=0.0, d=0.0)
    weights = (-1.0, -0.5, 0.5, 1.0, 1.5, 2.0)
    shifts = (-1.0, -0.5, 0.0, 0.5, 1.0)

    def every(self) -> list[Batches]:
        return [
            b
            for b in itertools.starmap(
                Batches, itertools.product(self.weights, self.weights, self.shifts, self.shifts)
            )
            if self.clear(b)
        ]

    @staticmethod
    def clear(b: Batches) -> bool:
        """Whether the usual slips give values apart from the right ones: the batches' gradients
        are not 0 and differ, and a sum over rows (5, then 4 of them) shows."""
        g0, g1 = b.gradients
        both = [u + v for u, v in zip(g0, g1, strict=True)]
        return far_apart(g0, g1, [5 * v for v in g0]) and far_apart(g1, both, [4 * v for v in g1])

    def shown(self, examples: Batches, plain: bool = False) -> str:
        g0, g1 = examples.gradients
        said = (
            f"`w = torch.tensor({floats(examples.w)}, requires_grad=True)` and two batches for "
            f"`mse`: `x = {rows(examples.x0)}`, `y = {floats(examples.y0)}`, then "
            f"`x = {rows(examples.x1)}`, `y = {floats(examples.y1)}`. The gradients are "
            f"`{rounded(g0)}` and `{rounded(g1)}`."
        )
        return said.replace("`", "") if plain else said


# Exercise 2 · Micro-batches of unequal size


@dataclass(frozen=True)
class Chunks:
    """accumulated_gradient's example: w = (p, q), today's 7 rows with targets shifted by c, in
    chunks of `chunk_size` rows (the last one shorter), with w.grad holding an old gradient."""

    p: float
    q: float
    c: float
    chunk_size: int

    x = ((1.0, 2.0), (0.0, 1.0), (3.0, 1.0), (1.0, 1.0), (2.0, 0.0), (1.0, 3.0), (2.0, 2.0))
    old = (0.5, 0.5)

    @property
    def w(self) -> tuple[float, float]:
        return (self.p, self.q)

    @property
    def y(self) -> tuple[float, ...]:
        return tuple(t + self.c for t in (0.0, 1.0, 1.0, 2.0, 1.0, 3.0, 1.0))

    @property
    def sizes(self) -> list[int]:
        n, size = len(self.y), self.chunk_size
        return [min(size, n - start) for start in range(0, n, size)]

    @property
    def gradient(self) -> list[float]:
        """The full batch's gradient of `mse`, by the formula."""
        return mse_gradient(self.w, self.x, self.y)

    @property
    def chunk_gradients(self) -> list[list[float]]:
        """Each chunk's gradient of its own `mse`, by the formula."""
        size = self.chunk_size
        return [
            mse_gradient(self.w, self.x[i : i + size], self.y[i : i + size])
            for i in range(0, len(self.y), size)
        ]


class AccumulatedGradient(Example):
    """Lesson 4, exercise 2: accumulated_gradient(w, x, y, chunk_size, mse), 7 rows in chunks of
    2 or 3."""

    lesson = "04_retain_graph_and_accumulation"
    exercise = answer_cell = "accumulated_gradient"
    what = "example"
    default = Chunks(p=1.0, q=-1.0, c=0.0, chunk_size=2)
    weights = (-1.0, -0.5, 0.5, 1.0, 1.5, 2.0)
    shifts = (-1.0, -0.5, 0.0, 0.5, 1.0)
    chunk_sizes = (2, 3)

    def every(self) -> list[Chunks]:
        return [
            c
            for c in itertools.starmap(
                Chunks,
                itertools.product(self.weights, self.weights, self.shifts, self.chunk_sizes),
            )
            if self.clear(c)
        ]

    @staticmethod
    def clear(c: Chunks) -> bool:
        """Whether the usual slips give values apart from the right one and from each other."""
        full, means, sizes = c.gradient, c.chunk_gradients, c.sizes
        k, n = len(sizes), len(c.y)
        total = [sum(g[j] for g in means) for j in range(2)]
        return far_apart(
            full,
            [v / k for v in total],
            total,
            [v * sizes[-1] / n for v in means[-1]],
            means[-1],
            [v * n for v in full],
            [o + v for o, v in zip(c.old, full, strict=True)],
            [0.0, 0.0],
        )

    def shown(self, examples: Chunks, plain: bool = False) -> str:
        said = (
            f"`w = torch.tensor({floats(examples.w)}, requires_grad=True)`, whose `w.grad` holds "
            f"an old `{floats(examples.old)}`, the 7 rows `x = {rows(examples.x)}` with "
            f"`y = {floats(examples.y)}`, and `chunk_size = {examples.chunk_size}`: chunks of "
            f"{', '.join(map(str, examples.sizes))} rows. Afterwards `w.grad` should be "
            f"`{rounded(examples.gradient)}`."
        )
        return said.replace("`", "") if plain else said


# Exercise 4 · Fix the loop that carries a state


@dataclass(frozen=True)
class Sequence:
    """fit_sequence's example: cell = tanh, from w = w0 with rate lr, on today's inputs turned
    by `turn` places and today's targets shifted by c."""

    w0: float
    lr: float
    turn: int
    c: float

    @property
    def xs(self) -> tuple[float, ...]:
        xs = (1.0, -0.5, 0.8, 0.3)
        return xs[self.turn :] + xs[: self.turn]

    @property
    def ys(self) -> tuple[float, ...]:
        return tuple(round(t + self.c, 10) for t in (0.6, 0.1, 0.5, 0.4))

    def trained(self, *, carry: bool = True, clear: bool = True) -> float:
        """w after the loop, by the formula of each step's gradient: with s = tanh(w s' + x_t)
        and s' the state carried in, d(s - y_t)**2/dw = 2 (s - y_t) (1 - s**2) s'; `carry`
        False: a state of 0 carried in, `clear` False: gradients never cleared (slips)."""
        w, s, held = self.w0, 0.0, 0.0
        for x_t, y_t in zip(self.xs, self.ys, strict=True):
            before = s if carry else 0.0
            s = math.tanh(w * before + x_t)
            gradient = 2 * (s - y_t) * (1 - s * s) * before
            held = held + gradient if not clear else gradient
            w -= self.lr * held
        return w


class FitSequence(Example):
    """Lesson 4, exercise 4: fit_sequence(w, xs, ys, lr, torch.tanh) on 4 steps."""

    lesson = "04_retain_graph_and_accumulation"
    exercise = "fit_sequence"
    answer_cell = "twice_error"
    what = "example"
    default = Sequence(w0=0.5, lr=0.3, turn=0, c=0.0)
    starts = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    rates = (0.2, 0.3, 0.4)
    shifts = (-0.2, -0.1, 0.0, 0.1, 0.2)

    def every(self) -> list[Sequence]:
        return [
            s
            for s in itertools.starmap(
                Sequence, itertools.product(self.starts, self.rates, range(4), self.shifts)
            )
            if far_apart([s.trained()], [s.w0], [s.trained(clear=False)], by=1e-2)
        ]

    def shown(self, examples: Sequence, plain: bool = False) -> str:
        said = (
            f"`w = torch.tensor({examples.w0!r}, requires_grad=True)`, "
            f"`xs = torch.tensor({floats(examples.xs)})`, "
            f"`ys = torch.tensor({floats(examples.ys)})`, `lr = {examples.lr}` and "
            f"`cell = torch.tanh`. After the loop, `w` should be "
            f"`{round(examples.trained(), 4)}`."
        )
        return said.replace("`", "") if plain else said


# Exercise 5 · The gradient of a hidden tensor, further back


@dataclass(frozen=True)
class Chain:
    """hidden_gradient's example: g(h) = h**2 + b h applied `steps` times to tanh(x), at three
    distinct points x."""

    b: int
    steps: int
    x: tuple[float, float, float]

    @property
    def formula(self) -> str:
        return f"lambda h: h**2 + {self.b} * h" if self.b != 1 else "lambda h: h**2 + h"

    def g(self, h):
        return h**2 + self.b * h

    def chain(self) -> list[list[float]]:
        """The tensors of the chain, tanh(x) first, by the formula."""
        hs = [[math.tanh(v) for v in self.x]]
        for _ in range(self.steps):
            hs.append([h * h + self.b * h for h in hs[-1]])
        return hs

    def gradients(self) -> list[list[float]]:
        """The gradient of the sum of the last tensor with respect to each tensor of the chain,
        first to last, by the chain rule: g'(h) = 2 h + b, one factor per step."""
        hs = self.chain()
        grads = [[1.0] * len(self.x)]
        for h in reversed(hs[:-1]):
            grads.insert(0, [d * (2 * v + self.b) for d, v in zip(grads[0], h, strict=True)])
        return grads


class HiddenGradient(Example):
    """Lesson 4, exercise 5: hidden_gradient(x, g, steps), g a quadratic, 2 or 3 steps."""

    lesson = "04_retain_graph_and_accumulation"
    exercise = answer_cell = "hidden_gradient"
    what = "example"
    default = Chain(b=3, steps=2, x=(0.0, 1.0, -2.0))
    linear = (1, 2, 3, 4)
    step_counts = (2, 3)
    points = (-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)

    def every(self) -> list[Chain]:
        return [
            c
            for c in itertools.starmap(
                Chain,
                itertools.product(
                    self.linear, self.step_counts, itertools.permutations(self.points, 3)
                ),
            )
            if self.clear(c)
        ]

    @staticmethod
    def clear(c: Chain) -> bool:
        """Whether the right gradient stays of a size float32 keeps to 1e-5, and the gradients
        with respect to x and to each tensor of the chain are apart from it."""
        grads, first = c.gradients(), c.chain()[0]
        leaf = [d * (1 - h * h) for d, h in zip(grads[0], first, strict=True)]
        return max(map(abs, grads[0])) < 500 and far_apart(*grads, leaf)

    def shown(self, examples: Chain, plain: bool = False) -> str:
        said = (
            f"`x = torch.tensor({floats(examples.x)}, requires_grad=True)`, "
            f"`g = {examples.formula}` and `steps = {examples.steps}`. The gradient with "
            f"respect to `torch.tanh(x)` is, rounded, `{rounded(examples.gradients()[0])}`."
        )
        return said.replace("`", "") if plain else said


EXAMPLES: tuple[Example, ...] = (
    BatchGradients(),
    AccumulatedGradient(),
    FitSequence(),
    HiddenGradient(),
)
