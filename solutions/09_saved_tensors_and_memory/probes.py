"""Lesson 9 (saved tensors and memory): what the grader observes of each answer."""

import torch
from torch import nn

from grader.lesson_checks.lesson_09 import DrawnActivation as _Activation

# How the exercises ask their answers to be worked out, read from the answers' code in the grading
# process (grader.judging.how): {test: {function: [rule, ...]}}. The reading only flags answers for
# the instructor: the exercises make their rules inevitable (the README's rules, rule by rule).
HOW = {
    "test_fix_inplace": {"rectified_tanh_grad": ["using autograd"]},
    "test_grad_with_saved_as": {"grad_with_saved_as": ["using autograd"]},
}


def test_saved_bytes(student, observe, draw):
    for dtype in (torch.float32, torch.float64):
        square, other = draw.function(), draw.function()

        def twice(t, square=square, other=other):  # square(t) is saved twice by one node
            u = square(t)
            return u * u + other(t) * t

        x = draw.tensor(draw.integer(3, 7), dtype=dtype)
        observe(f"saved_bytes of a drawn function, {dtype}", student.saved_bytes(twice, x))
        once = draw.function()
        x = draw.tensor(draw.integer(3, 7), dtype=dtype)
        observe(f"saved_bytes of another drawn function, {dtype}", student.saved_bytes(once, x))
        summed = draw.function()

        def sliced(t, summed=summed):  # two slices of t's one storage, and a one-number tensor
            return summed(t).sum() * (t[2:] * t[:-2])

        x = draw.tensor(draw.integer(3, 7), dtype=dtype)
        label = f"saved_bytes of a drawn function that saves slices, {dtype}"
        observe(label, student.saved_bytes(sliced, x))


def test_fix_inplace(student, observe, draw):
    # both signs, in an order drawn: an answer that leaves out the rectification, or gets the
    # negative side wrong, differs from the solution
    values = [-draw.number(0.1, 3.0) for _ in range(4)] + [draw.number(0.1, 3.0) for _ in range(4)]
    order = sorted(range(8), key=lambda _: draw.chance())
    x = torch.tensor([values[i] for i in order])
    observe("rectified_tanh_grad(x, torch.log1p)", student.rectified_tanh_grad(x, torch.log1p))
    g = draw.function()
    observe("rectified_tanh_grad(x, g) for a drawn g", student.rectified_tanh_grad(x.clone(), g))


def test_grad_with_saved_as(student, observe, draw):
    # tight: an exact gradient is 1e-4 off; on float64 numbers, tensors handed back to backward()
    # in float32 make sin's backward take cos in float32, 1e-8 off
    for dtype, stored, rtol, atol in (
        (torch.float32, torch.bfloat16, 1e-6, 1e-9),
        (torch.float64, torch.float16, 1e-12, 1e-14),
    ):
        g, h = draw.function(), draw.function()

        def f(t, g=g, h=h):
            return g(t) * torch.sin(h(t))

        x = draw.tensor(draw.integer(4, 8), dtype=dtype)
        result = student.grad_with_saved_as(f, x, stored)
        label = f"grad_with_saved_as(f, x, {stored}) on {dtype} numbers"
        observe(label, result, rtol=rtol, atol=atol)
        observe(f"the dtype of {label}", str(getattr(result, "dtype", type(result).__name__)))


def test_segment_checkpoint_bytes(student, observe, draw):
    for dtype, left in ((torch.float32, True), (torch.float64, False)):
        k = draw.integer(2, 3)  # a last segment shorter than k, then none
        n = k * draw.integer(2, 3) + (draw.integer(1, k - 1) if left else 0)
        sizes = [draw.integer(2, 5) for _ in range(n + 1)]
        blocks = [
            nn.Sequential(nn.Linear(sizes[i], sizes[i + 1]), _Activation(draw.function())).to(dtype)
            for i in range(n)
        ]
        x = draw.tensor(draw.integer(3, 6), sizes[0], dtype=dtype)
        result = student.segment_checkpoint_bytes(blocks, x, k)
        observe(f"segment_checkpoint_bytes({n} drawn blocks, x, {k}), {dtype}", result)
