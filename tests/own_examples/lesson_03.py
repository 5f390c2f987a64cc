"""Lesson 3's examples: the unbroadcast cases."""

import torch


def _unbroadcast_shapes(examples) -> None:
    """Each case's input shape broadcasts to its grad's shape, sizes 2 to 5, in the six kinds."""
    kinds = []
    for grad_shape, shape in examples.cases:
        assert torch.broadcast_shapes(grad_shape, shape) == grad_shape
        assert all(2 <= size <= 5 for size in grad_shape)
        kinds.append((len(grad_shape), tuple(size == 1 for size in shape)))
    assert kinds == [(2, (False,)), (2, (False, True)), (2, (True, False))] + [
        (2, (False, False)),
        (2, (False,)),
        (3, (False, True)),
    ]


def _row_weights(example) -> None:
    """A keeps its zeros and its 1, z is 2x2, v2 has two nonzero weights of opposite signs, and
    the answers the visible test wants, written out, are autograd's on the example."""
    from grader.lesson_checks.lesson_03 import row_weight_answers

    (p, zero), (one, q), (zero_too, minus_r) = example.A
    assert (
        (zero, one, zero_too) == (0, 1, 0) and 1 <= p <= 3 and 1 <= q <= 3 and -3 <= minus_r <= -1
    )
    assert example.v1 == (1, 0) and example.v2[0] > 0 > example.v2[1]
    x, a = (
        torch.tensor(example.x, dtype=torch.float64),
        torch.tensor(example.A, dtype=torch.float64),
    )
    wanted = row_weight_answers(example)

    def vjp(v):
        leaf = x.clone().requires_grad_(True)
        (grad,) = torch.autograd.grad((v * (leaf**2 @ a)).sum(), leaf)
        return grad

    rows = [torch.tensor(v, dtype=torch.float64)[:, None] for v in (example.v1, example.v2, (1, 1))]
    for name, v in zip(("g1", "g2", "ones"), rows, strict=True):
        torch.testing.assert_close(wanted[name].double(), vjp(v))
    columns = [torch.tensor(v, dtype=torch.float64) for v in (example.v1, example.v2)]
    for got, v in zip(wanted["by_column"], columns, strict=True):
        torch.testing.assert_close(got.double(), vjp(v))


LESSON = "03_backward_and_scalar_outputs"
STRUCTURE = {
    (LESSON, "unbroadcast"): _unbroadcast_shapes,
    (LESSON, "weighted_grads"): _row_weights,
}

SLIPS = {
    (LESSON, "weighted_grads"): [
        (
            "def weighted_grads(f, x, v1, v2):\n"
            "    f(x).backward(v1[:, None].expand(2, 2))\n"
            "    g1 = x.grad.clone()\n"
            "    f(x).backward(v2[:, None].expand(2, 2))\n"
            "    return g1, x.grad\n",
            "both gradients added together",
        ),
        (
            "def weighted_grads(f, x, v1, v2):\n"
            "    f(x).sum().backward()\n"
            "    g = x.grad.clone()\n"
            "    return g, g\n",
            "the gradient for weights of all ones",
        ),
        (
            "def weighted_grads(f, x, v1, v2):\n"
            "    f(x).backward(v1.expand(2, 2))\n"
            "    g1 = x.grad.clone()\n"
            "    x.grad = None\n"
            "    f(x).backward(v2.expand(2, 2))\n"
            "    return g1, x.grad\n",
            "it weights the columns of z, not its rows",
        ),
    ],
    (LESSON, "unbroadcast"): [
        (
            "def unbroadcast(grad, shape):\n"
            "    while grad.dim() > len(shape):\n"
            "        grad = grad.mean(dim=0)\n"
            "    for dim, size in enumerate(shape):\n"
            "        if size == 1:\n"
            "            grad = grad.mean(dim=dim, keepdim=True)\n"
            "    return grad\n",
            "it is the mean, not the sum",
        ),
        (
            "def unbroadcast(grad, shape):\n"
            "    while grad.dim() > len(shape):\n"
            "        grad = grad.sum(dim=-1)\n"
            "    return grad\n",
            "lines the shapes up from the right",
        ),
    ],
}
