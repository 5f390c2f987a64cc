"""Lesson 7 (stopping and shaping gradients): what the grader observes of each answer."""

import torch
from torch import nn

from grader.lesson_checks.lesson_07 import Cube as _Cube  # f'' told to autograd: 6 t + 1, not 6 t
from grader.lesson_checks.lesson_07 import DrawnActivation as _Activation
from grader.probing import by_hand, number

# Derivatives asked for by hand: each answer is read as a formula that the grader evaluates itself,
# at points drawn for the submission (grader.judging.by_hand). {test: {function: parameter domains}}
BY_HAND = {"test_branch_derivative": {"df_branch": [{"low": -2.5, "high": 2.5, "avoid": [0.5]}]}}

# How the exercises ask their answers to be worked out, read from the answers' code in the grading
# process (grader.judging.how): {test: {function: [rule, ...]}}. The reading only flags answers for
# the instructor: the exercises make their rules inevitable (the README's rules, rule by rule).
HOW = {
    "test_fine_tune": {
        "fine_tune": ["using autograd", "with or without an optimizer, as the solution"]
    },
    "test_grad_without_touching": {"trainable_gradients": ["using autograd"]},
    "test_second_derivative": {"newton_step": ["using autograd"]},
    "test_clipped_gradient": {"clipped_gradient": ["using autograd", "with a hook"]},
    "test_fix_inplace": {"softplus_grad": ["using autograd"]},
    "test_safe_norm": {"safe_norm": ["differentiated as written"]},
    "test_per_sample_grads": {"per_sample_grads": ["using autograd"]},
}


def _drawn_model(draw, sizes, activation):
    """Linear layers of the sizes with an activation made of `activation()` (a drawn function)
    between each two, and parameters drawn small enough for the activations to stay moderate."""
    layers = [nn.Linear(sizes[0], sizes[1])]
    for i in range(1, len(sizes) - 1):
        layers += [_Activation(activation()), nn.Linear(sizes[i], sizes[i + 1])]
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(draw.tensor(*p.shape, low=-0.6, high=0.6))
    return model


def test_fine_tune(student, observe, draw):
    for depth in (2, 3):
        sizes = [draw.integer(2, 5) for _ in range(depth + 1)]
        model = _drawn_model(draw, sizes, draw.function)
        n = draw.integer(5, 12)
        inputs, targets = draw.tensor(n, sizes[0]), draw.tensor(n, sizes[-1])
        steps, lr = draw.integer(2, 5), draw.number(0.05, 0.3)
        student.fine_tune(model, inputs, targets, steps, lr)
        for name, p in model.named_parameters():
            observe(f"{depth} layers: {name} after fine_tune", p)
            observe(f"{depth} layers: {name}.requires_grad", p.requires_grad)
        for name, p in model[1:].named_parameters():
            observe(f"{depth} layers: frozen {name}.grad is None", p.grad is None)


def test_grad_without_touching(student, observe, draw):
    sizes = [draw.integer(2, 4) for _ in range(3)]
    model = _drawn_model(draw, sizes, draw.function)
    names = [name for name, _ in model.named_parameters()]
    model.get_parameter(draw.choice(names)).requires_grad_(False)
    for p in model.parameters():
        if draw.chance() < 0.5:
            p.grad = draw.tensor(*p.shape)
    inputs, targets = draw.tensor(5, sizes[0]), draw.tensor(5, sizes[2])
    result = student.trainable_gradients(model, inputs, targets)
    observe("the gradients", list(result) if isinstance(result, list | tuple) else result)
    for name, p in model.named_parameters():
        observe(f"{name}.grad afterwards", p.grad)


def test_second_derivative(student, observe, draw):
    for i in range(2):
        f = draw.convex_function()
        x = draw.tensor(5, low=-2.5, high=2.5, dtype=torch.float64)
        observe(f"the Newton step for drawn function {i + 1}", student.newton_step(f, x))
    x = draw.tensor(5, low=0.5, high=2.0)
    observe("the Newton step for a custom Function", student.newton_step(_Cube.apply, x))


def test_clipped_gradient(student, observe, draw):
    # Small limits clip every gradient drawn (almost always), a large one none.
    limits = [draw.number(0.05, 0.2, digits=2) for _ in range(2)] + [draw.number(30.0, 60.0)]
    for max_norm in limits:
        g = draw.function()
        x = draw.tensor(8, low=-1.4, high=1.4, requires_grad=True)
        loss = student.clipped_gradient(x, max_norm, g)
        observe("the loss returned", number(loss), atol=1e-4)
        observe("x.grad afterwards", x.grad, atol=1e-4)


def test_safe_norm(student, observe, draw):
    n, d = draw.integer(4, 7), draw.integer(2, 4)
    rows = draw.tensor(n, d)
    zero_rows = {draw.integer(0, n - 1) for _ in range(2)}
    for i in zero_rows:
        rows[i] = 0.0
    v = rows.requires_grad_()
    lengths = student.safe_norm(v)
    observe("safe_norm(v)", lengths)
    observe("safe_norm(v) is tracked", bool(lengths.requires_grad))
    if lengths.requires_grad:
        weights = draw.tensor(n, low=-1.0, high=1.0)
        (gradient,) = torch.autograd.grad(lengths, v, weights, create_graph=True)
        observe("its gradient", gradient, atol=1e-4)
        # How the gradient changes along a direction, on the rows that are not zero: 0 for a
        # gradient typed in by hand (v times a constant copy of v / |v|), not for the length.
        direction, rows = draw.tensor(n, d), sorted(set(range(n)) - zero_rows)
        curvature = torch.zeros_like(v)
        if gradient.requires_grad:
            (curvature,) = torch.autograd.grad((gradient * direction).sum(), v, allow_unused=True)
        curvature = torch.zeros_like(v) if curvature is None else curvature
        observe(
            "how its gradient changes along a direction, rows not zero", curvature[rows], atol=1e-4
        )


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


def test_fix_inplace(student, observe, draw):
    x = draw.tensor(6, low=-5.0, high=5.0)
    observe("softplus_grad(x, torch.log)", student.softplus_grad(x, torch.log))
    g, x = draw.function(), draw.tensor(6, low=-3.0, high=0.6)
    observe("softplus_grad(x, g) for a drawn g", student.softplus_grad(x, g))


def test_branch_derivative(student, observe, draw):
    points = [1.0, 0.0, 0.5]
    points += [draw.number(0.51, 2.5) for _ in range(3)]
    points += [draw.number(-2.5, 0.5) for _ in range(3)]
    for x in points:
        observe(f"df_branch({x})", number(by_hand(student.df_branch, x)), atol=1e-4)
