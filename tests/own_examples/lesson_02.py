"""Lesson 2's examples: the graphs of leaves_of and graph_depth."""

import torch

from grader.lesson_checks.lesson_02 import depth_cases, leaves_case


def _leaves(tensor) -> list:
    """The leaves of `tensor`'s graph, found by walking it."""
    found, seen, todo = [], set(), [tensor.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            found.append(node.variable)
        todo.extend(child for child, _ in node.next_functions)
    return found


def _paths_to(node, target) -> int:
    """The number of paths from `node` to the node `target`."""
    if node is target:
        return 1
    return sum(_paths_to(child, target) for child, _ in node.next_functions if child is not None)


def _shared_leaf(examples) -> None:
    """Two leaves, a and b; the one said to be used again is reached along two paths, the other
    along one; the formula shown builds the same graph in Python."""
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    c, expected, shown = leaves_case(examples, a, b)
    assert {id(leaf) for leaf in _leaves(c)} == {id(a), id(b)} and set(expected) == {"a", "b"}
    assert eval(examples.formula, {"a": a, "b": b}).grad_fn.name() == c.grad_fn.name()
    assert torch.equal(eval(examples.formula, {"a": a, "b": b}), c)
    nodes = {
        name: next(n for n, _ in (leaf * 1).grad_fn.next_functions)
        for name, leaf in expected.items()
    }
    again = examples.again
    other = "b" if again == "a" else "a"
    assert _paths_to(c.grad_fn, nodes[again]) == 2 and _paths_to(c.grad_fn, nodes[other]) == 1
    assert len(examples.chain) <= 2 and shown == f"leaves_of({examples.formula})"


def _lengths(node, pick) -> int:
    below = [_lengths(child, pick) for child, _ in node.next_functions if child is not None]
    return 1 + pick(below, default=0)


def _first_visit(node, seen) -> int:
    """What a walk with one visited set for the whole graph measures."""
    seen.add(node)
    below = [
        _first_visit(child, seen)
        for child, _ in node.next_functions
        if child is not None and child not in seen
    ]
    return 1 + max(below, default=0)


def _depth_chains(examples) -> None:
    """A branch of 1 to 3 operations and a shared node with a chain of 3 or 4: the depths, the
    shortest paths and the first-visit walk's depth given are the graphs' own, and the slips
    give numbers apart from the depth."""
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    branch, shared = depth_cases(examples, a, b)
    assert 1 <= len(examples.branch) <= 3 and len(examples.chain) in (3, 4)
    assert examples.inner not in examples.chain
    for case in (branch, shared):
        root = case["tensor"].grad_fn
        assert _lengths(root, max) == case["expected"]
        assert _lengths(root, min) == case["shortest"] < case["expected"] - 1
    assert _first_visit(branch["tensor"].grad_fn, set()) == branch["expected"]
    first = _first_visit(shared["tensor"].grad_fn, set())
    assert first == shared["first_visit"]
    assert first not in (shared["expected"], shared["shortest"], shared["expected"] - 1)


LESSON = "02_grad_fn_and_the_graph"
STRUCTURE = {(LESSON, "leaves_of"): _shared_leaf, (LESSON, "graph_depth"): _depth_chains}

SLIPS = {
    (LESSON, "leaves_of"): [
        (
            "def leaves_of(tensor):\n"
            "    if tensor.grad_fn is None:\n"
            "        return [tensor]\n"
            "    leaves, todo = [], [tensor.grad_fn]\n"
            "    while todo:\n"
            "        node = todo.pop()\n"
            "        if hasattr(node, 'variable'):\n"
            "            leaves.append(node.variable)\n"
            "        todo.extend(child for child, _ in node.next_functions if child is not None)\n"
            "    return leaves\n",
            "lists a leaf more than once",
        ),
        (
            "def leaves_of(tensor):\n"
            "    node = tensor.grad_fn\n"
            "    if node is None:\n"
            "        return [tensor]\n"
            "    while not hasattr(node, 'variable'):\n"
            "        node = node.next_functions[0][0]\n"
            "    return [node.variable]\n",
            "misses b: follow every entry of next_functions",
        ),
    ],
    (LESSON, "graph_depth"): [
        (
            "def graph_depth(tensor):\n"
            "    seen = set()\n"
            "\n"
            "    def depth(node):\n"
            "        if node in seen:\n"
            "            return 0\n"
            "        seen.add(node)\n"
            "        below = [depth(c) for c, _ in node.next_functions if c is not None]\n"
            "        return 1 + max(below, default=0)\n"
            "\n"
            "    return 0 if tensor.grad_fn is None else depth(tensor.grad_fn)\n",
            "counts only the first time your walk reaches it",
        ),
        (
            "def graph_depth(tensor):\n"
            "    def depth(node):\n"
            "        below = [depth(c) for c, _ in node.next_functions if c is not None]\n"
            "        return 1 + min(below, default=0)\n"
            "\n"
            "    return 0 if tensor.grad_fn is None else depth(tensor.grad_fn)\n",
            r"2 is the length of the shortest path: keep the longest one",
        ),
    ],
}
