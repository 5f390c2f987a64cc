"""Lesson 7's examples: the function and points newton_step is tried on, and the g and points
of clipped_gradient."""

import torch

from grader.lesson_checks.lesson_07 import clipped_case


def _quartic(examples) -> None:
    """t**4 + a t**2, a from 0.5 to 3, at three distinct points in [-2, 2], none 0: f' != 0 and
    f'' > 0 at each, as the exercise promises."""
    shown = eval(examples.formula, {"torch": torch})  # the lesson's own text, a lambda
    t = torch.randn(5, dtype=torch.float64)
    assert torch.allclose(shown(t), examples.f(t), rtol=1e-12, atol=1e-12)
    assert examples.formula.startswith("lambda t: t**4 + ") and 0.5 <= examples.a <= 3
    assert len(examples.x) == 3 and len(set(examples.x)) == 3
    assert all(-2 <= v <= 2 and v != 0 for v in examples.x)
    x = torch.tensor(examples.x, dtype=torch.float64, requires_grad=True)
    (d1,) = torch.autograd.grad(examples.f(x).sum(), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), x)
    assert (d1 != 0).all() and (d2 > 0).all()


def _clipped(examples) -> None:
    """g(h) = a h**2, a from 0.5 to 2, at three distinct halves x in [-2, 2], none 0: the gradient
    into h is longer than 2 and shorter than 100, and x.grad and the slips' values given are
    autograd's (with the clip written here), all apart."""
    shown = eval(examples.formula, {"torch": torch})  # the lesson's own text, a lambda
    g, value, cases = clipped_case(examples)
    t = torch.randn(5, dtype=torch.float64)
    assert torch.allclose(shown(t), g(t)) and torch.allclose(examples.g(t), g(t))
    assert examples.a in (0.5, 1.0, 1.5, 2.0) and len(set(examples.x)) == 3
    assert all(-2 <= v <= 2 and v != 0 and 2 * v == int(2 * v) for v in examples.x)
    x = torch.tensor(examples.x, dtype=torch.float64, requires_grad=True)
    h = x**3
    (into_h,) = torch.autograd.grad(g(h).sum(), h, retain_graph=True)
    assert 2 < into_h.norm() < 100 and abs(float(g(h).sum().detach()) - value) < 1e-9
    for max_norm, right, wrong in cases:
        x.grad = None
        h.backward(into_h * min(1.0, max_norm / float(into_h.norm())), retain_graph=True)
        assert torch.allclose(x.grad.float(), right)
        values = [right, *wrong.values()]
        for i, u in enumerate(values):
            assert not any(torch.allclose(u, v, atol=1e-3) for v in values[i + 1 :])
    assert [set(wrong) for _, _, wrong in cases] == [{"unclipped", "clamped", "x"}, {"stretched"}]


LESSON = "07_stopping_and_shaping_gradients"
STRUCTURE = {(LESSON, "newton_step"): _quartic, (LESSON, "clipped_gradient"): _clipped}

SLIPS = {
    (LESSON, "newton_step"): [
        (
            "def newton_step(f, x):\n"
            "    t = x.detach().requires_grad_()\n"
            "    (first,) = torch.autograd.grad(f(t).sum(), t)\n"
            "    return x - first\n",
            "that is a gradient-descent step",
        ),
        (
            "def newton_step(f, x):\n"
            "    t = x.detach().requires_grad_()\n"
            "    (first,) = torch.autograd.grad(f(t).sum(), t, create_graph=True)\n"
            "    (second,) = torch.autograd.grad(first.sum(), t)\n"
            "    return first.detach() / second\n",
            "alone, not the new x",
        ),
        (
            "def newton_step(f, x):\n"
            "    t = x.detach().requires_grad_()\n"
            "    f(t).sum().backward(create_graph=True)\n"
            "    first = t.grad.clone()\n"
            "    t.grad.sum().backward()\n"
            "    return x - first.detach() / t.grad\n",
            "backward\\(\\) added it to the first one",
        ),
    ],
    (LESSON, "clipped_gradient"): [
        (
            "def clipped_gradient(x, max_norm, g):\n"
            "    loss = g(x**3).sum()\n"
            "    loss.backward()\n"
            "    return loss\n",
            "x.grad is not clipped",
        ),
        (
            "def clipped_gradient(x, max_norm, g):\n"
            "    h = x**3\n"
            "    h.register_hook(lambda grad: grad.clamp(-max_norm, max_norm))\n"
            "    loss = g(h).sum()\n"
            "    loss.backward()\n"
            "    return loss\n",
            "each entry of the gradient into h was clamped",
        ),
        (
            "def clipped_gradient(x, max_norm, g):\n"
            "    x.register_hook(\n"
            "        lambda grad: grad * torch.clamp(max_norm / grad.norm(), max=1.0)\n"
            "    )\n"
            "    loss = g(x**3).sum()\n"
            "    loss.backward()\n"
            "    return loss\n",
            "the gradient of x was clipped, not the gradient flowing into h",
        ),
        (
            "def clipped_gradient(x, max_norm, g):\n"
            "    h = x**3\n"
            "    h.register_hook(lambda grad: grad * max_norm / grad.norm())\n"
            "    loss = g(h).sum()\n"
            "    loss.backward()\n"
            "    return loss\n",
            "was scaled to length max_norm although it was shorter",
        ),
    ],
}
