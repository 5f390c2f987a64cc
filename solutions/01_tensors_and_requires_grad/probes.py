"""Lesson 1 (tensors and requires_grad): what the grader observes of each answer."""

import torch


def test_make_leaf(student, observe, draw):
    # No zeros: all-zero values would let `torch.zeros(len(values), requires_grad=True)` pass.
    values = [draw.integer(1, 9) * draw.choice([-1, 1]) for _ in range(draw.integer(2, 6))]
    leaf = student.make_leaf(values)
    observe("make_leaf(values)", leaf)
    observe("make_leaf(values).is_leaf", leaf.is_leaf)
    observe("make_leaf(values).requires_grad", leaf.requires_grad)
    observe("make_leaf(values).is_floating_point()", leaf.is_floating_point())


def test_int_error(student, observe, draw):
    for counts in (
        [draw.integer(1, 9) for _ in range(draw.integer(2, 6))],
        [draw.integer(0, 20) for _ in range(3)] + [draw.integer(1, 5)],
    ):
        w, loss = student.make_weights(counts)
        observe("w = make_weights(counts)[0]", w)
        observe("w.is_floating_point()", w.is_floating_point())
        observe("w.requires_grad", w.requires_grad)
        observe("w.is_leaf", w.is_leaf)
        observe("loss = make_weights(counts)[1]", loss)
        loss.backward()
        observe("w.grad after loss.backward()", w.grad)


def test_snapshot(student, observe, draw):
    t = draw.tensor(5, requires_grad=True)
    copy = student.snapshot(t)
    observe("snapshot(t)", copy)
    observe("snapshot(t).requires_grad", copy.requires_grad)
    observe("snapshot(t) shares memory with t", copy.data_ptr() == t.data_ptr())
    with torch.no_grad():
        t.add_(1.0)
    observe("snapshot(t) after t changed", copy)
    w = draw.tensor(2, 3, requires_grad=True)
    history = []
    for _ in range(3):
        history.append(student.snapshot(w))
        with torch.no_grad():
            w -= 0.1 * w
    observe("a history of snapshot(w) while w changes in place", list(history))
    computed = draw.tensor(4, requires_grad=True) * 2
    copy = student.snapshot(computed)
    with torch.no_grad():
        computed.add_(1.0)
    observe("snapshot(t) of a computed t, after t changed", copy)
    observe("snapshot(t).requires_grad for a computed t", copy.requires_grad)
