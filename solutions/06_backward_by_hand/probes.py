"""Lesson 6 (backward by hand): what the grader observes of each answer."""

import torch

from grader.probing import autograd_called, by_hand, number


def _seed():
    """The seed's out = mean(3 (x + 2)^2), written y * y * 3: leaves, intermediates, output."""
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    return [x], [y, z], z.mean()


def _diamond():
    """out = a * b with b = a + 1 and a = 3x: a reaches out along paths of lengths 1 and 2."""
    x = torch.tensor(2.0, requires_grad=True)
    a = 3 * x
    b = a + 1
    return [x], [a, b], a * b


def _graphs(draw):
    """The two fixed graphs and two drawn ones, as (name, leaves, intermediates, output)."""
    graphs = [("the seed's out", *_seed()), ("the diamond", *_diamond())]
    for name in ["drawn graph 1", "drawn graph 2"]:
        graph = draw.graph()
        graphs.append((name, graph.leaves, graph.intermediates, graph.output))
    return graphs


def _consumers(output):
    """Every node reachable from output.grad_fn, with the list of its consumers."""
    consumers = {output.grad_fn: []}
    todo = [output.grad_fn]
    while todo:
        node = todo.pop()
        for child, _ in node.next_functions:
            if child is not None:
                if child not in consumers:
                    consumers[child] = []
                    todo.append(child)
                consumers[child].append(node)
    return consumers


def _leaf_node(consumers, leaf):
    return next(n for n in consumers if getattr(n, "variable", None) is leaf)


def test_chain_by_hand(student, observe, draw):
    points = [(1.0, 2.0)] + [(draw.number(-2, 2), draw.number(-2, 2)) for _ in range(4)]
    for a, b in points:
        result = by_hand(student.grads_by_hand, a, b)
        observe(f"grads_by_hand({a}, {b})", [number(v) for v in result], atol=1e-4)


def test_consumer_counts(student, observe, draw):
    for name, leaves, intermediates, output in _graphs(draw):
        counts = student.consumer_counts(output)
        consumers = _consumers(output)
        observe(f"{name}: number of entries", len(counts))
        observe(f"{name}: count of output.grad_fn", counts.get(output.grad_fn))
        observe(
            f"{name}: counts of the intermediates' nodes",
            [counts.get(h.grad_fn) for h in intermediates],
        )
        observe(
            f"{name}: counts of the leaves' AccumulateGrad nodes",
            [counts.get(_leaf_node(consumers, leaf)) for leaf in leaves],
        )
        observe(
            f"{name}: counts of every node, in the order of a walk from output.grad_fn",
            [counts.get(node) for node in consumers],
        )


def test_topological_order(student, observe, draw):
    for name, _, _, output in _graphs(draw):
        returned = student.topological_order(output)
        observe(f"{name}: a list or tuple", isinstance(returned, list | tuple))
        order = list(returned)
        consumers = _consumers(output)
        first = {}
        for i, node in enumerate(order):
            first.setdefault(node, i)
        early = sum(
            1
            for node, feeding in consumers.items()
            if node not in first or any(first.get(c, len(order)) > first[node] for c in feeding)
        )
        observe(f"{name}: number of entries", len(order))
        observe(f"{name}: distinct graph nodes listed", sum(1 for n in first if n in consumers))
        observe(f"{name}: node types", sorted(type(n).__name__ for n in order))
        observe(f"{name}: nodes missing or placed before a consumer", early)


def test_manual_backward(student, observe, draw):
    graphs = _graphs(draw)
    _, leaves, _, _ = graphs[-1]
    for leaf in leaves:  # the last graph's leaves hold a gradient already: backward adds to it
        leaf.grad = torch.ones_like(leaf)
    for name, leaves, _, output in graphs:
        calls = [0] * len(leaves)
        for i, leaf in enumerate(leaves):
            leaf.register_post_accumulate_grad_hook(
                lambda _, i=i, calls=calls: calls.__setitem__(i, calls[i] + 1)
            )
        _, used = autograd_called(student.manual_backward, output)
        observe(f"{name}: used backward() or autograd.grad", used)
        observe(f"{name}: a leaf's AccumulateGrad node called more than once", max(calls) > 1)
        observe(f"{name}: the leaves' .grad", [leaf.grad for leaf in leaves], atol=1e-4)


def test_gradient_at(student, observe, draw):
    for name, _, intermediates, output in _graphs(draw):
        index = draw.integer(0, len(intermediates) - 1) if name.startswith("drawn") else 0
        gradient, used = autograd_called(student.gradient_at, output, intermediates[index])
        observe(f"{name}: used backward() or autograd.grad", used)
        observe(f"{name}: gradient_at(output, h{index})", gradient, atol=1e-4)
