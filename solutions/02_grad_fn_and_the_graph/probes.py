"""Lesson 2 (grad_fn and the graph): what the grader observes of each answer."""


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


STEPS = [lambda t: t * 2, lambda t: t.sin(), lambda t: t + 1, lambda t: t**2, lambda t: t.exp()]


def _chain(draw, t, length):
    for _ in range(length):
        t = draw.choice(STEPS)(t)
    return t


def _names(found, names: dict):
    """The leaves found, by name (`names`: each leaf's name by its id); anything else as '?'.
    Not a list: its type's name."""
    if not isinstance(found, list | tuple):
        return type(found).__name__
    return sorted(names.get(id(item), "?") for item in found)


def _leaves_cases(draw) -> list:
    """The graphs leaves_of is asked about, as (shown, output, each leaf's name by its id): the
    leaves themselves are kept only by the graphs, so none is in reach while an answer runs
    (the output `x`, a leaf, is its own answer)."""
    x = draw.tensor(2, 2, requires_grad=True)
    a, b = draw.tensor(2, requires_grad=True), draw.tensor(2, requires_grad=True)
    y = _chain(draw, a, draw.integer(1, 3)) * b
    longer = _chain(draw, y, draw.integer(2, 4))
    of_x, of_ab = {id(x): "x"}, {id(a): "a", id(b): "b"}
    cases = [
        ("x", x, of_x),
        ("a * b + a", a * b + a, of_ab),
        ("x * x", x * x, of_x),
        ("a + a * b", a + a * b, of_ab),
        ("y + a chain from y", y + longer, of_ab),
        ("a chain from y * y", longer * y, of_ab),
    ]
    for _ in range(4):
        graph = draw.graph(leaves=draw.integer(2, 4), steps=draw.integer(4, 9))
        names = {id(leaf): f"x{i}" for i, leaf in enumerate(graph.leaves)}
        cases.append(("a random graph", graph.output, names))
    return cases


def test_leaves_of(student, observe, draw):
    for shown, output, names in _leaves_cases(draw):
        observe(f"leaves_of({shown})", _names(student.leaves_of(output), names))


def test_graph_depth(student, observe, draw):
    a, b = draw.tensor(2, requires_grad=True), draw.tensor(2, requires_grad=True)
    observe("graph_depth(a)", student.graph_depth(a))
    observe("graph_depth(a * b + a)", student.graph_depth(a * b + a))
    short, long = draw.integer(0, 3), draw.integer(5, 9)
    result = _chain(draw, a, short) + _chain(draw, b, long)
    observe("graph_depth(short chain + long chain)", student.graph_depth(result))
    result = _chain(draw, b, long) * _chain(draw, a, short)
    observe("graph_depth(long chain * short chain)", student.graph_depth(result))
    # A node reached first along a short path, then again along a longer one: it counts on both.
    y = _chain(draw, a, draw.integer(1, 3))
    for shown, first in (("y + a longer chain from y", True), ("a longer chain from y * y", False)):
        longer = _chain(draw, y, draw.integer(5, 7))
        result = y + longer if first else longer * y
        observe(f"graph_depth({shown})", student.graph_depth(result))
    shared = a
    for _ in range(short + 8):
        shared = shared * shared
    observe("graph_depth(shared nodes)", student.graph_depth(shared.mean()))
    for _ in range(3):
        graph = draw.graph(leaves=draw.integer(2, 4), steps=draw.integer(4, 9))
        observe("graph_depth(a random graph)", student.graph_depth(graph.output))
        detour = graph.leaves[0].sin() + graph.output
        observe("graph_depth(x0.sin() + a random graph)", student.graph_depth(detour))


def test_inplace_error(student, observe, draw):
    for shape in [(draw.integer(2, 6),), (2, 3)]:
        w = draw.tensor(*shape, requires_grad=True)
        loss = student.sigmoid_loss(w)
        observe(f"sigmoid_loss(w) for w of shape {shape}", loss)
        observe("w after the call", w)
        observe("w.is_leaf after the call", w.is_leaf)
        loss.backward()
        observe("w.grad after loss.backward()", w.grad)
