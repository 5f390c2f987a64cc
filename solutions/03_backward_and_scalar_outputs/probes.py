"""Lesson 3 (backward and scalar outputs): what the grader observes of each answer."""

import torch

from grader.probing import by_hand, number

# Derivatives asked for by hand: each answer is read as a formula that the grader evaluates itself,
# at points drawn for the submission (grader.judging.by_hand). {test: {function: parameter domains}}
BY_HAND = {
    "test_dz_dx": {"dz_dx": [{"low": -3.0, "high": 3.0}]},
    "test_mean_grad": {
        "mean_grad": [{"low": -2.0, "high": 2.0, "shapes": [[2, 2], [3, 5], [7], [2, 3, 2]]}]
    },
}

# How the exercises ask their answers to be worked out, read from the answers' code in the grading
# process (grader.judging.how): {test: {function: [rule, ...]}}. The reading only flags answers for
# the instructor: the exercises make their rules inevitable (the README's rules, rule by rule).
HOW = {
    "test_nonscalar_error": {"error_grad": ["using autograd"]},
    "test_weighted_grads": {"weighted_grads": ["using autograd"]},
    "test_unbroadcast": {"unbroadcast": ["by hand"]},
}


def test_dz_dx(student, observe, draw):
    for x in [1.0] + [draw.number(-3.0, 3.0) for _ in range(5)]:
        observe(f"dz_dx({x})", number(by_hand(student.dz_dx, x)), atol=1e-4)


def test_mean_grad(student, observe, draw):
    for x in [torch.ones(2, 2), draw.tensor(3, 5, dtype=torch.float64), draw.tensor(7)]:
        observe(f"mean_grad(x) for x of shape {tuple(x.shape)}", by_hand(student.mean_grad, x))


def test_nonscalar_error(student, observe, draw):
    for k in range(1, 4):
        error = draw.function()
        n = draw.integer(2, 8)
        w = draw.number(-2.0, 2.0)
        xs, ts = draw.tensor(n, dtype=torch.float64), draw.tensor(n, dtype=torch.float64)
        result = student.error_grad(w, xs, ts, error)
        shown = f"error_grad({w}, xs, ts, error) for {n} points, error {k} drawn at grading time"
        observe(shown, number(result), atol=1e-4)


def test_weighted_grads(student, observe, draw):
    # z of shape (rows, columns): a square one first, where weights given to the columns fit too
    for k, (rows, columns) in enumerate(((3, 3), (draw.integer(2, 4), draw.integer(5, 6))), 1):
        size = draw.integer(2, 4)
        g = draw.function()
        mix = draw.tensor(size, columns, dtype=torch.float64)

        def f(t, g=g, mix=mix):
            return g(t) @ mix

        x = draw.tensor(rows, size, dtype=torch.float64, requires_grad=True)
        v1 = draw.tensor(rows, dtype=torch.float64)
        v2 = draw.tensor(rows, dtype=torch.float64)
        g1, g2 = student.weighted_grads(f, x, v1, v2)
        shown = f"for function {k} drawn at grading time, z of shape ({rows}, {columns})"
        observe(f"g1 {shown}", g1)
        observe(f"g2 {shown}", g2)


def test_unbroadcast(student, observe, draw):
    # leading dimensions added: one, none, one, two, all three (to a 0-d tensor)
    cases = [((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3, 4), (3, 1)), ((2, 3, 4), (4,))]
    cases.append(((3, 2, 2), ()))
    for _ in range(5):
        shape = tuple(draw.choice([1, 2, 3]) for _ in range(draw.integer(0, 3)))
        lead = tuple(draw.integer(2, 4) for _ in range(draw.integer(0, 2)))
        cases.append((lead + tuple(draw.integer(2, 4) if s == 1 else s for s in shape), shape))
    for out, shape in cases:
        grad = draw.tensor(*out, dtype=torch.float64)
        observe(
            f"unbroadcast(grad of shape {out}, {shape})", by_hand(student.unbroadcast, grad, shape)
        )
