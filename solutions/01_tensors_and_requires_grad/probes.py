"""Lesson 1 (tensors and requires_grad): what the grader observes of each answer."""

import torch


def test_make_leaf(student, observe, draw):
    for rows, cols in ((draw.integer(1, 4), draw.integer(2, 5)), (draw.integer(2, 5), 1)):
        leaf = student.make_leaf(rows, cols)
        observe(f"make_leaf({rows}, {cols})", leaf)
        observe("make_leaf(rows, cols).is_leaf", leaf.is_leaf)
        observe("make_leaf(rows, cols).requires_grad", leaf.requires_grad)
        observe("make_leaf(rows, cols).is_floating_point()", leaf.is_floating_point())
        (leaf * leaf).sum().backward()
        observe("make_leaf(rows, cols).grad after backward()", leaf.grad)


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
    w = draw.tensor(5, requires_grad=True)
    w.grad = draw.tensor(5)  # trained weights carry the gradient of their last step
    w_grad = w.grad.clone()
    trial = student.fresh_leaf(w)
    observe("fresh_leaf(w)", trial)
    observe("fresh_leaf(w) is w", trial is w)
    observe("fresh_leaf(w).is_leaf", trial.is_leaf)
    observe("fresh_leaf(w).requires_grad", trial.requires_grad)
    observe("fresh_leaf(w) shares memory with w", trial.data_ptr() == w.data_ptr())
    (trial**2).sum().backward()
    observe("trial.grad after backward()", trial.grad)
    observe("w.grad after trial's backward() is as it was", torch.equal(w.grad, w_grad))
    with torch.no_grad():
        trial -= 0.1 * trial.grad
    observe("w after an update of trial", w)
    x = draw.tensor(2, 3, requires_grad=True)
    computed = x * 2
    trial = student.fresh_leaf(computed)
    observe("fresh_leaf(t) of a computed t", trial)
    observe("fresh_leaf(t).is_leaf for a computed t", trial.is_leaf)
    observe("fresh_leaf(t).requires_grad for a computed t", trial.requires_grad)
    (trial * 3).sum().backward()
    observe("trial.grad after backward(), for a computed t", trial.grad)
    observe("x.grad after trial's backward(), t = x * 2", x.grad)
    with torch.no_grad():
        computed.add_(1.0)
    observe("fresh_leaf(t) after t changed in place", trial)
