"""Random graphs for the graph exercises share nodes and reach them along paths of different
lengths, use a node twice in one operation and once more in another, hold nodes with several
outputs, and the same seed gives the same graph."""

import random

import torch

from grader.random_graphs import random_graph


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


def _walk_by_hand(output) -> None:
    """Lesson 6's manual_backward: the nodes called in a topological order (Kahn's)."""
    waiting = {node: len(feeding) for node, feeding in _consumers(output).items()}
    received, ready = {output.grad_fn: {0: torch.ones_like(output)}}, [output.grad_fn]
    with torch.no_grad():
        while ready:
            node = ready.pop()
            grads = received.pop(node)
            results = node(*[grads.get(i) for i in range(max(grads) + 1)])
            results = (results,) if isinstance(results, torch.Tensor) else results
            for (child, index), grad in zip(node.next_functions, results, strict=True):
                if child is None:
                    continue
                if grad is not None:
                    kept = received.setdefault(child, {})
                    kept[index] = kept[index] + grad if index in kept else grad
                waiting[child] -= 1
                if waiting[child] == 0:
                    ready.append(child)


def test_a_hand_only_graph_gives_its_gradients_to_a_walk_by_hand_and_not_to_the_engine(
    monkeypatch,
):
    """Over 100 seeds: calling the nodes by hand gives the true gradients (the engine's, with the
    steps switched off), backward() misses them at some leaf by 0.2 or more, and so does the
    difference of two engine runs from different starting gradients (offsets cancel there,
    scales do not), by 0.3 or more (the probes compare to 1e-4)."""
    for seed in range(100):
        by_hand = random_graph(random.Random(seed), hand_only=True)
        _walk_by_hand(by_hand.output)
        by_engine = random_graph(random.Random(seed), hand_only=True)
        by_engine.output.backward()
        with monkeypatch.context() as patched:
            patched.setattr("grader.random_graphs._ENGINE_TASK", lambda: -1)
            truth = random_graph(random.Random(seed), hand_only=True)
            truth.output.backward()
        for walked, true in zip(by_hand.leaves, truth.leaves, strict=True):
            assert torch.allclose(walked.grad, true.grad, atol=1e-5), seed
        missed = max(
            (e.grad - t.grad).abs().max()
            for e, t in zip(by_engine.leaves, truth.leaves, strict=True)
        )
        assert missed > 0.2, seed
        twice = random_graph(random.Random(seed), hand_only=True)  # seeds 1 and 2, subtracted
        one = torch.ones_like(twice.output)
        first = torch.autograd.grad(twice.output, twice.leaves, one, retain_graph=True)
        second = torch.autograd.grad(twice.output, twice.leaves, 2 * one)
        missed = max(
            (b - a - t.grad).abs().max()
            for a, b, t in zip(first, second, truth.leaves, strict=True)
        )
        assert missed > 0.3, seed


def test_a_hand_only_graph_steps_after_every_tensor_it_makes_and_changes_no_value():
    """Each intermediate and the output come out of a step node, callable like a built-in one,
    which hands the step's input the same values."""
    for seed in range(20):
        graph = random_graph(random.Random(seed), hand_only=True)
        for made in [*graph.intermediates, graph.output]:
            assert type(made.grad_fn).__name__ == "StepBackward", seed
            ((before, _),) = made.grad_fn.next_functions
            with torch.no_grad():
                assert torch.equal(made.grad_fn(torch.ones_like(made)), torch.ones_like(made))
            assert before is not None
