"""Random computation graphs for the graph exercises: shared nodes, paths of different lengths,
nodes used twice by one operation, and nodes with several outputs.

For the exercises that ask for a backward pass run by hand, through the graph's nodes and without
`backward()` or `torch.autograd.grad`, a graph can be made *hand only*: every tensor it makes
passes through a step node that hands a gradient on unchanged when an answer calls the node
itself, and scales it and adds an offset, both drawn, when torch's engine calls it
(`torch._C._current_graph_task_id`, taken at import, says whether the engine is running). So the
engine's gradients are wrong on such a graph, by construction, and no mix of engine runs undoes
it: what the engine returns is linear in the gradient it starts from, but with every step's
scale applied along every path (runs from several starting gradients, subtracted, remove the
offsets and keep the scales). Only a walk that calls the nodes gets the reference's numbers.
"""

import random
from collections.abc import Callable
from dataclasses import dataclass

import torch

UNARY = {
    "sin": torch.sin,
    "tanh": torch.tanh,
    "square": lambda t: t * t,  # one node, used twice by one operation
    "scale": lambda t: 0.5 * t,
}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul}
_ENGINE_TASK = torch._C._current_graph_task_id  # -1 unless torch's engine is running a backward


def _call_by_hand(node, *grads):
    """What calling a built-in node does: its backward on these gradients."""
    return node.apply(*grads)


def hand_only_step(rng: random.Random) -> Callable[[torch.Tensor], torch.Tensor]:
    """An identity whose node passes a gradient on unchanged when called by hand, and, when the
    engine calls it, scales it by 1.3 to 1.7 or 0.3 to 0.7 and adds an offset of 0.5 to 1.5 in
    size, drawn from `rng`."""
    scale = 1 + rng.choice([-1, 1]) * rng.uniform(0.3, 0.7)
    offset = rng.choice([-1, 1]) * rng.uniform(0.5, 1.5)

    class Step(torch.autograd.Function):
        @staticmethod
        def forward(ctx, tensor):
            return tensor.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad if _ENGINE_TASK() < 0 else grad * scale + offset

    Step._backward_cls.__call__ = _call_by_hand  # callable like a built-in node
    return Step.apply


@dataclass
class RandomGraph:
    """Leaves that require gradients, and a scalar output computed from them."""

    leaves: list[torch.Tensor]
    intermediates: list[torch.Tensor]  # h0, h1, … in the order they were made
    output: torch.Tensor
    formula: str  # how the output was computed, one step per line, for messages


def random_graph(
    rng: random.Random, *, leaves: int = 3, size: int = 3, steps: int = 6, hand_only: bool = False
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

    With `hand_only`, every intermediate and the output pass through a `hand_only_step` (so
    `tensor.grad_fn` is that step's node), and only a backward run by hand gets the gradients.

    Everything is drawn from `rng`: the same seed gives the same graph.
    """
    through = (lambda t: hand_only_step(rng)(t)) if hand_only else (lambda t: t)
    if steps < leaves:
        raise ValueError(f"a graph of {leaves} leaves needs {leaves} steps or more, not {steps}")
    tensors = [
        torch.tensor([rng.uniform(-1.2, 1.2) for _ in range(size)], requires_grad=True)
        for _ in range(leaves)
    ]
    nodes = list(tensors)  # the tensors of `size` elements, which later steps may reuse
    names = [f"x{i}" for i in range(leaves)]
    made, made_names, lines = [], [], []

    def keep(tensor, *, full=True):
        tensor = through(tensor)
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
            name = keep(torch.cat([second, first * first]))
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
    h0 = made[0]
    output = through((h0 * h0 + nodes[-1] + sum(tensors)).sum())
    lines.append(f"output = (h0 * h0 + {names[-1]} + {' + '.join(names[:leaves])}).sum()")
    return RandomGraph(tensors, made, output, "\n".join(lines))
