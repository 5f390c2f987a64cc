"""Lesson 8 (forward mode and Hessians): what the grader observes of each answer."""

import torch
from torch import nn

from grader.lesson_checks.lesson_07 import drawn_model as _drawn_model

# How the exercises ask their answers to be worked out, read from the answers' code in the grading
# process (grader.judging.how): {test: {function: [rule, ...]}}. The reading only flags answers for
# the instructor: the exercises make their rules inevitable (the README's rules, rule by rule).
HOW = {
    "test_jacobian_by_columns": {"jacobian_by_columns": ["using autograd"]},
    "test_hvp": {"hvp": ["using autograd"]},
    "test_per_sample_grads": {"per_sample_grads": ["using autograd"]},
    "test_per_sample_grad_norms": {"per_sample_grad_norms": ["using autograd"]},
}


def _one_more_output(f):
    """f with the sum of its outputs as one more output: a Jacobian with one more row than
    columns, so neither its transpose nor an answer that assumes a square one has its shape."""

    def longer(t):
        out = f(t)
        return torch.cat([out, out.sum(0, keepdim=True)])

    return longer


def test_jacobian_by_columns(student, observe, draw):
    for i, n in enumerate((draw.integer(2, 3), draw.integer(4, 6))):
        f, outputs = draw.mixing_function(n)
        if i == 1 and outputs == n:  # the second Jacobian is never square
            f = _one_more_output(f)
        x = draw.tensor(n, low=-2.0, high=2.0)
        observe(f"the Jacobian of drawn function {i + 1}", student.jacobian_by_columns(f, x))


def test_hvp(student, observe, draw):
    n = draw.integer(3, 6)
    convex, of_two = draw.convex_function(), draw.function_of_two()

    def coupled(t):  # neighbours mixed: a Hessian with entries off its diagonal
        return convex(t).sum() + of_two(t[:-1], t[1:]).sum()

    mixing, _ = draw.mixing_function(n)

    def summed(t):
        return mixing(t).sum()

    # A term whose gradient autograd sees, bend * t, but not its curvature: the t it multiplies
    # by is detached, so autograd's H v leaves out bend * v, which every estimate made from
    # gradients (a finite difference of grad f along v) takes in.
    bend = draw.choice([-1, 1]) * draw.number(0.3, 1.0)

    def bent(f):
        return lambda t: f(t) + bend * (t * t.detach()).sum()

    for name, f in (
        ("a coupled drawn function", bent(coupled)),
        ("a summed drawn function", bent(summed)),
    ):
        x = draw.tensor(n, low=-1.5, high=1.5, dtype=torch.float64)
        v = draw.tensor(n, low=-1.0, high=1.0, dtype=torch.float64)
        observe(f"hvp({name}, x, v)", student.hvp(f, x, v))


def test_per_sample_grads(student, observe, draw):
    n, d = draw.integer(3, 7), draw.integer(2, 5)
    w, xs, ys = (
        draw.tensor(d, low=-0.6, high=0.6),
        draw.tensor(n, d, low=-1.0, high=1.0),
        draw.tensor(n, low=-1.0, high=1.0),
    )
    phi = draw.function()
    result = student.per_sample_grads(w, xs, ys, lambda w, x, y: phi(x @ w - y))
    observe("per_sample_grads(w, xs, ys, loss)", result, atol=1e-4)


def test_per_sample_grad_norms(student, observe, draw):
    sizes = [draw.integer(2, 4) for _ in range(3)]
    model = _drawn_model(draw, sizes, draw.function)
    n = draw.integer(4, 7)
    xs, ys = draw.tensor(n, sizes[0]), draw.tensor(n, sizes[2])
    result = student.per_sample_grad_norms(model, xs, ys, nn.functional.mse_loss)
    observe("per_sample_grad_norms with the mean squared error", result, atol=1e-4)
    phi = draw.function()
    model.zero_grad()
    result = student.per_sample_grad_norms(model, xs, ys, lambda out, y: phi(out - y).mean())
    observe("per_sample_grad_norms with a drawn loss", result, atol=1e-4)
