"""Lesson 3 (backward and scalar outputs): what the grader observes of each answer."""

import torch

from grader.probing import number, raised_messages


def test_dz_dx(student, observe, draw):
    for x in [1.0] + [draw.number(-3.0, 3.0) for _ in range(5)]:
        observe(f"dz_dx({x})", number(student.dz_dx(x)), atol=1e-4)


def test_mean_grad(student, observe, draw):
    for x in [torch.ones(2, 2), draw.tensor(3, 5, dtype=torch.float64)]:
        x.requires_grad_(True)
        observe(f"mean_grad(x) for x of shape {tuple(x.shape)}", student.mean_grad(x))


def test_nonscalar_error(student, observe, draw):
    genuine = raised_messages(
        lambda: (torch.ones(3, requires_grad=True) * 2).backward(),
    )
    observe("nonscalar_error_message", student.nonscalar_error_message, one_of=genuine)


def test_weighted_grads(student, observe, draw):
    x = draw.tensor(2, 3, dtype=torch.float64, requires_grad=True)
    v1, v2 = draw.tensor(2, 3, dtype=torch.float64), draw.tensor(2, 3, dtype=torch.float64)
    pair = student.weighted_grads(x, v1, v2)
    observe("the type weighted_grads returns", type(pair).__name__)
    g1, g2 = pair
    observe("g1", g1)
    observe("g2", g2)


def test_predict_grads(student, observe, draw):
    observe("predict_x_grad", student.predict_x_grad, atol=1e-3)
    observe("predict_w_grad", student.predict_w_grad, atol=1e-3)
