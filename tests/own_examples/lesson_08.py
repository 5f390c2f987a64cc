"""Lesson 8's examples: the functions of jacobian_by_columns and hvp, the data of
per_sample_grads."""

import torch

from grader.lesson_checks.lesson_08 import hvp_case, jacobian_case, per_sample_case


def _products(examples) -> None:
    """f(v) = (a v0 v1, b v1 v2, c v0^2) with a, b, c from 1 to 3 at x of whole numbers from 1 to
    3: the Jacobian and f(x) given are autograd's, and no slip gives the Jacobian."""
    f, x, expected, wrong = jacobian_case(examples)
    assert {examples.a, examples.b, examples.c} <= {1, 2, 3} and set(examples.x) <= {1, 2, 3}
    assert torch.equal(torch.func.jacrev(f)(x), expected)
    assert torch.equal(wrong["values"][:, 0], f(x))
    for slip in (expected.T, expected.sum(1, keepdim=True).expand(3, 3), wrong["values"]):
        assert not torch.allclose(slip, expected)


def _cubic(examples) -> None:
    """f(t) = a t0^2 t1 + b t1^3 (a from 1 to 3, b 1 or 2) at x of whole numbers from 1 to 3,
    along v of entries -1, 1 or 2: H v and the slips' values given are autograd's, and no slip
    gives H v."""
    f, x, v, expected, slips = hvp_case(examples)
    assert examples.a in (1, 2, 3) and examples.b in (1, 2)
    assert set(examples.x) <= {1, 2, 3} and set(examples.v) <= {-1, 1, 2}
    hessian = torch.func.hessian(f)(x)
    assert torch.equal(hessian @ v, expected)
    assert torch.equal(torch.func.grad(f)(x), slips["gradient"])
    assert torch.equal(hessian.sum(1), slips["ones"])
    assert torch.equal(hessian.diagonal() * v, slips["diagonal"])
    for slip in slips.values():
        assert not torch.allclose(slip, expected)


def _batch(examples) -> None:
    """w of entries -2, -1, 1 or 2, three distinct rows xs of whole numbers from 0 to 2, three
    distinct targets from -1 to 2, no residual 0: the rows and the slips' values given are
    autograd's, and the slips and the right rows are all apart."""
    w, xs, ys, loss, rows, wrong = per_sample_case(examples)
    assert set(examples.w) <= {-2, -1, 1, 2} and len(examples.w) == 2
    assert len(set(examples.xs)) == 3 and {e for x in examples.xs for e in x} <= {0, 1, 2}
    assert len(set(examples.ys)) == 3 and set(examples.ys) <= {-1, 0, 1, 2}
    assert (xs @ w - ys != 0).all() and examples.rows == rows.int().tolist()
    by_autograd = torch.stack([torch.func.grad(loss)(w, x, y) for x, y in zip(xs, ys, strict=True)])
    assert torch.equal(by_autograd, rows)
    to_x = torch.stack(
        [torch.func.grad(loss, argnums=1)(w, x, y) for x, y in zip(xs, ys, strict=True)]
    )
    assert torch.equal(to_x, wrong["x"]) and torch.equal(by_autograd.cumsum(0), wrong["running"])
    values = [rows, wrong["running"], wrong["x"], rows / 3, rows[-1:].expand(3, 2)]
    for i, a in enumerate(values):
        assert not any(torch.allclose(a, b, atol=1e-3) for b in values[i + 1 :])


LESSON = "08_forward_mode_and_hessians"
STRUCTURE = {
    (LESSON, "jacobian_by_columns"): _products,
    (LESSON, "hvp"): _cubic,
    (LESSON, "per_sample_grads"): _batch,
}

SLIPS = {
    (LESSON, "jacobian_by_columns"): [
        (
            "from torch.func import jvp\n"
            "\n"
            "def jacobian_by_columns(f, x):\n"
            "    return torch.stack([jvp(f, (x,), (e,))[1] for e in torch.eye(len(x))])\n",
            "this is the Jacobian transposed",
        ),
        (
            "from torch.func import jvp\n"
            "\n"
            "def jacobian_by_columns(f, x):\n"
            "    columns = [jvp(f, (x,), (e,))[0] for e in torch.eye(len(x))]\n"
            "    return torch.stack(columns, dim=1)\n",
            "every column holds f",
        ),
        (
            "from torch.func import jvp\n"
            "\n"
            "def jacobian_by_columns(f, x):\n"
            "    columns = [jvp(f, (x,), (torch.ones_like(x),))[1] for _ in range(len(x))]\n"
            "    return torch.stack(columns, dim=1)\n",
            "every column is J·1",
        ),
    ],
    (LESSON, "hvp"): [
        (
            "from torch.func import grad\n\ndef hvp(f, x, v):\n    return grad(f)(x)\n",
            "that is the gradient of f at x",
        ),
        (
            "from torch.func import hessian\n"
            "\n"
            "def hvp(f, x, v):\n"
            "    return hessian(f)(x).diagonal() * v\n",
            "only the diagonal of the Hessian",
        ),
        (
            "def hvp(f, x, v):\n"
            "    t = x.clone().requires_grad_()\n"
            "    (g,) = torch.autograd.grad(f(t), t, create_graph=True)\n"
            "    (second,) = torch.autograd.grad(g.sum(), t)\n"
            "    return second\n",
            "the Hessian times a vector of ones",
        ),
    ],
    (LESSON, "per_sample_grads"): [
        (
            "def per_sample_grads(w, xs, ys, loss):\n"
            "    w = w.clone().requires_grad_()\n"
            "    rows = []\n"
            "    for x, y in zip(xs, ys):\n"
            "        loss(w, x, y).backward()\n"
            "        rows.append(w.grad.clone())\n"
            "    return torch.stack(rows)\n",
            "row i holds the sum of the gradients of examples 0 to i",
        ),
        (
            "def per_sample_grads(w, xs, ys, loss):\n"
            "    return torch.func.vmap(torch.func.grad(loss, argnums=1), in_dims=(None, 0, 0))(\n"
            "        w, xs, ys\n"
            "    )\n",
            "these are the gradients with respect to each x, not w",
        ),
        (
            "def per_sample_grads(w, xs, ys, loss):\n"
            "    grads = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(w, xs, ys)\n"
            "    return grads / len(xs)\n",
            "each row is divided by the number of examples",
        ),
        (
            "def per_sample_grads(w, xs, ys, loss):\n"
            "    w = w.clone().requires_grad_()\n"
            "    rows = []\n"
            "    for x, y in zip(xs, ys):\n"
            "        if w.grad is not None:\n"
            "            w.grad.zero_()\n"
            "        loss(w, x, y).backward()\n"
            "        rows.append(w.grad)\n"
            "    return torch.stack(rows)\n",
            "every row holds the last example's gradient",
        ),
    ],
}
