"""Lesson 7 (stopping and shaping gradients): what the grader observes of each answer."""

import torch

from grader.lesson_checks.lesson_07 import Cube as _Cube  # f'' told to autograd: 6 t + 1, not 6 t
from grader.lesson_checks.lesson_07 import drawn_model as _drawn_model
from grader.probing import number

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
}


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
