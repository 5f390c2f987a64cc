"""Random computation graphs for the graph exercises: shared nodes, paths of different lengths,
nodes used twice by one operation, and nodes with several outputs.

For the exercises that ask for a backward pass run by hand, the grader's drawn graphs pass every
tensor they make through a *step* (`through`): `grader.hand_graphs` makes those steps the grading
process's own nodes, which answer only in the order the exercise hands over. A graph's nodes and
their consumer counts are known from how it was built (`order_of_making`, `counts_of`): nothing
here walks a graph, for this module runs beside the answers, and a walk is what the exercises
ask of them.
"""

import random
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.autograd.graph import get_gradient_edge

UNARY = {
    "sin": torch.sin,
    "tanh": torch.tanh,
    "square": lambda t: t * t,  # one node, used twice by one operation
    "scale": lambda t: 0.5 * t,
}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul}


def order_of_making(leaves: list[torch.Tensor], made: list[torch.Tensor]) -> list:
    """The nodes of a graph known from what built it (`made`: every tensor an operation made, in
    the order they were made): their nodes, the last made first, then each leaf's AccumulateGrad
    node. A node is made after the nodes of its inputs, so every node comes after all the nodes
    that use it: a backward order, by construction, with no walk of the graph."""
    nodes = list(dict.fromkeys(t.grad_fn for t in made if t.grad_fn is not None))
    return nodes[::-1] + [get_gradient_edge(leaf).node for leaf in leaves]


def counts_of(nodes: list) -> dict:
    """Each of a graph's nodes (all of them, as `order_of_making` lists them) with the number of
    entries of next_functions that point to it."""
    counts = dict.fromkeys(nodes, 0)
    for node in nodes:
        for child, _ in node.next_functions:
            if child is not None:
                counts[child] += 1
    return counts


@dataclass
class RandomGraph:
    """Leaves that require gradients, and a scalar output computed from them."""

    leaves: list[torch.Tensor]
    intermediates: list[torch.Tensor]  # h0, h1, … in the order they were made
    output: torch.Tensor
    formula: str  # how the output was computed, one step per line, for messages
    order: list  # every node, each after all that use it (see `random_graph`)


def random_graph(
    rng: random.Random,
    *,
    leaves: int = 3,
    size: int = 3,
    steps: int = 6,
    through: Callable[[torch.Tensor], torch.Tensor] | None = None,
):
    """A graph of `steps` random operations on `leaves` leaf vectors of `size` elements.

    The operations form a chain: each takes the node made just before it and, for a two-input
    operation, another one: the next leaf while some leaf is unused, then any earlier node (a
    leaf, an intermediate, itself again, or now and then a constant that does not require
    gradients), as its first or its second input. Now and then a step splits the node before it
    into two pieces (`torch.split`, one node with two outputs) and joins them again as
    `cat(second, first * first)`, so that every output of that node is used, the first one twice
    by one operation and once more by another. So the last node depends on every leaf and
    intermediate, and the output `(h0 * h0 + last + every leaf).sum()` uses h0 twice in one
    operation, once more in the chain, and reaches it along a short path before the long one
    (its term comes first).

    With `through`, every intermediate, `h0 * h0` and the output pass through it (a step, so that
    `tensor.grad_fn` is the step's node), and the last node reaches the output twice, through two
    steps added the later one first: `(through(h0 * h0) + (twin2 + twin1) + every leaf).sum()`
    with `twin1, twin2 = through(last), through(last)`: torch's engine, which runs the node made
    last among those ready, runs twin2 first, and every intermediate is reached through both
    twins (`grader.hand_graphs` hands over an order that runs twin1 first). The graph's `order`
    is the order of making (`order_of_making`), the last made first.

    Everything is drawn from `rng`: the same seed gives the same graph.
    """
    stepped = through is not None
    through = through or (lambda t: t)
    if steps < leaves:
        raise ValueError(f"a graph of {leaves} leaves needs {leaves} steps or more, not {steps}")
    tensors = [
        torch.tensor([rng.uniform(-1.2, 1.2) for _ in range(size)], requires_grad=True)
        for _ in range(leaves)
    ]
    nodes = list(tensors)  # the tensors of `size` elements, which later steps may reuse
    names = [f"x{i}" for i in range(leaves)]
    made, made_names, lines = [], [], []
    built = []  # every tensor an operation made, in the order they were made

    def record(tensor):
        built.append(tensor)
        return tensor

    def keep(tensor, *, full=True):
        tensor = record(through(record(tensor)))
        name = f"h{len(made)}"
        made.append(tensor)
        made_names.append(name)
        if full:
            nodes.append(tensor)
            names.append(name)
        return name

    previous = 0
    for step in range(steps):
        unused = step + 1 if step + 1 < leaves else None
        kind = rng.random() if unused is None and step > 0 else 1.0
        if kind < 0.15 and size > 1:
            cut = rng.randint(1, size - 1)
            first, second = torch.split(nodes[previous], [cut, size - cut])
            a, b = keep(first, full=False), keep(second, full=False)
            first, second = made[-2:]
            lines.append(f"{a}, {b} = split({names[previous]}, [{cut}, {size - cut}])")
            name = keep(torch.cat([second, record(first * first)]))
            lines.append(f"{name} = cat({b}, {a} * {a})")
        elif kind < 0.45:
            op = rng.choice(sorted(UNARY))
            name = keep(UNARY[op](nodes[previous]))
            lines.append(f"{name} = {op}({names[previous]})")
        else:
            op = rng.choice(sorted(BINARY))
            if unused is not None:
                other, other_name = nodes[unused], names[unused]
            elif rng.random() < 0.15:
                other = torch.tensor([rng.uniform(-1.0, 1.0) for _ in range(size)])
                other_name = "c"
            else:
                index = rng.randrange(len(nodes))
                other, other_name = nodes[index], names[index]
            pair, pair_names = [nodes[previous], other], [names[previous], other_name]
            if rng.random() < 0.5:  # the other input first: reached along a short path first
                pair.reverse()
                pair_names.reverse()
            name = keep(BINARY[op](*pair))
            lines.append(f"{name} = {op}({', '.join(pair_names)})")
        previous = len(nodes) - 1
    h0, last, leaf_names = made[0], nodes[-1], " + ".join(names[:leaves])
    every_leaf = 0
    if stepped:
        square = record(through(record(h0 * h0)))
        twin1 = record(through(last))
        twin2 = record(through(last))
        total = record(square + record(twin2 + twin1))
        for leaf in tensors:
            every_leaf = record(every_leaf + leaf)
        output = record(through(record(record(total + every_leaf).sum())))
        lines.append(f"output = (h0 * h0 + {names[-1]} + {names[-1]} + {leaf_names}).sum()")
        lines.append("(every tensor made passes through a drawn step)")
    else:
        total = record(record(h0 * h0) + last)
        for leaf in tensors:
            every_leaf = record(every_leaf + leaf)
        output = record(record(total + every_leaf).sum())
        lines.append(f"output = (h0 * h0 + {names[-1]} + {leaf_names}).sum()")
    return RandomGraph(tensors, made, output, "\n".join(lines), order_of_making(tensors, built))
