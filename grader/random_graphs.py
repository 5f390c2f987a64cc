"""Random computation graphs for the graph exercises: shared nodes, paths of different lengths."""

import random
from dataclasses import dataclass

import torch

UNARY = {
    "sin": torch.sin,
    "tanh": torch.tanh,
    "square": lambda t: t * t,
    "scale": lambda t: 1.5 * t,
}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul}


@dataclass
class RandomGraph:
    """Leaves that require gradients, and a scalar output computed from them."""

    leaves: list[torch.Tensor]
    intermediates: list[torch.Tensor]  # h0, h1, … in the order they were made
    output: torch.Tensor
    formula: str  # how the output was computed, one step per line, for messages


def random_graph(rng: random.Random, *, leaves: int = 3, size: int = 3, steps: int = 6):
    """A graph of `steps` random operations on `leaves` leaf vectors of `size` elements.

    The operations form a chain: each takes the node made just before it and, for a two-input
    operation, another one: the next leaf while some leaf is unused, then any earlier node (a
    leaf, an intermediate, itself again, or now and then a constant that does not require
    gradients). So the last node depends on every leaf and intermediate, and the output
    `(last + first intermediate + every leaf).sum()` reaches the first intermediate and each leaf
    along paths of different lengths.
    """
    if steps < leaves:
        raise ValueError(f"a graph of {leaves} leaves needs {leaves} steps or more, not {steps}")
    tensors = [
        torch.tensor([rng.uniform(-1.5, 1.5) for _ in range(size)], requires_grad=True)
        for _ in range(leaves)
    ]
    nodes = list(tensors)
    names = [f"x{i}" for i in range(leaves)]
    steps_made = []
    previous = 0
    for step in range(steps):
        unused = step + 1 if step + 1 < leaves else None
        if unused is None and rng.random() < 0.4:
            op = rng.choice(sorted(UNARY))
            nodes.append(UNARY[op](nodes[previous]))
            steps_made.append(f"h{step} = {op}({names[previous]})")
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
            nodes.append(BINARY[op](nodes[previous], other))
            steps_made.append(f"h{step} = {op}({names[previous]}, {other_name})")
        names.append(f"h{step}")
        previous = len(nodes) - 1
    output = (nodes[-1] + nodes[leaves] + sum(tensors)).sum()
    steps_made.append(f"output = ({names[-1]} + h0 + {' + '.join(names[:leaves])}).sum()")
    formula = "\n".join(steps_made)
    return RandomGraph(tensors, nodes[leaves:], output, formula)
