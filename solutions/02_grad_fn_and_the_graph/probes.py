"""Lesson 2 (grad_fn and the graph): what the grader observes of each answer."""

import torch

from grader.probing import raised_messages


def test_predict_grad_fns(student, observe, draw):
    for name in ["predict_e1", "predict_e2", "predict_e3", "predict_e4"]:
        observe(name, getattr(student, name))


def _first_path(tensor) -> list:
    """The nodes from tensor.grad_fn along the first input of each, at most ten."""
    nodes, node = [], tensor.grad_fn
    while node is not None and len(nodes) < 10:
        nodes.append(node)
        node = next((n for n, _ in node.next_functions if n is not None), None)
    return nodes


def test_build_graph(student, observe, draw):
    for shape in [(4,), (2, 3)]:
        w = draw.tensor(*shape, requires_grad=True)
        result = student.build_graph(w)
        observe(f"build_graph(w) for w of shape {shape}", result, atol=1e-4)
        nodes = _first_path(result)
        observe("its graph, read back", [type(node).__name__ for node in nodes])
        observe("its graph ends at w", getattr(nodes[-1], "variable", None) is w)


BINARY = [torch.add, torch.mul, lambda p, q: p - 2 * q]
UNARY = [torch.sin, lambda p: p**2]


def _random_graph(draw):
    """A random expression over a few leaves; returns (result, {name: leaf} it depends on)."""
    leaves = {f"x{i}": draw.tensor(3, requires_grad=True) for i in range(draw.integer(2, 5))}
    pool = [(leaf, {name}) for name, leaf in leaves.items()]
    pool.append((draw.tensor(3), set()))
    for _ in range(draw.integer(3, 10)):
        (p, p_from), (q, q_from) = draw.choice(pool), draw.choice(pool)
        if draw.chance() < 0.6:
            pool.append((draw.choice(BINARY)(p, q), p_from | q_from))
        else:
            pool.append((draw.choice(UNARY)(p), p_from))
    pool.sort(key=lambda entry: len(entry[1]))
    return pool[-1][0].sum(), leaves


def _names(found, leaves: dict):
    """The leaves found, by name; anything else as '?'. Not a list: its type's name."""
    if not isinstance(found, list | tuple):
        return type(found).__name__
    by_id = {id(leaf): name for name, leaf in leaves.items()}
    return sorted(by_id.get(id(item), "?") for item in found)


def test_leaves_of(student, observe, draw):
    x = draw.tensor(2, 2, requires_grad=True)
    observe("leaves_of(x)", _names(student.leaves_of(x), {"x": x}))
    a, b = draw.tensor(2, requires_grad=True), draw.tensor(2, requires_grad=True)
    observe("leaves_of(a * b + a)", _names(student.leaves_of(a * b + a), {"a": a, "b": b}))
    for _ in range(5):
        result, leaves = _random_graph(draw)
        observe("leaves_of(a random graph)", _names(student.leaves_of(result), leaves))


STEPS = [lambda t: t * 2, lambda t: t.sin(), lambda t: t + 1, lambda t: t**2, lambda t: t.exp()]


def _chain(draw, t, length):
    for _ in range(length):
        t = draw.choice(STEPS)(t)
    return t


def test_graph_depth(student, observe, draw):
    a, b = draw.tensor(2, requires_grad=True), draw.tensor(2, requires_grad=True)
    observe("graph_depth(a)", student.graph_depth(a))
    observe("graph_depth(a * b + a)", student.graph_depth(a * b + a))
    short, long = draw.integer(0, 3), draw.integer(5, 9)
    result = _chain(draw, a, short) + _chain(draw, b, long)
    observe("graph_depth(short chain + long chain)", student.graph_depth(result))
    result = _chain(draw, b, long) * _chain(draw, a, short)
    observe("graph_depth(long chain * short chain)", student.graph_depth(result))
    shared = a
    for _ in range(short + 8):
        shared = shared * shared
    observe("graph_depth(shared nodes)", student.graph_depth(shared.mean()))


def test_inplace_error(student, observe, draw):
    genuine = raised_messages(
        lambda: torch.zeros(3, requires_grad=True).add_(1),
        lambda: torch.zeros(3, requires_grad=True)[0].add_(1),
    )
    observe("inplace_error_message", student.inplace_error_message, one_of=genuine)
