"""Lesson 5's examples: the functions partial_derivatives, gradient_descent and
central_difference are tried on, with their points."""

import torch


def _formula_is_f(examples, *shapes) -> None:
    """The formula the lesson shows is the function the visible test hands over."""
    shown = eval(examples.formula, {"torch": torch})  # the lesson's own text, a lambda
    inputs = [torch.randn(shape, dtype=torch.float64) for shape in shapes]
    assert torch.allclose(shown(*inputs), examples.f(*inputs), rtol=1e-12, atol=1e-12)


def _on_points(examples) -> None:
    """a x sin(b y), a and b from 0.5 to 3, at four points within [-3, 4], in no order and
    unevenly spaced (so the `even` slip shows), with both partial derivatives not all 0."""
    _formula_is_f(examples, 5, 5)
    assert examples.formula.startswith("lambda x, y: ") and "torch.sin(" in examples.formula
    assert 0.5 <= examples.a <= 3 and 0.5 <= examples.b <= 3
    for points in (examples.xs, examples.ys):
        assert len(points) == 4 and len(set(points)) == 4
        assert all(-3 <= v <= 4 for v in points)
        assert list(points) != sorted(points) and list(points) != sorted(points, reverse=True)
        even = torch.linspace(points[0], points[-1], 4, dtype=torch.float64)
        assert not torch.allclose(torch.tensor(points, dtype=torch.float64), even)
    x = torch.tensor(examples.xs, dtype=torch.float64, requires_grad=True)
    y = torch.tensor(examples.ys, dtype=torch.float64, requires_grad=True)
    examples.f(x, y).sum().backward()
    assert x.grad.abs().max() > 0.1 and y.grad.abs().max() > 0.1


def _start(examples) -> None:
    """A quadratic of three variables with one minimum, from three distinct coordinates in
    [-2, 2] where every coordinate of the gradient is not 0, with lr 0.1 and 3 steps."""
    _formula_is_f(examples, 3)
    assert (examples.lr, examples.steps) == (0.1, 3)
    assert len(examples.x0) == 3 and len(set(examples.x0)) == 3
    assert all(-2 <= v <= 2 for v in examples.x0)
    assert abs(examples.k) < 2 and examples.c != 0
    x = torch.tensor(examples.x0, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(examples.f(x), x)
    assert (grad != 0).all()
    assert torch.allclose(grad, torch.tensor(examples.gradient, dtype=torch.float64))


def _nudged(examples) -> None:
    """A cubic (t - c)**3 summed, at two points in [-2, 2] where its partial derivatives are not
    0 and differ, with h = 1e-3."""
    _formula_is_f(examples, 2)
    assert examples.h == 1e-3 and -1.5 <= examples.c <= 1.5
    assert len(examples.x) == 2 and all(-2 <= v <= 2 for v in examples.x)
    x = torch.tensor(examples.x, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(examples.f(x), x)
    assert (grad != 0).all() and grad[0] != grad[1]
    third = torch.autograd.functional.hessian(lambda t: examples.f(t), x.detach())
    assert torch.allclose(third, torch.diag(6 * (x.detach() - examples.c)))


LESSON = "05_gradients_at_work"
STRUCTURE = {
    (LESSON, "partial_derivatives"): _on_points,
    (LESSON, "gradient_descent"): _start,
    (LESSON, "central_difference"): _nudged,
}

SLIPS = {
    (LESSON, "partial_derivatives"): [
        (
            "def partial_derivatives(f, xs, ys):\n"
            "    x = xs.clone().requires_grad_(True)\n"
            "    y = ys.clone().requires_grad_(True)\n"
            "    f(x, y).mean().backward()\n"
            "    return x.grad, y.grad\n",
            "a mean scales every point's term by 1/n",
        ),
        (
            "def partial_derivatives(f, xs, ys):\n"
            "    n = len(xs)\n"
            "    x = torch.linspace(float(xs[0]), float(xs[-1]), n, requires_grad=True)\n"
            "    y = torch.linspace(float(ys[0]), float(ys[-1]), n, requires_grad=True)\n"
            "    f(x, y).sum().backward()\n"
            "    return x.grad, y.grad\n",
            "they are not evenly spaced",
        ),
        (
            "def partial_derivatives(f, xs, ys):\n"
            "    x = xs.clone().requires_grad_(True)\n"
            "    y = ys.clone().requires_grad_(True)\n"
            "    f(x, y).sum().backward()\n"
            "    return y.grad, x.grad\n",
            "dx and dy are swapped",
        ),
    ],
    (LESSON, "gradient_descent"): [
        (
            "def gradient_descent(f, x0, lr, steps):\n"
            "    x = x0.clone().requires_grad_(True)\n"
            "    path = [x0.clone()]\n"
            "    for _ in range(steps):\n"
            "        f(x).backward()\n"
            "        with torch.no_grad():\n"
            "            x -= lr * x.grad\n"
            "        path.append(x.detach().clone())\n"
            "    return torch.stack(path)\n",
            "Gradients accumulate",
        ),
        (
            "def gradient_descent(f, x0, lr, steps):\n"
            "    x = x0.clone().requires_grad_(True)\n"
            "    path = [x0.clone()]\n"
            "    for _ in range(steps):\n"
            "        f(x).backward()\n"
            "        with torch.no_grad():\n"
            "            x += lr * x.grad\n"
            "        x.grad.zero_()\n"
            "        path.append(x.detach().clone())\n"
            "    return torch.stack(path)\n",
            "x walked uphill",
        ),
    ],
    (LESSON, "central_difference"): [
        (
            "def central_difference(f, x, h):\n"
            "    estimate = torch.zeros_like(x)\n"
            "    for i in range(x.numel()):\n"
            "        nudge = torch.zeros_like(x)\n"
            "        nudge.view(-1)[i] = h\n"
            "        estimate.view(-1)[i] = (f(x + nudge) - f(x)) / h\n"
            "    return estimate\n",
            "that is the forward difference",
        ),
        (
            "def central_difference(f, x, h):\n"
            "    return torch.full_like(x, float((f(x + h) - f(x - h)) / (2 * h)))\n",
            "you nudged all of x at once",
        ),
    ],
}
