"""Lesson 4 (retain_graph and accumulation): what the grader observes of each answer."""

import torch

from grader.probing import number, raised_messages


def test_batch_gradients(student, observe, draw):
    n = draw.integer(6, 9)
    w = draw.tensor(3, requires_grad=True)
    batches = [(draw.tensor(n, 3), draw.tensor(n)) for _ in range(3)]
    gradients = student.batch_gradients(w, batches)
    observe("the type batch_gradients returns", type(gradients).__name__)
    observe("the gradient of each batch", gradients)
    observe("w.grad afterwards", w.grad)


def test_predict_grads(student, observe, draw):
    for name in ["predict_a", "predict_b", "predict_c"]:
        observe(name, getattr(student, name))


def test_twice_error(student, observe, draw):
    genuine = raised_messages(
        lambda: _backward_twice(),
    )
    observe("twice_error_message", student.twice_error_message, one_of=genuine)


def test_hidden_gradient(student, observe, draw):
    x = draw.tensor(5, requires_grad=True)
    observe("hidden_gradient(x)", student.hidden_gradient(x))


def test_derive_by_hand(student, observe, draw):
    for x in [1.0] + [draw.number(-3.0, 3.0) for _ in range(4)]:
        observe(f"df({x})", number(student.df(x)), atol=1e-4)
        observe(f"grad_after_three({x})", number(student.grad_after_three(x)), atol=1e-4)


def test_sgd_step(student, observe, draw):
    lr = draw.number(0.05, 0.3)
    target = draw.tensor(4)
    w = draw.tensor(4, requires_grad=True)
    for step in ["one", "two"]:
        ((w - target) ** 2).sum().backward()
        student.sgd_step(w, lr)
        observe(f"w after {step} sgd_step", w)
        observe("w is still a leaf", w.is_leaf)
        observe("w.grad is cleared", w.grad is None or not bool(w.grad.any()))


def _backward_twice():
    x = torch.tensor(2.0, requires_grad=True)
    y = x * x
    y.backward()
    y.backward()
