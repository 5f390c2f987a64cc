"""Lesson 11's examples: the graphs topological_order and backward walk, the functions gradients
and descend differentiate."""

import math

import pytest
import torch

from grader.lesson_checks.lesson_11 import Node, backward_case, descend_case, gradients_case


def _apart(*answers, by: float) -> bool:
    return all(
        max(abs(p - q) for p, q in zip(one, other, strict=True)) > by
        for i, one in enumerate(answers)
        for other in answers[i + 1 :]
    )


def _order_graphs(graphs) -> None:
    """A diamond x, a = x * c, b = a + d, out = a * b and y = x * x + x: nonzero inputs, small
    whole constants."""
    assert graphs.x != 0 and graphs.w != 0 and abs(graphs.x) <= 3 and abs(graphs.w) <= 3
    assert graphs.c in (2.0, 3.0, 4.0, 5.0) and graphs.d in (1.0, 2.0, 3.0)


def _walk(order, output, *, start=True, backward=True, add=True, each_entry=True) -> None:
    """A backward pass over `order`, or one of its usual slips: no gradient of 1 at the output
    (`start`), the order walked from the leaves (`backward`), each share stored with = (`add`),
    a parent listed twice handed one share (`each_entry`)."""
    if start:
        output.grad = 1.0
    for node in reversed(order) if backward else order:
        pairs = list(zip(node.parents, node.local_grads, strict=True))
        if not each_entry:
            pairs = list({id(parent): (parent, local) for parent, local in pairs}.values())
        for parent, local in pairs:
            parent.grad = parent.grad + node.grad * local if add else node.grad * local


def _walked(x: float, y: float, **slip) -> list[float]:
    """The .grad of x, y, a, s, out after a walk (or a slip's) of exercise 3's graph."""
    nx, ny = Node(x), Node(y)
    na = Node(x * y, (nx, ny), (y, x))
    ns = Node(na.data * na.data, (na, na), (na.data, na.data))
    out = Node(ns.data + x, (ns, nx), (1.0, 1.0))
    order = [nx, ny, na, ns, out]
    _walk(order, out, **slip)
    return [node.grad for node in order]


def _backward_graph(leaves) -> None:
    """a = x * y, s = a * a, out = s + x: the chain rule's gradients, which every usual slip
    misses; the values written out for the right walk and each slip are what a walk gives."""
    x, y = leaves.x, leaves.y
    assert 0.5 <= abs(x) <= 2.5 and 0.5 <= abs(y) <= 2.5
    right, slips = backward_case(x, y)
    want = {"x": 1 + 2 * x * y * y, "y": 2 * x * x * y, "a": 2 * x * y, "s": 1.0, "out": 1.0}
    assert all(math.isclose(right[n], want[n], abs_tol=1e-12) for n in want)
    assert list(want.values()) == pytest.approx(_walked(x, y), abs=1e-12)
    walks = {"replaced": {"add": False}, "forward": {"backward": False}}
    walks |= {"one_share": {"each_entry": False}, "unstarted": {"start": False}}
    for slip, how in walks.items():
        assert slips[slip] == pytest.approx(_walked(x, y, **how), abs=1e-12), slip
    assert _apart(list(right.values()), *slips.values(), by=0.05)


def _torch_gradients(f, xs) -> list[float]:
    tensors = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    f(*tensors).backward()
    return [t.grad.item() for t in tensors]


def _gradients_function(point) -> None:
    """a * e**(k b) + tanh(a - b) + sin(a) as a constant: the gradients are torch's, with
    detach() for the constant; a finite difference and zeros are apart from them."""
    a, b, k = point.a, point.b, point.k
    assert 0.2 <= abs(a) <= 1.2 and 0.2 <= abs(b) <= 1.5 and k in (0.5, 1.0, 1.5, 2.0)
    right, slips = gradients_case(a, b, k)
    torch_right = _torch_gradients(
        lambda a, b: a * torch.exp(k * b) + torch.tanh(a - b) + torch.sin(a.detach()), [a, b]
    )
    assert all(math.isclose(r, t, abs_tol=1e-12) for r, t in zip(right, torch_right, strict=True))
    assert _apart(right, *slips.values(), by=0.01)


def _descend_function(start) -> None:
    """(a - c)**2 + tanh(a b) + b**2 + cos(b) as a constant, three steps at lr 0.1: where they
    end is where torch's gradients lead; each usual slip ends elsewhere."""
    c, xs = start.c, start.xs
    assert c in (0.5, 1.0, 1.5, 2.0) and abs(start.a) <= 1 and 0.2 <= abs(start.b) <= 1
    assert (start.lr, start.steps) == (0.1, 3)
    right, slips = descend_case(c, xs, start.lr, start.steps)
    point = list(xs)
    for _ in range(3):
        slopes = _torch_gradients(
            lambda a, b: (a - c) ** 2 + torch.tanh(a * b) + b**2 + torch.cos(b.detach()), point
        )
        point = [p - 0.1 * g for p, g in zip(point, slopes, strict=True)]
    assert all(math.isclose(r, p, abs_tol=1e-12) for r, p in zip(right, point, strict=True))
    assert _apart(right, *slips.values(), by=0.01)


LESSON = "11_an_engine_of_your_own"
STRUCTURE = {
    (LESSON, "topological_order"): _order_graphs,
    (LESSON, "backward"): _backward_graph,
    (LESSON, "gradients"): _gradients_function,
    (LESSON, "descend"): _descend_function,
}

SLIPS = {
    (LESSON, "topological_order"): [
        (
            "def topological_order(output):\n"
            "    order, stack = [], [(output, False)]\n"
            "    while stack:\n"
            "        node, expanded = stack.pop()\n"
            "        if expanded:\n"
            "            order.append(node)\n"
            "        else:\n"
            "            stack.append((node, True))\n"
            "            stack.extend((parent, False) for parent in node.parents)\n"
            "    return order\n",
            "more than once",
        ),
        (
            "def topological_order(output):\n"
            "    order, visited, stack = [], {id(output)}, [output]\n"
            "    while stack:\n"
            "        node = stack.pop()\n"
            "        order.append(node)\n"
            "        for parent in node.parents:\n"
            "            if id(parent) not in visited:\n"
            "                visited.add(id(parent))\n"
            "                stack.append(parent)\n"
            "    return order\n",
            "lists the output first",
        ),
    ],
    (LESSON, "backward"): [
        (
            "def backward(output, order):\n"
            "    output.grad = 1.0\n"
            "    for node in reversed(order):\n"
            "        for parent, local in zip(node.parents, node.local_grads):\n"
            "            parent.grad = node.grad * local\n",
            "A later share replaced an earlier one",
        ),
        (
            "def backward(output, order):\n"
            "    output.grad = 1.0\n"
            "    for node in order:\n"
            "        for parent, local in zip(node.parents, node.local_grads):\n"
            "            parent.grad += node.grad * local\n",
            "walked from the leaves to the output",
        ),
        (
            "def backward(output, order):\n"
            "    output.grad = 1.0\n"
            "    for node in reversed(order):\n"
            "        for parent, local in dict(zip(node.parents, node.local_grads)).items():\n"
            "            parent.grad += node.grad * local\n",
            "received one share instead of two",
        ),
        (
            "def backward(output, order):\n"
            "    for node in reversed(order):\n"
            "        for parent, local in zip(node.parents, node.local_grads):\n"
            "            parent.grad += node.grad * local\n",
            "nothing started the chain rule",
        ),
        (
            "def backward(output, order):\n"
            "    output.grad = 1.0\n"
            "    for node in reversed(order):\n"
            "        for parent, local in zip(node.parents, node.local_grads):\n"
            "            parent.grad += node.grad * parent.data\n",
            "but the chain rule gives",
        ),
    ],
    (LESSON, "gradients"): [
        (
            "def gradients(f, xs):\n"
            "    h, slopes = 1e-6, []\n"
            "    for i in range(len(xs)):\n"
            "        up = [Value(x + h * (j == i)) for j, x in enumerate(xs)]\n"
            "        down = [Value(x - h * (j == i)) for j, x in enumerate(xs)]\n"
            "        slopes.append((f(*up).data - f(*down).data) / (2 * h))\n"
            "    return slopes\n",
            "a finite difference",
        ),
        (
            "def gradients(f, xs):\n"
            "    out = f(*[Value(x) for x in xs])\n"
            "    backward(out, topological_order(out))\n"
            "    return [Value(x).grad for x in xs]\n",
            "every gradient is 0",
        ),
    ],
    (LESSON, "descend"): [
        (
            "def descend(f, xs, lr, steps):\n"
            "    values = [Value(float(x)) for x in xs]\n"
            "    for _ in range(steps):\n"
            "        out = f(*values)\n"
            "        backward(out, topological_order(out))\n"
            "        for v in values:\n"
            "            v.data -= lr * v.grad\n"
            "    return [v.data for v in values]\n",
            "still held the earlier steps' gradients",
        ),
        (
            "def descend(f, xs, lr, steps):\n"
            "    xs = list(xs)\n"
            "    for _ in range(steps):\n"
            "        xs = [x + lr * g for x, g in zip(xs, gradients(f, xs))]\n"
            "    return xs\n",
            "the steps went uphill",
        ),
        (
            "def descend(f, xs, lr, steps):\n"
            "    xs, h = list(xs), 1e-6\n"
            "    for _ in range(steps):\n"
            "        slopes = []\n"
            "        for i in range(len(xs)):\n"
            "            up = [Value(x + h * (j == i)) for j, x in enumerate(xs)]\n"
            "            down = [Value(x - h * (j == i)) for j, x in enumerate(xs)]\n"
            "            slopes.append((f(*up).data - f(*down).data) / (2 * h))\n"
            "        xs = [x - lr * g for x, g in zip(xs, slopes)]\n"
            "    return xs\n",
            "a finite difference",
        ),
        (
            "def descend(f, xs, lr, steps):\n"
            "    xs = list(xs)\n"
            "    for _ in range(steps - 1):\n"
            "        xs = [x - lr * g for x, g in zip(xs, gradients(f, xs))]\n"
            "    return xs\n",
            "that is where two steps end",
        ),
    ],
}
# Their answers and visible tests use the lesson's code above them (Value, its operations, the
# earlier exercises' answers).
LESSON_CODE = set(STRUCTURE)
