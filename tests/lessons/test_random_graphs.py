"""Random graphs for the graph exercises share nodes and reach them along paths of different
lengths, and the same seed gives the same graph."""

import random

import torch

from grader.random_graphs import random_graph


def _consumers(output) -> dict:
    """How many edges point at each node of the graph behind `output`."""
    counts, seen, stack = {}, set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            counts[child] = counts.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return counts


def test_every_leaf_and_the_first_node_are_shared():
    """Each leaf and the first intermediate have two consumers or more, for any seed."""
    for seed in range(50):
        graph = random_graph(random.Random(seed))
        counts = _consumers(graph.output)
        accumulators = {n.variable: n for n in counts if hasattr(n, "variable")}
        for leaf in graph.leaves:
            assert leaf.requires_grad and leaf.is_leaf
            assert counts[accumulators[leaf]] >= 2, (seed, graph.formula)
        first = graph.intermediates[0].grad_fn
        assert counts[first] >= 2, (seed, graph.formula)


def test_the_same_seed_gives_the_same_graph():
    """Probe and reference draw the same graph from the same seed."""
    first, second = (random_graph(random.Random(7)) for _ in range(2))
    assert first.formula == second.formula
    assert torch.equal(first.output, second.output)
