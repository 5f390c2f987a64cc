"""Lesson 7's examples: the function and points newton_step is tried on."""

import torch


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


LESSON = "07_stopping_and_shaping_gradients"
STRUCTURE = {(LESSON, "newton_step"): _quartic}

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
}
