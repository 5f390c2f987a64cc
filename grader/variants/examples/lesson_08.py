"""Lesson 8's visible examples of each student's own: the functions (and points, directions)
jacobian_by_columns and hvp differentiate."""

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


EXAMPLES: tuple[Example, ...] = (JacobianFunctions(), HvpFunctions())
