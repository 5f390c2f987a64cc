"""Lesson 8's visible examples of each student's own: the functions (and points, directions)
jacobian_by_columns and hvp differentiate, and the data per_sample_grads is tried on."""

import itertools
from dataclasses import dataclass

from grader.variants.examples.base import Example

LESSON = "08_forward_mode_and_hessians"


def _vector(values) -> str:
    return "(" + ", ".join(f"{value:g}" for value in values) + ")"


def _term(coefficient: int, product: str) -> str:
    """`coefficient` times `product`: v_0 v_1, 2 v_0 v_1."""
    return product if coefficient == 1 else f"{coefficient} {product}"


@dataclass(frozen=True)
class Products:
    """Lesson 8's jacobian_by_columns example: f(v) = (a v0 v1, b v1 v2, c v0^2) at x."""

    a: int
    b: int
    c: int
    x: tuple[int, int, int]

    @property
    def value(self) -> list[int]:
        """f(x)."""
        x0, x1, x2 = self.x
        return [self.a * x0 * x1, self.b * x1 * x2, self.c * x0**2]

    @property
    def jacobian(self) -> list[list[int]]:
        """The 3 x 3 Jacobian at x: row i holds the derivatives of output i."""
        a, b, c, (x0, x1, x2) = self.a, self.b, self.c, self.x
        return [[a * x1, a * x0, 0], [0, b * x2, b * x1], [2 * c * x0, 0, 0]]

    @property
    def columns(self) -> list[list[int]]:
        return [list(column) for column in zip(*self.jacobian, strict=True)]


class JacobianFunctions(Example):
    """Lesson 8, exercise 2: jacobian_by_columns(f, x), on f(v) = (a v0 v1, b v1 v2, c v0^2)
    with a, b, c from 1 to 3, at a point x of whole numbers from 1 to 3."""

    lesson = LESSON
    exercise = answer_cell = "jacobian_by_columns"
    what = "example"
    default = Products(a=1, b=1, c=1, x=(1, 2, 3))
    coefficients = range(1, 4)
    coordinates = range(1, 4)

    def every(self) -> list[Products]:
        return [
            Products(a, b, c, x)
            for a, b, c in itertools.product(self.coefficients, repeat=3)
            for x in itertools.product(self.coordinates, repeat=3)
        ]

    def shown(self, examples: Products, plain: bool = False) -> str:
        a, b, c = examples.a, examples.b, examples.c
        columns = ", ".join(_vector(column) for column in examples.columns)
        if plain:
            terms = [_term(a, "v0 v1"), _term(b, "v1 v2"), _term(c, "v0^2")]
            function = f"f(v) = ({', '.join(terms)})"
            point, value = f"x = {_vector(examples.x)}", f"f(x) = {_vector(examples.value)}"
        else:
            terms = [_term(a, "v_0 v_1"), _term(b, "v_1 v_2"), _term(c, "v_0^2")]
            function = "$f(v) = (" + ",\\ ".join(terms) + ")$"
            point = f"$x = {_vector(examples.x)}$"
            value = f"$f(x) = {_vector(examples.value)}$"
        return (
            f"{function} at {point}. There {value}, and the Jacobian's columns, one per input, "
            f"are {columns}."
        )


@dataclass(frozen=True)
class Cubic:
    """Lesson 8's hvp example: f(t) = a t0^2 t1 + b t1^3 at x, along v."""

    a: int
    b: int
    x: tuple[int, int]
    v: tuple[int, int]

    @property
    def gradient(self) -> list[int]:
        a, b, (x0, x1) = self.a, self.b, self.x
        return [2 * a * x0 * x1, a * x0**2 + 3 * b * x1**2]

    @property
    def hessian(self) -> list[list[int]]:
        a, b, (x0, x1) = self.a, self.b, self.x
        return [[2 * a * x1, 2 * a * x0], [2 * a * x0, 6 * b * x1]]

    def times_hessian(self, v) -> list[int]:
        return [sum(h * e for h, e in zip(row, v, strict=True)) for row in self.hessian]

    @property
    def product(self) -> list[int]:
        """H v."""
        return self.times_hessian(self.v)

    @property
    def ones(self) -> list[int]:
        """H times a vector of ones."""
        return self.times_hessian((1, 1))

    @property
    def diagonal(self) -> list[int]:
        """The Hessian's diagonal times v, entry by entry."""
        return [self.hessian[i][i] * self.v[i] for i in range(2)]


class HvpFunctions(Example):
    """Lesson 8, exercise 3: hvp(f, x, v), on f(t) = a t0^2 t1 + b t1^3 (a from 1 to 3, b 1 or
    2) at x of whole numbers from 1 to 3, along v of entries -1, 1 or 2; v is never (1, 1), and no
    slip the visible test names gives H v."""

    lesson = LESSON
    exercise = answer_cell = "hvp"
    what = "example"
    default = Cubic(a=1, b=1, x=(1, 2), v=(1, -1))

    def every(self) -> list[Cubic]:
        every = [
            Cubic(a, b, x, v)
            for a, b in itertools.product(range(1, 4), range(1, 3))
            for x in itertools.product(range(1, 4), repeat=2)
            for v in itertools.product((-1, 1, 2), repeat=2)
        ]
        return [e for e in every if e.product not in (e.gradient, e.ones, e.diagonal)]

    def shown(self, examples: Cubic, plain: bool = False) -> str:
        a, b = examples.a, examples.b
        rows = " and ".join(_vector(row) for row in examples.hessian)
        if plain:
            function = f"f(t) = {_term(a, 't0^2 t1')} + {_term(b, 't1^3')}"
            point, direction = f"x = {_vector(examples.x)}", f"v = {_vector(examples.v)}"
            gradient = _vector(examples.gradient)
            product = f"H v = {_vector(examples.product)}"
        else:
            function = f"$f(t) = {_term(a, 't_0^2 t_1')} + {_term(b, 't_1^3')}$"
            point, direction = f"$x = {_vector(examples.x)}$", f"$v = {_vector(examples.v)}$"
            gradient = f"${_vector(examples.gradient)}$"
            product = f"$H v = {_vector(examples.product)}$"
        return (
            f"{function} at {point}, with {direction}. There the gradient is {gradient}, the "
            f"Hessian's rows are {rows}, and {product}."
        )


@dataclass(frozen=True)
class Batch:
    """Lesson 8's per_sample_grads example: weights w, three examples xs (rows) with targets ys,
    and the loss (x @ w - y) ** 2, whose gradient for one example is 2 (x·w - y) x."""

    w: tuple[int, int]
    xs: tuple[tuple[int, int], ...]
    ys: tuple[int, ...]

    @property
    def residuals(self) -> list[int]:
        """x·w - y, one per example."""
        return [
            x0 * self.w[0] + x1 * self.w[1] - y
            for (x0, x1), y in zip(self.xs, self.ys, strict=True)
        ]

    @property
    def rows(self) -> list[list[int]]:
        """Row i: the gradient of example i's loss with respect to w, 2 (x·w - y) x."""
        return [[2 * r * e for e in x] for r, x in zip(self.residuals, self.xs, strict=True)]


def _matrix(rows) -> str:
    return "[" + ", ".join("[" + ", ".join(f"{e:g}" for e in row) + "]" for row in rows) + "]"


def _list(values) -> str:
    return "[" + ", ".join(f"{e:g}" for e in values) + "]"


class PerSampleData(Example):
    """Lesson 8, exercise 4: per_sample_grads(w, xs, ys, loss), for the squared error of a linear
    model: w of entries -2, -1, 1 or 2, three distinct rows xs of small whole numbers, three
    distinct targets from -1 to 2; every residual is not 0, and the slips the visible test names
    give values apart from the right rows and from each other."""

    lesson = LESSON
    exercise = answer_cell = "per_sample_grads"
    what = "example"
    default = Batch(w=(1, -1), xs=((1, 0), (0, 2), (1, 1)), ys=(0, 1, 2))
    weights = (-2, -1, 1, 2)
    candidate_rows = ((1, 0), (0, 2), (1, 1), (0, 1), (2, 1))
    targets = (-1, 0, 1, 2)

    def every(self) -> list[Batch]:
        return [
            batch
            for w in itertools.product(self.weights, repeat=2)
            for xs in itertools.permutations(self.candidate_rows, 3)
            for ys in itertools.permutations(self.targets, 3)
            if _apart(batch := Batch(w, xs, ys))
        ]

    def draw(self, rng) -> Batch:
        """One set of examples, each equally likely, without making every(): w, xs and ys drawn
        until they are apart (as likely as every() would be)."""
        while True:
            w = tuple(rng.choice(self.weights) for _ in range(2))
            xs = tuple(rng.sample(self.candidate_rows, 3))
            ys = tuple(rng.sample(self.targets, 3))
            if _apart(batch := Batch(w, xs, ys)):
                return batch

    def shown(self, examples: Batch, plain: bool = False) -> str:
        said = (
            f"`w = {_list(examples.w)}`, `xs = {_matrix(examples.xs)}`, "
            f"`ys = {_list(examples.ys)}`, with `loss = lambda w, x, y: (x @ w - y) ** 2`. The "
            f"residuals x·w - y are `{_list(examples.residuals)}`, so the rows 2 (x·w - y) x "
            f"are `{_matrix(examples.rows)}`."
        )
        return said.replace("`", "") if plain else said


def _apart(batch: Batch) -> bool:
    """No residual is 0, and the right rows and the slips' (running sums, 2 (x·w - y) w, the
    rows over 3, the last row in each) are all apart (whole numbers and thirds: apart by 1/3)."""
    residuals = batch.residuals
    if 0 in residuals:
        return False
    rows = [[2 * r * e for e in x] for r, x in zip(residuals, batch.xs, strict=True)]
    running = [
        rows[0],
        [a + b for a, b in zip(*rows[:2], strict=True)],
        [a + b + c for a, b, c in zip(*rows, strict=True)],
    ]
    to_x = [[2 * r * e for e in batch.w] for r in residuals]
    mean = [[e / 3 for e in row] for row in rows]
    values = [rows, running, to_x, mean, [rows[-1]] * 3]
    return all(a != b for a, b in itertools.combinations(values, 2))


EXAMPLES: tuple[Example, ...] = (JacobianFunctions(), HvpFunctions(), PerSampleData())
