"""Lesson 6's examples: the graphs exercises 3 to 6 walk."""

import torch

from grader.lesson_checks.lesson_06 import consumer_count_slips, diamond_graph, two_uses_graph
from grader.variants.examples.lesson_06 import MAKE_B


def _walked(output) -> dict:
    """Every node reachable from output.grad_fn, each with the nodes that list it in their
    next_functions, once per entry, found by walking the graph (the checks know it as built)."""
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


def _two_uses(examples) -> None:
    """Six nodes, as the text names them: y's node listed 3 or 4 times by two distinct
    consumers, one of them (at least) listing it twice; out's node first, x's AccumulateGrad
    last, and only the two consumers of y in either order."""
    out, built = two_uses_graph(examples)
    consumers = _walked(out)
    assert {n: sorted(map(id, c)) for n, c in built.items()} == {
        n: sorted(map(id, c)) for n, c in consumers.items()
    }
    combined = out.grad_fn.next_functions[0][0]
    left, right = (child for child, _ in combined.next_functions)
    y = left.next_functions[0][0]
    (accumulate,) = (child for child, _ in y.next_functions if child is not None)
    nodes = [out.grad_fn, combined, left, right, y, accumulate]
    assert len(consumers) == len(set(nodes)) == 6 and accumulate.variable.shape == (2, 2)
    assert [(type(n).__name__, len(consumers[n])) for n in nodes] == [
        (name, count) for _, name, count in examples.nodes()
    ]
    assert len(set(consumers[y])) == 2 and examples.y_uses in (3, 4)
    assert 2 in (consumers[y].count(left), consumers[y].count(right))
    assert [consumers[n] for n in nodes[1:4]] == [[out.grad_fn], [combined], [combined]]
    # each usual slip gives counts of its own: y 2 (distinct), y 1 (once), x's 3 or 4 (paths)
    right, slips = consumer_count_slips(built)
    assert (
        slips
        == {
            "distinct": {y: 2},
            "once": {y: 1},
            "paths": {accumulate: examples.y_uses},
        }
        and right[accumulate] == 1
    )


def _diamond(examples) -> None:
    """a = k * x, b from a, out = a * b: a's node gets two different, positive gradients (b
    directly, a * db/da through b), whose sum, and k times it in x.grad, backward() agrees with;
    the numbers stay integers of moderate size."""
    x, a, out, order = diamond_graph(examples)
    b = out.grad_fn.next_functions[1][0]
    assert type(b).__name__ == MAKE_B[examples.make_b][0] and order[1] is b
    assert [type(n).__name__ for n in order] == [
        "MulBackward0",
        MAKE_B[examples.make_b][0],
        "MulBackward0",
        "AccumulateGrad",
    ]
    assert _walked(out)[a.grad_fn] == [out.grad_fn, b]
    (at_a,) = torch.autograd.grad(out, a, retain_graph=True)
    out.backward()
    assert at_a.item() == examples.at_a == examples.direct + examples.through_b
    assert x.grad.item() == examples.x_grad == examples.k * examples.at_a
    assert 0 < examples.direct != examples.through_b > 0
    assert 2 <= examples.k <= 5 and 1 <= examples.at <= 5 and examples.x_grad <= 10_000


LESSON = "06_backward_by_hand"
STRUCTURE = {
    (LESSON, "consumer_counts"): _two_uses,
    (LESSON, "topological_order"): _two_uses,
    (LESSON, "manual_backward"): _diamond,
    (LESSON, "gradient_at"): _diamond,
}

_RECEIVED = """\
    received = {output.grad_fn: {0: torch.ones_like(output)}}
    with torch.no_grad():
        for node in order:
            grads = received.pop(node)
"""

SLIPS = {
    (LESSON, "consumer_counts"): [
        (
            "def consumer_counts(output):\n"
            "    parents = {output.grad_fn: set()}\n"
            "    todo = [output.grad_fn]\n"
            "    while todo:\n"
            "        node = todo.pop()\n"
            "        for child, _ in node.next_functions:\n"
            "            if child is None:\n"
            "                continue\n"
            "            if child not in parents:\n"
            "                parents[child] = set()\n"
            "                todo.append(child)\n"
            "            parents[child].add(node)\n"
            "    return {node: len(p) for node, p in parents.items()}\n",
            "count every entry of next_functions, not every distinct consumer",
        ),
        (
            "def consumer_counts(output):\n"
            "    counts = {output.grad_fn: 0}\n"
            "    def visit(node):\n"
            "        for child, _ in node.next_functions:\n"
            "            if child is not None:\n"
            "                counts[child] = counts.get(child, 0) + 1\n"
            "                visit(child)\n"
            "    visit(output.grad_fn)\n"
            "    return counts\n",
            "counts the paths from the output to each node",
        ),
        (
            "def consumer_counts(output):\n"
            "    counts, todo = {output.grad_fn: 0}, [output.grad_fn]\n"
            "    while todo:\n"
            "        node = todo.pop()\n"
            "        for child, _ in node.next_functions:\n"
            "            if child is not None and child not in counts:\n"
            "                counts[child] = 1\n"
            "                todo.append(child)\n"
            "    return counts\n",
            "counts each node once, the first time the walk reaches it",
        ),
    ],
    (LESSON, "topological_order"): [
        (
            "def topological_order(output, counts):\n"
            "    order = [output.grad_fn]\n"
            "    for node in order:\n"
            "        for child, _ in node.next_functions:\n"
            "            if child is not None and child not in order:\n"
            "                order.append(child)\n"
            "    return order\n",
            "a node must come after all of its consumers",
        ),
        (
            "def topological_order(output, counts):\n"
            "    waiting = dict(counts)\n"
            "    order, ready = [], [output.grad_fn]\n"
            "    while ready:\n"
            "        node = ready.pop()\n"
            "        order.append(node)\n"
            "        for child in {c for c, _ in node.next_functions if c is not None}:\n"
            "            waiting[child] -= 1\n"
            "            if waiting[child] == 0:\n"
            "                ready.append(child)\n"
            "    return order\n",
            "count down once per entry of next_functions, not once per distinct consumer",
        ),
    ],
    (LESSON, "manual_backward"): [
        (
            "def manual_backward(output, order):\n"
            + _RECEIVED
            + "            results = node(*[grads.get(i) for i in range(max(grads) + 1)])\n"
            "            if isinstance(results, torch.Tensor):\n"
            "                results = (results,)\n"
            "            for (child, index), grad in zip(node.next_functions, results):\n"
            "                if child is not None and grad is not None:\n"
            "                    received.setdefault(child, {})[index] = grad\n",
            "a shared node got the gradient of one path only",
        ),
        (
            "def manual_backward(output, order):\n"
            "    seen = set()\n"
            "    def visit(node, grad):\n"
            "        if node in seen:\n"
            "            return\n"
            "        seen.add(node)\n"
            "        results = node(grad)\n"
            "        if isinstance(results, torch.Tensor):\n"
            "            results = (results,)\n"
            "        for (child, _), g in zip(node.next_functions, results):\n"
            "            if child is not None and g is not None:\n"
            "                visit(child, g)\n"
            "    with torch.no_grad():\n"
            "        visit(output.grad_fn, torch.ones_like(output))\n",
            "a node ran before all its consumers had sent it their gradients",
        ),
    ],
    (LESSON, "gradient_at"): [
        (
            "def gradient_at(output, tensor, order):\n"
            + _RECEIVED
            + "            if node is tensor.grad_fn:\n"
            "                return grads[tensor.output_nr]\n"
            "            results = node(*[grads.get(i) for i in range(max(grads) + 1)])\n"
            "            if isinstance(results, torch.Tensor):\n"
            "                results = (results,)\n"
            "            for (child, index), grad in zip(node.next_functions, results):\n"
            "                if child is not None and grad is not None:\n"
            "                    received.setdefault(child, {})[index] = grad\n",
            "the gradient along some of the paths only",
        ),
        (
            "def gradient_at(output, tensor, order):\n"
            + _RECEIVED
            + "            results = node(*[grads.get(i) for i in range(max(grads) + 1)])\n"
            "            if isinstance(results, torch.Tensor):\n"
            "                results = (results,)\n"
            "            if node is tensor.grad_fn:\n"
            "                return results[0]\n"
            "            for (child, index), grad in zip(node.next_functions, results):\n"
            "                if child is not None and grad is not None:\n"
            "                    kept = received.setdefault(child, {})\n"
            "                    kept[index] = kept[index] + grad if index in kept else grad\n",
            "what tensor's node sends on to its inputs",
        ),
    ],
}
