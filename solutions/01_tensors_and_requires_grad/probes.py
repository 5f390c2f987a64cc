"""Lesson 1 (tensors and requires_grad): what the grader observes of each answer."""

import torch

from grader.probing import raised_messages


def test_make_leaf(student, observe, draw):
    values = [draw.integer(-9, 9) for _ in range(draw.integer(2, 6))]
    leaf = student.make_leaf(values)
    observe("make_leaf(values)", leaf)
    observe("make_leaf(values).is_leaf", leaf.is_leaf)
    observe("make_leaf(values).requires_grad", leaf.requires_grad)
    observe("make_leaf(values).is_floating_point()", leaf.is_floating_point())


def test_predict_flags(student, observe, draw):
    for name in ["predict_r1", "predict_r2", "predict_r3", "predict_r4"]:
        observe(name, getattr(student, name))


def test_int_error(student, observe, draw):
    genuine = raised_messages(
        lambda: torch.tensor([1, 2, 3], requires_grad=True),
        lambda: torch.arange(3).requires_grad_(),
        lambda: setattr(torch.arange(3), "requires_grad", True),
    )
    observe("int_error_message", student.int_error_message, one_of=genuine)


def test_snapshot(student, observe, draw):
    t = draw.tensor(5, requires_grad=True)
    copy = student.snapshot(t)
    observe("snapshot(t)", copy)
    observe("snapshot(t).requires_grad", copy.requires_grad)
    observe("snapshot(t) shares memory with t", copy.data_ptr() == t.data_ptr())
    with torch.no_grad():
        t.add_(1.0)
    observe("snapshot(t) after t changed", copy)
