"""Random graphs for the graph exercises share nodes and reach them along paths of different
lengths, use a node twice in one operation and once more in another, hold nodes with several
outputs, and the same seed gives the same graph."""

import random

import torch

from grader.random_graphs import counts_of, random_graph


def _consumers(output) -> dict:
    """Each node of the graph behind `output`, with the entries of next_functions that point
    at it, as (consumer, output index) pairs."""
    consumers, stack = {output.grad_fn: []}, [output.grad_fn]
    while stack:
        node = stack.pop()
        for child, index in node.next_functions:
            if child is None:
                continue
            if child not in consumers:
                consumers[child] = []
                stack.append(child)
            consumers[child].append((node, index))
    return consumers


def _first_reached(output) -> list:
    """Depth first, each node placed when first reached: one visited set for the whole walk."""
    order = []

    def visit(node):
        if node not in order:
            order.append(node)
            for child, _ in node.next_functions:
                if child is not None:
                    visit(child)

    visit(output.grad_fn)
    return order


def test_every_leaf_and_the_first_node_are_shared():
    """Each leaf and the first intermediate have two consumers or more, for any seed."""
    for seed in range(50):
        graph = random_graph(random.Random(seed))
        consumers = _consumers(graph.output)
        accumulators = {n.variable: n for n in consumers if hasattr(n, "variable")}
        for leaf in graph.leaves:
            assert leaf.requires_grad and leaf.is_leaf
            assert len(consumers[accumulators[leaf]]) >= 2, (seed, graph.formula)
        assert len(consumers[graph.intermediates[0].grad_fn]) >= 2, (seed, graph.formula)


def test_a_node_is_used_twice_by_one_operation_and_once_by_another():
    """Counting distinct consumers instead of entries of next_functions goes wrong on every
    graph, and so does counting entries down once per distinct consumer."""
    for seed in range(50):
        graph = random_graph(random.Random(seed))
        found = False
        for feeding in _consumers(graph.output).values():
            distinct = {node for node, _ in feeding}
            if len(feeding) > len(distinct) > 1:
                found = True
        assert found, (seed, graph.formula)


def test_a_shared_node_is_reached_along_a_short_path_first():
    """A walk that places each node when first reached puts some node before a consumer."""
    for seed in range(50):
        graph = random_graph(random.Random(seed))
        consumers = _consumers(graph.output)
        position = {node: i for i, node in enumerate(_first_reached(graph.output))}
        late = [
            node
            for node, feeding in consumers.items()
            if any(position[consumer] > position[node] for consumer, _ in feeding)
        ]
        assert late, (seed, graph.formula)


def test_some_graphs_hold_a_node_with_several_outputs_all_used():
    """Some graphs split a tensor (one node, two outputs); every output is then used, so the
    largest output index in next_functions tells how many gradients the node takes."""
    with_split = 0
    for seed in range(50):
        graph = random_graph(random.Random(seed))
        for node, feeding in _consumers(graph.output).items():
            indices = {index for _, index in feeding}
            if max(indices, default=0) > 0:
                with_split += 1
                assert indices == set(range(len(node._input_metadata))), graph.formula
    assert with_split >= 10, with_split


def test_backward_works_on_every_graph():
    """backward() fills every leaf's .grad with finite numbers."""
    for seed in range(50):
        graph = random_graph(random.Random(seed), leaves=seed % 3 + 2, steps=seed % 5 + 4)
        graph.output.backward()
        for leaf in graph.leaves:
            assert leaf.grad is not None and torch.isfinite(leaf.grad).all(), graph.formula


def test_the_same_seed_gives_the_same_graph():
    """Probe and reference draw the same graph from the same seed."""
    first, second = (random_graph(random.Random(7)) for _ in range(2))
    assert first.formula == second.formula
    assert torch.equal(first.output, second.output)
    assert [len(h) for h in first.intermediates] == [len(h) for h in second.intermediates]


def test_the_order_known_from_the_making_is_a_backward_order_of_every_node():
    """A graph's `order`, known from how it was built with no walk, lists every node reachable
    from output.grad_fn once and nothing else, each after every node that uses it; its
    `counts_of` are the consumer counts a walk finds."""
    for seed in range(50):
        for through in (None, lambda t: t * 1.0):
            graph = random_graph(random.Random(seed), leaves=seed % 3 + 2, through=through)
            consumers = _consumers(graph.output)
            assert len(graph.order) == len(set(graph.order)) == len(consumers), seed
            place = {node: i for i, node in enumerate(graph.order)}
            for node, feeding in consumers.items():
                assert all(place[c] < place[node] for c, _ in feeding), (seed, graph.formula)
            wanted = {node: len(feeding) for node, feeding in consumers.items()}
            assert counts_of(graph.order) == wanted
