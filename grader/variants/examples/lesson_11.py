"""Lesson 11's visible examples of each student's own: the graphs that the engine's topological
order and backward pass walk, and the functions that it differentiates and descends on.

The right answers and the usual slips' answers come from `grader.lesson_checks.lesson_11`, which
the visible tests use too; it imports torch, so it is imported only when examples are drawn or
shown (a notebook has torch loaded by then)."""

import itertools
from dataclasses import dataclass

from grader.variants.examples.base import Example
from grader.variants.examples.writing import far_apart

LESSON = "11_an_engine_of_your_own"


class _EngineExample(Example):
    """An example of lesson 11."""

    lesson = LESSON


def _checks():
    from grader.lesson_checks import lesson_11

    return lesson_11


def _tenths(low: int, high: int, signs: bool = True) -> list[float]:
    """low/10 to high/10 by tenths, and their negatives with `signs`."""
    sizes = [round(i / 10, 1) for i in range(low, high + 1)]
    return [*sizes, *(-s for s in sizes)] if signs else sizes


def _n(value: float) -> str:
    """A number as the examples show it: up to six significant digits, no -0."""
    shown = f"{value:.6g}"
    return "0" if shown == "-0" else shown


def _in_brackets(value: float) -> str:
    return f"({_n(value)})" if value < 0 else _n(value)


def _say(markdown: str, plain: bool) -> str:
    """The Markdown, or its plain text: no backticks, no dollar signs."""
    return markdown.replace("`", "").replace("$", "") if plain else markdown


# Exercise 2 · topological_order


@dataclass(frozen=True)
class Graphs:
    """Exercise 2's visible graphs: the diamond x, a = x * c, b = a + d, out = a * b, and
    y = x * x + x at x = w. (The test's chain of 5000 steps is the same for everyone.)"""

    x: float
    c: float
    d: float
    w: float


class OrderGraphs(_EngineExample):
    """Lesson 11, exercise 2: topological_order on a diamond and on x * x + x, values drawn."""

    exercise = answer_cell = "topological_order"
    what = "graphs"
    default = Graphs(x=2.0, c=3.0, d=1.0, w=1.5)

    def every(self) -> list[Graphs]:
        return [
            Graphs(x, c, d, w)
            for x, c, d, w in itertools.product(
                [s / 2 for s in range(-6, 7) if s], [2.0, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0],
                [s / 2 for s in range(-5, 6) if s],
            )
        ]  # fmt: skip

    def shown(self, examples: Graphs, plain: bool = False) -> str:
        x, c, d, w = examples.x, examples.c, examples.d, examples.w
        said = (
            f"the diamond `x = Value({x!r})`, `a = x * {c!r}`, `b = a + {d!r}`, `out = a * b`: "
            f"6 nodes, the constants {_n(c)} and {_n(d)} among them (one valid order: x, "
            f"{_n(c)}, a, {_n(d)}, b, out); and `y = x * x + x` at `x = Value({w!r})`: 3 nodes, "
            "x listed as a parent twice by `x * x` and once more by the sum, yet once in the "
            "order. The test also orders section 4's chain of 5000 steps."
        )
        return _say(said, plain)


# Exercise 3 · backward


@dataclass(frozen=True)
class Leaves:
    """Exercise 3's visible graph, at its leaves: a = x * y, s = a * a, out = s + x."""

    x: float
    y: float


class BackwardGraph(_EngineExample):
    """Lesson 11, exercise 3: backward on a graph with a node used twice by one operation and a
    leaf reached twice, its leaves' values drawn."""

    exercise = answer_cell = "backward"
    what = "graph"
    default = Leaves(x=2.0, y=-1.0)

    def every(self) -> list[Leaves]:
        every = []
        for x, y in itertools.product(_tenths(5, 25), repeat=2):
            right, slips = _checks().backward_case(x, y)
            if far_apart(list(right.values()), *slips.values(), by=0.05):
                every.append(Leaves(x, y))
        return every

    def shown(self, examples: Leaves, plain: bool = False) -> str:
        x, y = examples.x, examples.y
        a = x * y
        right, _ = _checks().backward_case(x, y)
        if plain:
            back = (
                f"d out/ds = 1, d out/da = 2a = {_n(right['a'])}, "
                f"d out/dx = 1 + y * {_in_brackets(right['a'])} = {_n(right['x'])} and "
                f"d out/dy = x * {_in_brackets(right['a'])} = {_n(right['y'])}"
            )
        else:
            back = (
                rf"$\partial\, out/\partial s = 1$, $\partial\, out/\partial a = 2a = "
                rf"{_n(right['a'])}$, $\partial\, out/\partial x = 1 + y \cdot "
                rf"{_in_brackets(right['a'])} = {_n(right['x'])}$ and $\partial\, out/\partial "
                rf"y = x \cdot {_in_brackets(right['a'])} = {_n(right['y'])}$"
            )
        said = (
            f"`x = Value({x!r})`, `y = Value({y!r})`, `a = x * y` = {_n(a)}, `s = a * a` = "
            f"{_n(a * a)}, `out = s + x` = {_n(a * a + x)}, and the test calls "
            f"`backward(out, [x, y, a, s, out])`. Back from out: {back}."
        )
        return _say(said, plain)


# Exercise 4 · gradients


@dataclass(frozen=True)
class Point:
    """Exercise 4's visible function, a * e**(k b) + tanh(a - b) + a constant sin(a), and the
    point (a, b) it is differentiated at."""

    a: float
    b: float
    k: float

    @property
    def xs(self) -> list[float]:
        return [self.a, self.b]


def _gradients_code(k: float) -> str:
    grows = "b.exp()" if k == 1 else f"({k!r} * b).exp()"
    return f"f(a, b) = a * {grows} + (a - b).tanh() + constant_from(a, math.sin)"


class GradientsFunction(_EngineExample):
    """Lesson 11, exercise 4: gradients of a function of two Values with a constant computed from
    one of them, its coefficient and point drawn."""

    exercise = answer_cell = "gradients"
    what = "function"
    default = Point(a=0.5, b=-1.0, k=1.0)

    def every(self) -> list[Point]:
        every = []
        for a, b, k in itertools.product(_tenths(2, 12), _tenths(2, 15), [0.5, 1.0, 1.5, 2.0]):
            right, slips = _checks().gradients_case(a, b, k)
            if far_apart(right, *slips.values(), by=0.01):
                every.append(Point(a, b, k))
        return every

    def shown(self, examples: Point, plain: bool = False) -> str:
        a, b, k = examples.a, examples.b, examples.k
        (da, db), _ = _checks().gradients_case(a, b, k)
        if plain:
            grows = "e**b" if k == 1 else f"e**({_n(k)} b)"
            times = "a" if k == 1 else f"{_n(k)} a"
            slopes = (
                f"d f/da = {grows} + 1 - tanh(a - b)**2 = {da:.6f} and "
                f"d f/db = {times} {grows} - (1 - tanh(a - b)**2) = {db:.6f}"
            )
        else:
            grows = "e^{b}" if k == 1 else f"e^{{{_n(k)}b}}"
            times = "a" if k == 1 else rf"{_n(k)}\,a"
            slopes = (
                rf"$\partial f/\partial a = {grows} + 1 - \tanh^2(a - b) = {da:.6f}$ and "
                rf"$\partial f/\partial b = {times}\,{grows} - (1 - \tanh^2(a - b)) = {db:.6f}$"
            )
        said = (
            f"`{_gradients_code(k)}` at `a = {a!r}`, `b = {b!r}`: {slopes}. "
            "`constant_from(a, math.sin)` is sin(a) recorded as a Value with no parents: a "
            "constant to the chain rule, as `detach()` makes one."
        )
        return _say(said, plain)


# Exercise 5 · descend


@dataclass(frozen=True)
class Start:
    """Exercise 5's visible function, (a - c)**2 + tanh(a b) + b**2 + a constant cos(b), and the
    point gradient descent starts from, with learning rate 0.1 for three steps."""

    c: float
    a: float
    b: float
    lr = 0.1
    steps = 3

    @property
    def xs(self) -> list[float]:
        return [self.a, self.b]


def _descend_code(c: float) -> str:
    return f"f(a, b) = (a - {c!r}) ** 2 + (a * b).tanh() + b**2 + constant_from(b, math.cos)"


class DescendFunction(_EngineExample):
    """Lesson 11, exercise 5: three steps of gradient descent on a function of two Values with a
    constant computed from one of them, its minimum's place and the start drawn."""

    exercise = answer_cell = "descend"
    what = "function"
    default = Start(c=1.0, a=0.0, b=0.5)

    def every(self) -> list[Start]:
        every = []
        for c, a, b in itertools.product([0.5, 1.0, 1.5, 2.0], _tenths(-10, 10, False),
                                         _tenths(2, 10)):  # fmt: skip
            start = Start(c, a, b)
            right, slips = _checks().descend_case(c, start.xs, start.lr, start.steps)
            if far_apart(right, *slips.values(), by=0.01):
                every.append(start)
        return every

    def shown(self, examples: Start, plain: bool = False) -> str:
        c, xs, lr = examples.c, examples.xs, examples.lr
        right, slips = _checks().descend_case(c, xs, lr, examples.steps)
        said = (
            f"`{_descend_code(c)}`, from `{xs!r}` with `lr = {lr!r}`: three steps reach "
            f"[{right[0]:.6f}, {right[1]:.6f}] (two reach [{slips['one_short'][0]:.6f}, "
            f"{slips['one_short'][1]:.6f}]). `constant_from(b, math.cos)` is cos(b) recorded as "
            "a Value with no parents: a constant to the chain rule (section 5)."
        )
        return _say(said, plain)


EXAMPLES: tuple[Example, ...] = (
    OrderGraphs(),
    BackwardGraph(),
    GradientsFunction(),
    DescendFunction(),
)
