"""Lesson 6 (backward by hand): what the grader observes of each answer.

Exercises 4 to 6 receive what the exercise before computes (the consumer counts, a topological
order) as an argument: the probes build it here, from the graph, so that each exercise is
observed on its own. Exercises 5 and 6 ask for a backward pass run by hand, without `backward()`
or `torch.autograd.grad`: their drawn graphs are hand graphs (`grader.hand_graphs`), whose steps
the grading process answers only in the order handed over, once per call, an order torch's engine
does not follow; so only a walk that calls the nodes in that order gets their gradients.
"""

import torch

from grader.probing import by_hand, number
from grader.random_graphs import backward_order

# The walks by hand: what the grading process answers makes the order and the sum at its own
# nodes inevitable (grader.hand_graphs); an answer that starts torch's engine for the products
# of torch's nodes between them is flagged for the instructor (grader.judging.routes.no_engine).
HOW = {
    "test_manual_backward": {"manual_backward": ["without torch's engine"]},
    "test_gradient_at": {"gradient_at": ["without torch's engine"]},
}

# Derivatives asked for by hand: each answer is read as a formula that the grader evaluates itself,
# at points drawn for the submission (grader.judging.by_hand). {test: {function: parameter domains}}
BY_HAND = {
    "test_chain_by_hand": {
        "grads_by_hand": [{"low": -2.0, "high": 2.0}, {"low": -2.0, "high": 2.0}]
    }
}


def _section_1():
    """Section 1's out = mean(3 (x + 2)^2), written y * y * 3: leaves, intermediates, output."""
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


def _twice_and_once():
    """out = ((y + 1) * (y * y)).sum(): y's node listed twice by one node, once by another."""
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    y = x.sin()
    plus, square = y + 1, y * y
    return [x], [y, plus, square], (plus * square).sum()


def _unbind():
    """out = p * q * q with p, q = v.unbind(): one node with two outputs, q used twice."""
    v = torch.tensor([2.0, 3.0], requires_grad=True)
    p, q = v.unbind()
    pq = p * q
    return [v], [p, q, pq], pq * q


def _chunk():
    """out = (a * 2 + b * 3).sum() with a, b = v.chunk(2)."""
    v = torch.tensor([0.5, -1.0, 1.5, 2.0], requires_grad=True)
    a, b = v.chunk(2)
    a2, b3 = a * 2, b * 3
    return [v], [a, b, a2, b3], (a2 + b3).sum()


def _graphs(draw, *, hand_only=False, runs=1):
    """Fixed graphs and two drawn ones, as (name, leaves, intermediates, output); hand graphs
    walked `runs` times where `hand_only`."""
    graphs = [
        ("section 1's out", *_section_1()),
        ("the diamond", *_diamond()),
        ("((y + 1) * (y * y)).sum()", *_twice_and_once()),
        ("p * q * q with p, q = v.unbind()", *_unbind()),
        ("(a * 2 + b * 3).sum() with a, b = v.chunk(2)", *_chunk()),
    ]
    for name in ["drawn graph 1", "drawn graph 2"]:
        graph = draw.graph(hand_only=hand_only, runs=runs)
        graphs.append((name, graph.leaves, graph.intermediates, graph.output))
    return graphs


def _consumers(output):
    """Every node reachable from output.grad_fn, with its consumers, once per entry."""
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


def _counts(output):
    """The consumer counts that Exercise 4 receives: a fresh dict for each call."""
    return {node: len(feeding) for node, feeding in _consumers(output).items()}


def _order(output):
    """A topological order, as Exercises 5 and 6 receive it: a fresh list for each call."""
    return backward_order(output)


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
        returned = student.topological_order(output, _counts(output))
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
    graphs = _graphs(draw, hand_only=True)
    _, leaves, _, _ = graphs[-1]
    for leaf in leaves:  # the last graph's leaves hold a gradient already: backward adds to it
        leaf.grad = torch.ones_like(leaf)
    for name, leaves, _, output in graphs:
        student.manual_backward(output, _order(output))
        observe(f"{name}: the leaves' .grad", [leaf.grad for leaf in leaves], atol=1e-4)


def test_gradient_at(student, observe, draw):
    for name, _, intermediates, output in _graphs(draw, hand_only=True, runs=2):
        if name.startswith("drawn"):
            indices = [0, draw.integer(0, len(intermediates) - 1)]
        else:
            indices = range(len(intermediates))
        for index in indices:
            gradient = student.gradient_at(output, intermediates[index], _order(output))
            observe(f"{name}: gradient_at(output, h{index}, order)", gradient, atol=1e-4)
