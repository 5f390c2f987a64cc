"""Lesson 2's visible examples of each student's own: the graphs leaves_of and graph_depth walk."""

import itertools
from dataclasses import dataclass

from grader.variants.examples.base import Example

LESSON = "02_grad_fn_and_the_graph"
# Elementwise operations a chain is made of, as tensor methods: each records one node,
# `exp` an `ExpBackward0`, `sigmoid` a `SigmoidBackward0`, ...
UNARY = ("exp", "sin", "cos", "tanh", "sigmoid", "atan")
NODE_NAMES = {op: f"{op.capitalize()}Backward0" for op in UNARY}


def chained(name: str, ops: tuple[str, ...]) -> str:
    """`name` with the methods `ops` called on it in turn: b.exp().sin()."""
    return name + "".join(f".{op}()" for op in ops)


@dataclass(frozen=True)
class SharedLeaf:
    """Lesson 2's leaves_of example: c = (a <first> b) <second> r, where r is the leaf `again`
    (a or b) used a second time, through the methods `chain` (none, one or two)."""

    first: str  # "*", "+" or "-"
    second: str
    again: str  # "a" or "b": the leaf that two paths reach
    chain: tuple[str, ...]

    @property
    def formula(self) -> str:
        """c as Python writes it: a * b + a, (a + b) * b.exp()."""
        inner = f"a {self.first} b"
        if self.first in "+-" and self.second == "*":
            inner = f"({inner})"
        return f"{inner} {self.second} {chained(self.again, self.chain)}"


class LeavesOfGraphs(Example):
    """Lesson 2, exercise 3: leaves_of(tensor), on a graph of two leaves, one of them reached
    along two paths."""

    lesson = LESSON
    exercise = answer_cell = "leaves_of"
    what = "example"
    default = SharedLeaf(first="*", second="+", again="a", chain=())
    operators = ("*", "+", "-")

    def every(self) -> list[SharedLeaf]:
        chains = [()] + [(op,) for op in UNARY] + list(itertools.permutations(UNARY, 2))
        return [
            SharedLeaf(first, second, again, chain)
            for first, second, again, chain in itertools.product(
                self.operators, self.operators, "ab", chains
            )
        ]

    def shown(self, examples: SharedLeaf, plain: bool = False) -> str:
        said = (
            f"For `c = {examples.formula}`, `leaves_of(c)` is `[a, b]` (or `[b, a]`): two paths "
            f"lead back to `{examples.again}`, and it is listed once. The visible test checks "
            "this graph, `out` of section 4, `x * x` and a leaf alone."
        )
        return said.replace("`", "") if plain else said


@dataclass(frozen=True)
class DepthChains:
    """Lesson 2's graph_depth examples, from the chains of elementwise operations `inner` and
    `chain` (3 or 4 of them): a branch, a * b.<branch> + a, of 1 to 3 operations, and a shared
    node, h = a.<inner>() and d = h + h.<chain>."""

    inner: str
    chain: tuple[str, ...]
    branch_length: int

    @property
    def branch(self) -> tuple[str, ...]:
        return (self.inner, *self.chain)[: self.branch_length]

    @property
    def branch_formula(self) -> str:
        return f"a * {chained('b', self.branch)} + a"

    @property
    def branch_depth(self) -> int:
        """Add, Mul, the branch's nodes and b's AccumulateGrad."""
        return self.branch_length + 3

    branch_shortest = 2  # Add, then a's AccumulateGrad

    @property
    def shared_formula(self) -> str:
        return f"h + {chained('h', self.chain)}"

    @property
    def shared_depth(self) -> int:
        """Add, the chain's nodes, h's node and a's AccumulateGrad."""
        return len(self.chain) + 3

    shared_shortest = 3  # Add, h's node, a's AccumulateGrad

    @property
    def shared_first_visit(self) -> int:
        """What a walk that counts each node only when it first reaches it finds, going into h's
        node first (2 nodes deep) and then along the chain, which stops before h's node."""
        return 1 + max(2, len(self.chain))


class GraphDepthGraphs(Example):
    """Lesson 2, exercise 4: graph_depth(tensor), on a branch and on a shared node."""

    lesson = LESSON
    exercise = answer_cell = "graph_depth"
    default = DepthChains(inner="exp", chain=("sin", "cos", "tanh"), branch_length=2)

    def every(self) -> list[DepthChains]:
        return [
            DepthChains(inner, chain, branch_length)
            for inner in UNARY
            for length in (3, 4)
            for chain in itertools.permutations([op for op in UNARY if op != inner], length)
            for branch_length in (1, 2, 3)
        ]

    def shown(self, examples: DepthChains, plain: bool = False) -> str:
        nodes = [f"`{NODE_NAMES[op]}`" for op in reversed(examples.chain)]
        through = ", ".join(nodes[:-1]) + f" and {nodes[-1]}"
        said = (
            f"For `h = a.{examples.inner}()` and `d = {examples.shared_formula}` the depth is "
            f"{examples.shared_depth}: the longest path goes through {through}, then on through "
            f"the node of `h`, `{NODE_NAMES[examples.inner]}`, which the short path reaches too. "
            f"For `{examples.branch_formula}` it is {examples.branch_depth}."
        )
        return said.replace("`", "") if plain else said


EXAMPLES: tuple[Example, ...] = (LeavesOfGraphs(), GraphDepthGraphs())
