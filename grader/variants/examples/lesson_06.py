"""Lesson 6's visible examples of each student's own: the graphs exercises 3 to 6 walk.

Exercises 3 and 4 (consumer_counts, topological_order) walk a graph where one tensor `y` feeds
two nodes, one of which (`y * y`) lists it twice; exercises 5 and 6 (manual_backward,
gradient_at) walk a diamond like section 6's, where `a` reaches `out` directly and through `b`.
What varies is the operations, hence the nodes' names, how often `y` is used, and the numbers.
The graphs are built in `grader.lesson_checks.lesson_06`, from the operations given here.
"""

import itertools
from dataclasses import dataclass
from functools import partial

from grader.variants.examples.base import Example

# Each operation as the lesson writes it: the grad_fn node it makes, how many times that node
# lists its input in next_functions, and the operation itself.
MAKE_Y = {  # y from the leaf x
    "x + 2": ("AddBackward0", lambda x: x + 2),
    "x * 2": ("MulBackward0", lambda x: x * 2),
    "x - 2": ("SubBackward0", lambda x: x - 2),
    "x / 2": ("DivBackward0", lambda x: x / 2),
    "x.sin()": ("SinBackward0", lambda x: x.sin()),
    "x.exp()": ("ExpBackward0", lambda x: x.exp()),
}
USE_Y = {  # a node that uses y: (name, times it lists y, operation)
    "y + 1": ("AddBackward0", 1, lambda y: y + 1),
    "y * 3": ("MulBackward0", 1, lambda y: y * 3),
    "y - 1": ("SubBackward0", 1, lambda y: y - 1),
    "y.sin()": ("SinBackward0", 1, lambda y: y.sin()),
    "y.cos()": ("CosBackward0", 1, lambda y: y.cos()),
    "y.exp()": ("ExpBackward0", 1, lambda y: y.exp()),
    "y * y": ("MulBackward0", 2, lambda y: y * y),
    "y + y": ("AddBackward0", 2, lambda y: y + y),
}
COMBINE = {
    "*": ("MulBackward0", lambda u, v: u * v),
    "+": ("AddBackward0", lambda u, v: u + v),
    "-": ("SubBackward0", lambda u, v: u - v),
}
REDUCE = {
    "sum": ("SumBackward0", lambda t: t.sum()),
    "mean": ("MeanBackward0", lambda t: t.mean()),
}
MAKE_B = {  # b from a: (name, operation, b's value, db/da)
    **{
        f"a + {m}": ("AddBackward0", lambda a, m=m: a + m, lambda a, m=m: a + m, lambda a: 1)
        for m in range(1, 10)
    },
    **{
        f"a - {m}": ("SubBackward0", lambda a, m=m: a - m, lambda a, m=m: a - m, lambda a: 1)
        for m in range(1, 10)
    },
    "a ** 2": ("PowBackward0", lambda a: a**2, lambda a: a**2, lambda a: 2 * a),
}


def _code(text: str, plain: bool) -> str:
    return text if plain else f"`{text}`"


@dataclass(frozen=True)
class TwoUses:
    """out = (left <combine> right).<reduce>() with y = <make_y> and x = torch.ones(2, 2), a
    leaf: y feeds the nodes of `left` and `right`, and at least one of them (such as `y * y`)
    lists it twice."""

    make_y: str
    left: str
    right: str
    combine: str
    reduce: str

    @property
    def combined(self) -> str:
        """What the node of the combine makes: (y + 1) * (y * y)."""
        left, right = (f"({u})" if " " in u else u for u in (self.left, self.right))
        return f"{left} {self.combine} {right}"

    @property
    def formula(self) -> str:
        return f"out = ({self.combined}).{self.reduce}()"

    @property
    def where(self) -> str:
        """The graph, as the test's messages name it."""
        return f"{self.formula} with y = {self.make_y}"

    @property
    def y_uses(self) -> int:
        """How many entries of next_functions point to y's node."""
        return USE_Y[self.left][1] + USE_Y[self.right][1]

    def nodes(self) -> list[tuple[str, str, int]]:
        """Each node of the graph, from the output back: the tensor it made, its name and how
        many entries of next_functions point to it (the leaf x: its AccumulateGrad node)."""
        return [
            ("out", REDUCE[self.reduce][0], 0),
            (self.combined, COMBINE[self.combine][0], 1),
            (self.left, USE_Y[self.left][0], 1),
            (self.right, USE_Y[self.right][0], 1),
            ("y", MAKE_Y[self.make_y][0], self.y_uses),
            ("x", "AccumulateGrad", 1),
        ]

    def named(self, plain: bool) -> list[str]:
        """The nodes as the text names them: "`SumBackward0` (of `out`)", ..."""
        c = partial(_code, plain=plain)
        return [f"{c(name)} (of {c(tensor)})" for tensor, name, _ in self.nodes()]


class _TwoUsesGraphs(Example):
    lesson = "06_backward_by_hand"
    what = "example graph"
    default = TwoUses(make_y="x + 2", left="y + 1", right="y * y", combine="*", reduce="sum")

    def every(self) -> list[TwoUses]:
        pairs = [
            (left, right)
            for left, right in itertools.product(USE_Y, repeat=2)
            if left != right and 2 in (USE_Y[left][1], USE_Y[right][1])
        ]
        return [
            TwoUses(make_y, left, right, combine, reduce)
            for make_y, (left, right), combine, reduce in itertools.product(
                MAKE_Y, pairs, COMBINE, REDUCE
            )
        ]

    def _graph(self, examples: TwoUses, plain: bool) -> str:
        c = partial(_code, plain=plain)
        return f"{c(examples.formula)} where {c('y = ' + examples.make_y)} and {c('x')} is a leaf"


class ConsumerCountsGraph(_TwoUsesGraphs):
    """Lesson 6, exercise 3: consumer_counts(out) on a graph of one's own."""

    exercise = answer_cell = "consumer_counts"

    def shown(self, examples: TwoUses, plain: bool = False) -> str:
        counts = [
            f"{named} {count}"
            for named, (_, _, count) in zip(examples.named(plain), examples.nodes(), strict=True)
        ]
        return (
            f"{self._graph(examples, plain)}. {_code('consumer_counts(out)', plain)} gives "
            f"{', '.join(counts[:-1])} and {counts[-1]}."
        )


class TopologicalOrderGraph(_TwoUsesGraphs):
    """Lesson 6, exercise 4: topological_order(out, counts) on a graph of one's own."""

    exercise = answer_cell = "topological_order"

    def shown(self, examples: TwoUses, plain: bool = False) -> str:
        named = examples.named(plain)
        return (
            f"{self._graph(examples, plain)}. A topological order of its nodes: {named[0]}, "
            f"{named[1]}, then {named[2]} and {named[3]} in either order, then {named[4]} "
            f"and {named[5]}."
        )


@dataclass(frozen=True)
class Diamond:
    """a = k * x, b = <make_b>, out = a * b, at x = <at> (a 0-d leaf): the node of a receives a
    gradient from the node of out directly and one through the node of b."""

    k: int
    make_b: str
    at: int

    @property
    def make_a(self) -> str:
        return f"{self.k} * x"

    @property
    def a(self) -> int:
        return self.k * self.at

    @property
    def b(self) -> int:
        return MAKE_B[self.make_b][2](self.a)

    @property
    def direct(self) -> int:
        """What the node of out sends to a: b."""
        return self.b

    @property
    def through_b(self) -> int:
        """What the node of b sends to a: a * db/da."""
        return self.a * MAKE_B[self.make_b][3](self.a)

    @property
    def at_a(self) -> int:
        """d out / da: the sum of the two."""
        return self.direct + self.through_b

    @property
    def x_grad(self) -> int:
        return self.k * self.at_a

    @property
    def where(self) -> str:
        """The graph, as the test's messages name it."""
        return f"out = a * b with a = {self.make_a}, b = {self.make_b}"

    def graph(self, plain: bool) -> str:
        c = partial(_code, plain=plain)
        return (
            f"{c('a = ' + self.make_a)}, {c('b = ' + self.make_b)}, "
            f"{c('out = a * b')}, at {c(f'x = {self.at}')} (a = {self.a}, "
            f"b = {self.b})"
        )


class _Diamonds(Example):
    lesson = "06_backward_by_hand"
    what = "example graph"
    default = Diamond(k=3, make_b="a + 1", at=2)

    def every(self) -> list[Diamond]:
        return [
            Diamond(k, make_b, at)
            for k, make_b, at in itertools.product(range(2, 6), MAKE_B, range(1, 6))
            if Diamond(k, make_b, at).b > 0  # b = a - m with m < a
        ]


class ManualBackwardGraph(_Diamonds):
    """Lesson 6, exercise 5: manual_backward(out, order) on a diamond of one's own."""

    exercise = answer_cell = "manual_backward"

    def shown(self, examples: Diamond, plain: bool = False) -> str:
        c = partial(_code, plain=plain)
        name_b = MAKE_B[examples.make_b][0]
        return (
            f"{examples.graph(plain)}. The node of {c('a')} receives {examples.direct} from the "
            f"node of {c('out')} and {examples.through_b} through the node of {c('b')} "
            f"({c(name_b)}), {examples.at_a} in all, so {c('manual_backward(out, order)')} "
            f"leaves {c('x.grad')} = {examples.k} × {examples.at_a} = {examples.x_grad}, as "
            f"{c('out.backward()')} does."
        )


class GradientAtGraph(_Diamonds):
    """Lesson 6, exercise 6: gradient_at(out, a, order) on a diamond of one's own."""

    exercise = answer_cell = "gradient_at"

    def shown(self, examples: Diamond, plain: bool = False) -> str:
        c = partial(_code, plain=plain)
        name_b = MAKE_B[examples.make_b][0]
        return (
            f"{examples.graph(plain)}. {c('gradient_at(out, a, order)')} is "
            f"{examples.direct} + {examples.through_b} = {examples.at_a}: "
            f"{examples.direct} straight from the node of {c('out')}, {examples.through_b} "
            f"through the node of {c('b')} ({c(name_b)})."
        )


EXAMPLES: tuple[Example, ...] = (
    ConsumerCountsGraph(),
    TopologicalOrderGraph(),
    ManualBackwardGraph(),
    GradientAtGraph(),
)
