"""Lesson 6 (backward by hand): what the grader observes of each answer.

Exercises 4 to 6 receive what the exercise before computes (the consumer counts, a topological
order) as an argument: the probes know them from how each graph was built (`order_of_making`), so
that each exercise is observed on its own, and nothing here walks a graph, which is what the
exercises ask of the answers. An answer that lists nodes is reported as data
(`grader.probing.node_listing`) and judged outside (`grader.judging.node_listings`). Exercises 5
and 6 ask for a backward pass run by hand, without `backward()` or `torch.autograd.grad`: their
drawn graphs are hand graphs (`grader.hand_graphs`), whose steps the grading process answers only
in the order handed over, once per call, an order torch's engine does not follow; so only a walk
that calls the nodes in that order gets their gradients.
"""

import random

import torch

from grader.probing import autograd_inputs, by_hand, node_listing, number
from grader.random_graphs import counts_of, order_of_making

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
    """Section 1's out = mean(3 (x + 2)^2), written y * y * 3: leaves, intermediates, output,
    and every tensor made, in order."""
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    yy = y * y
    z = yy * 3
    out = z.mean()
    return [x], [y, z], out, [y, yy, z, out]


def _diamond():
    """out = a * b with b = a + 1 and a = 3x: a reaches out along paths of lengths 1 and 2."""
    x = torch.tensor(2.0, requires_grad=True)
    a = 3 * x
    b = a + 1
    out = a * b
    return [x], [a, b], out, [a, b, out]


def _twice_and_once():
    """out = ((y + 1) * (y * y)).sum(): y's node listed twice by one node, once by another."""
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    y = x.sin()
    plus, square = y + 1, y * y
    product = plus * square
    out = product.sum()
    return [x], [y, plus, square], out, [y, plus, square, product, out]


def _unbind():
    """out = p * q * q with p, q = v.unbind(): one node with two outputs, q used twice."""
    v = torch.tensor([2.0, 3.0], requires_grad=True)
    p, q = v.unbind()
    pq = p * q
    out = pq * q
    return [v], [p, q, pq], out, [p, q, pq, out]


def _chunk():
    """out = (a * 2 + b * 3).sum() with a, b = v.chunk(2)."""
    v = torch.tensor([0.5, -1.0, 1.5, 2.0], requires_grad=True)
    a, b = v.chunk(2)
    a2, b3 = a * 2, b * 3
    total = a2 + b3
    out = total.sum()
    return [v], [a, b, a2, b3], out, [a, b, a2, b3, total, out]


def _graphs(draw, *, hand_only=False, runs=1):
    """Fixed graphs and two drawn ones, as (name, leaves, intermediates, output, order): `order`
    holds every node, each after all that use it; hand graphs walked `runs` times where
    `hand_only`."""
    graphs = []
    for name, make in [
        ("section 1's out", _section_1),
        ("the diamond", _diamond),
        ("((y + 1) * (y * y)).sum()", _twice_and_once),
        ("p * q * q with p, q = v.unbind()", _unbind),
        ("(a * 2 + b * 3).sum() with a, b = v.chunk(2)", _chunk),
    ]:
        leaves, intermediates, output, made = make()
        graphs.append((name, leaves, intermediates, output, order_of_making(leaves, made)))
    for name in ["drawn graph 1", "drawn graph 2"]:
        graph = draw.graph(hand_only=hand_only, runs=runs)
        graphs.append((name, graph.leaves, graph.intermediates, graph.output, graph.order))
    return graphs


def _counts(order, rng) -> dict:
    """The consumer counts that Exercise 4 receives, a fresh dict for each call, its nodes in a
    drawn order (the order of making would be an answer)."""
    counts, nodes = counts_of(order), list(order)
    rng.shuffle(nodes)
    return {node: counts[node] for node in nodes}


def test_chain_by_hand(student, observe, draw):
    points = [(1.0, 2.0)] + [(draw.number(-2, 2), draw.number(-2, 2)) for _ in range(4)]
    for a, b in points:
        result = by_hand(student.grads_by_hand, a, b)
        observe(f"grads_by_hand({a}, {b})", [number(v) for v in result], atol=1e-4)


def test_consumer_counts(student, observe, draw):
    for name, output in [(name, output) for name, _, _, output, _ in _graphs(draw)]:
        counts = student.consumer_counts(output)
        listing = node_listing(counts, output.grad_fn, autograd_inputs)
        observe(f"{name}: the count of every node", listing, nodes="map")


def test_topological_order(student, observe, draw):
    # Only the counts are kept while an answer runs: the order of making is an answer.
    rng = random.Random(draw.integer(0, 2**31))
    graphs = [(name, output, _counts(order, rng)) for name, _, _, output, order in _graphs(draw)]
    for name, output, counts in graphs:
        returned = student.topological_order(output, counts)
        listing = node_listing(returned, output.grad_fn, autograd_inputs)
        observe(f"{name}: the order", listing, nodes="order")


def test_manual_backward(student, observe, draw):
    graphs = _graphs(draw, hand_only=True)
    leaves = graphs[-1][1]
    for leaf in leaves:  # the last graph's leaves hold a gradient already: backward adds to it
        leaf.grad = torch.ones_like(leaf)
    for name, leaves, _, output, order in graphs:
        student.manual_backward(output, list(order))
        observe(f"{name}: the leaves' .grad", [leaf.grad for leaf in leaves], atol=1e-4)


def test_gradient_at(student, observe, draw):
    for name, _, intermediates, output, order in _graphs(draw, hand_only=True, runs=2):
        if name.startswith("drawn"):
            indices = [0, draw.integer(0, len(intermediates) - 1)]
        else:
            indices = range(len(intermediates))
        for index in indices:
            gradient = student.gradient_at(output, intermediates[index], list(order))
            observe(f"{name}: gradient_at(output, h{index}, order)", gradient, atol=1e-4)
