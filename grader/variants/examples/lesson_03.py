"""Lesson 3's visible examples of each student's own: the function and weights of
weighted_grads, the shapes unbroadcast sums back to."""

import itertools
from dataclasses import dataclass

from grader.variants.examples.base import Example


@dataclass(frozen=True)
class Sizes:
    """Lesson 3's unbroadcast cases, by their sizes: grads of shape (m, n), (k, k) and
    (j, p, q), each summed back to shapes that broadcast to it."""

    m: int
    n: int
    k: int
    j: int
    p: int
    q: int

    @property
    def cases(self) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
        """(the grad's shape, the input's shape) for each case the visible test checks: leading
        dimensions only, a kept dimension of size 1 either way, nothing to sum, a square grad
        (where summing the wrong dimension shows), and both at once."""
        m, n, k, j, p, q = self.m, self.n, self.k, self.j, self.p, self.q
        return (
            ((m, n), (n,)),
            ((m, n), (m, 1)),
            ((m, n), (1, n)),
            ((m, n), (m, n)),
            ((k, k), (k,)),
            ((j, p, q), (p, 1)),
        )


class UnbroadcastShapes(Example):
    """Lesson 3, exercise 6: unbroadcast(grad, shape), on shapes of sizes 2 to 5."""

    lesson = "03_backward_and_scalar_outputs"
    exercise = answer_cell = "unbroadcast"
    default = Sizes(m=2, n=3, k=2, j=2, p=3, q=4)
    sizes = range(2, 6)

    def every(self) -> list[Sizes]:
        pairs = [(m, n) for m, n in itertools.product(self.sizes, repeat=2) if m != n]
        return [
            Sizes(m, n, k, j, p, q)
            for (m, n), k, (j, p, q) in itertools.product(
                pairs, self.sizes, itertools.product(self.sizes, repeat=3)
            )
        ]

    def shown(self, examples: Sizes, plain: bool = False) -> str:
        m, n, j, p, q = examples.m, examples.n, examples.j, examples.p, examples.q
        first = f"unbroadcast(torch.ones({m}, {n}), ({n},))"
        second = f"unbroadcast(torch.ones({j}, {p}, {q}), ({p}, 1))"
        ones = ", ".join([f"{m}."] * n)
        said = (
            f"`{first}` is `tensor([{ones}])`, and `{second}` is a {p}×1 tensor whose entries "
            f"are all {j * q}. The visible test checks these and four more cases of your own."
        )
        return said.replace("`", "") if plain else said


@dataclass(frozen=True)
class RowWeights:
    """Lesson 3's weighted_grads example: z = x**2 @ A for a 2x3 x, with A = [[p, 0], [1, q],
    [0, -r]], the rows of z weighted by v1 = [1, 0] and by v2 = [s, -t]."""

    p: int
    q: int
    r: int
    s: int
    t: int

    x = ((1.0, 2.0, -1.0), (0.5, 1.0, 3.0))
    v1 = (1.0, 0.0)

    @property
    def A(self) -> tuple[tuple[float, ...], ...]:  # noqa: N802 (the matrix's name in the text)
        return ((float(self.p), 0.0), (1.0, float(self.q)), (0.0, -float(self.r)))

    @property
    def v2(self) -> tuple[float, float]:
        return (float(self.s), -float(self.t))


class RowWeightsExample(Example):
    """Lesson 3, exercise 4: weighted_grads(f, x, v1, v2) on f(t) = t**2 @ A."""

    lesson = "03_backward_and_scalar_outputs"
    exercise = answer_cell = "weighted_grads"
    what = "example"
    default = RowWeights(p=1, q=2, r=1, s=2, t=1)
    coefficients = range(1, 4)

    def every(self) -> list[RowWeights]:
        return [RowWeights(*c) for c in itertools.product(self.coefficients, repeat=5)]

    def shown(self, examples: RowWeights, plain: bool = False) -> str:
        rows = ", ".join(f"[{a:g}, {b:g}]" for a, b in examples.A)
        x = ", ".join(f"[{', '.join(f'{v:g}' for v in row)}]" for row in examples.x)
        said = (
            f"`f = lambda t: t**2 @ A` with `A = torch.tensor([{rows}])`, at "
            f"`x = torch.tensor([{x}], requires_grad=True)` (so `z` is 2×2), with "
            f"`v1 = torch.tensor([1., 0.])` and `v2 = torch.tensor([{examples.s}., "
            f"-{examples.t}.])`. The visible test checks this example."
        )
        return said.replace("`", "") if plain else said


EXAMPLES: tuple[Example, ...] = (UnbroadcastShapes(), RowWeightsExample())
