"""Lesson 7 (stopping and shaping gradients): what the grader observes of each answer."""

import torch
from torch import nn

from grader.probing import autograd_called, by_hand, hooks_registered, number


class _Slope(torch.autograd.Function):
    """3 t**2 going forward; autograd is told that its derivative is 6 t + 1."""

    generate_vmap_rule = True

    @staticmethod
    def forward(t):
        return 3 * t**2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved_tensors
        return grad * (6 * t + 1)


class _Cube(torch.autograd.Function):
    """t**3 going forward; autograd's derivative is _Slope, so its f'' is 6 t + 1, not 6 t."""

    generate_vmap_rule = True

    @staticmethod
    def forward(t):
        return t**3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved_tensors
        return grad * _Slope.apply(t)


ELEMENTWISE = {
    "sin": torch.sin,
    "cube": lambda t: t**3,
    "exp": torch.exp,
    "x sin x": lambda t: t * torch.sin(t),
    "tanh": torch.tanh,
    "a custom Function": _Cube.apply,
}
SCALAR = {
    "sum of cubes": lambda t: (t**3).sum(),
    "sum of sines": lambda t: torch.sin(t).sum(),
    "mean of squares": lambda t: (t * t).mean(),
    "product of exps": lambda t: torch.exp(t).prod(),
}


def test_fine_tune(student, observe, draw):
    n_in, n_hidden, n_out = draw.integer(2, 5), draw.integer(3, 6), draw.integer(1, 3)
    model = nn.Sequential(nn.Linear(n_in, n_hidden), nn.Tanh(), nn.Linear(n_hidden, n_out))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(draw.tensor(*p.shape, low=-1.0, high=1.0))
    n = draw.integer(5, 12)
    inputs, targets = draw.tensor(n, n_in), draw.tensor(n, n_out)
    steps, lr = draw.integer(2, 5), draw.number(0.05, 0.3)
    _, used = autograd_called(student.fine_tune, model, inputs, targets, steps, lr)
    observe("autograd was called", used)
    for name, p in model.named_parameters():
        observe(f"{name} after fine_tune", p)
        observe(f"{name}.requires_grad", p.requires_grad)
    for name, p in model[:-1].named_parameters():
        observe(f"frozen {name}.grad is None", p.grad is None)


def test_grad_without_touching(student, observe, draw):
    for preset in [True, False]:
        label = draw.choice(sorted(SCALAR))
        x = draw.tensor(4, low=-1.5, high=1.5, requires_grad=True)
        x.grad = draw.tensor(4) if preset else None
        gradient, used = autograd_called(student.grad_without_touching, SCALAR[label], x)
        observe(f"the gradient of the {label}", gradient)
        observe("autograd was called", used)
        observe("x.grad afterwards", x.grad)


def test_second_derivative(student, observe, draw):
    for label in sorted(ELEMENTWISE):
        x = draw.tensor(5)
        result, used = autograd_called(student.second_derivative, ELEMENTWISE[label], x)
        observe(f"f'' of {label}", result, atol=1e-4)
        observe("autograd was called", used)


def test_clipped_gradient(student, observe, draw):
    for _ in range(2):
        x = draw.tensor(6, requires_grad=True)
        limit = draw.number(0.5, 3.0, digits=2)
        (loss, hooks), used = autograd_called(hooks_registered, student.clipped_gradient, x, limit)
        observe("the loss returned", number(loss), atol=1e-4)
        observe("autograd was called", used)
        observe("a hook was registered", hooks >= 1)
        observe("x.grad afterwards", x.grad, atol=1e-4)


def test_fix_inplace(student, observe, draw):
    x = draw.tensor(6, low=-5.0, high=5.0)
    gradient, used = autograd_called(student.softplus_grad, x)
    observe("softplus_grad(x)", gradient)
    observe("autograd was called", used)


def test_branch_derivative(student, observe, draw):
    points = [1.0, 0.0, 0.5]
    points += [draw.number(0.51, 2.5) for _ in range(3)]
    points += [draw.number(-2.5, 0.5) for _ in range(3)]
    for x in points:
        observe(f"df_branch({x})", number(by_hand(student.df_branch, x)), atol=1e-4)
