"""Lesson 5 (gradients at work): what the grader observes of each answer."""

import torch
from torch.autograd import gradcheck
from torch.autograd.function import BackwardCFunction

from grader.probing import ProbeError, by_hand, number

# Derivatives asked for by hand: each answer is read as a formula that the grader evaluates itself,
# at points drawn for the submission (grader.judging.by_hand). {test: {function: parameter domains}}
BY_HAND = {"test_hand_derivative": {"dg": [{"low": -4.0, "high": 4.0}]}}

# How the exercises ask their answers to be worked out, read from the answers' code in the grading
# process (grader.judging.how): {test: {function: [rule, ...]}}. The reading only flags answers for
# the instructor: the exercises make their rules inevitable (the README's rules, rule by rule).
HOW = {
    "test_derivative_on_grid": {"partial_derivatives": ["using autograd"]},
    "test_gradient_descent": {"gradient_descent": ["using autograd"]},
    "test_central_difference": {"central_difference": ["by hand"]},
}


def test_hand_derivative(student, observe, draw):
    for x in [1.0, 2.0] + [draw.number(-4.0, 4.0) for _ in range(8)]:
        value = by_hand(student.dg, x)
        observe(
            f"dg({x}) is a plain Python number",
            isinstance(value, int | float) and not isinstance(value, bool),
        )
        # exact: a finite difference, an estimate, is off by 1e-11 or more
        observe(f"dg({x})", number(value), rtol=1e-12, atol=1e-12)


def test_derivative_on_grid(student, observe, draw):
    for k in range(1, 4):
        f = draw.function_of_two()
        n = draw.integer(3, 30)
        xs, ys = draw.tensor(n), draw.tensor(n)  # unsorted, unevenly spaced
        shown = f"partial_derivatives(f, xs, ys) for {n} points, f {k} drawn at grading time"
        result = student.partial_derivatives(f, xs, ys)
        observe(f"the type {shown} returns", type(result).__name__, one_of=("tuple", "list"))
        observe(f"{shown}", list(result))


def test_gradient_descent(student, observe, draw):
    for k in range(1, 4):
        n = draw.integer(2, 5)
        convex, of_two = draw.convex_function(), draw.function_of_two()

        def f(t, convex=convex, of_two=of_two):  # neighbours coupled: a gradient that mixes
            return convex(t).sum() + 0.3 * of_two(t[:-1], t[1:]).sum()

        x0 = draw.tensor(n)
        lr, steps = draw.number(0.01, 0.05), draw.integer(2, 10)
        path = student.gradient_descent(f, x0, lr, steps)
        shown = f"gradient_descent(f, x0, {lr}, {steps}) for x0 of {n} elements"
        observe(f"the path of {shown}, f {k} drawn at grading time", path, atol=1e-4)
        observe(f"x0 after {shown} (unchanged)", x0)


SCALAR_FUNCTIONS = {
    "sum(t**3)": lambda t: (t**3).sum(),
    "prod(sin(t))": lambda t: torch.sin(t).prod(),
    "sum(t * roll(t))": lambda t: (t * t.roll(1)).sum(),
    "logsumexp(t)": lambda t: torch.logsumexp(t.reshape(-1), 0),
}


def test_central_difference(student, observe, draw):
    for formula, fn in SCALAR_FUNCTIONS.items():
        shape = draw.choice([(draw.integer(2, 6),), (2, 3)])
        x = draw.tensor(*shape, dtype=torch.float64)
        h = draw.choice([1e-2, 1e-3, 1e-4])
        before = x.clone()
        estimate = by_hand(student.central_difference, fn, x, h)
        observe(f"central_difference({formula}, x, {h})", estimate, rtol=1e-7, atol=1e-9)
        observe("x after the call (unchanged)", x, rtol=0.0, atol=1e-12)
        estimate = by_hand(student.central_difference, fn, before, 1e-5)
        observe(f"central_difference({formula}, x, 1e-5)", estimate, rtol=1e-6, atol=1e-6)


def _scaled_square(student):
    """The student's scaled_square; ScaledSquare.apply if only the class is defined."""
    try:
        return student.scaled_square
    except ProbeError:
        return student.ScaledSquare.apply


def test_cube_function(student, observe, draw):
    scaled_square = _scaled_square(student)
    w = draw.tensor(5, low=-3.0, high=3.0, dtype=torch.float64, requires_grad=True)
    x = draw.tensor(5, low=-3.0, high=3.0, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():  # zeros too: a backward that divides by w or x gives nan there
        w[draw.integer(0, 1)] = 0.0
        x[draw.integer(2, 4)] = 0.0
    y = scaled_square(w, x)
    observe("scaled_square(w, x)", y)
    own = isinstance(y.grad_fn, BackwardCFunction)
    observe("scaled_square(w, x) comes from a torch.autograd.Function", own)
    grad_output = draw.tensor(5, dtype=torch.float64)
    if own:  # the student's backward alone, with autograd switched off
        observe("forward saved tensors for backward", len(y.grad_fn.saved_tensors) > 0)
        grads = by_hand(y.grad_fn.apply, grad_output)
        pair = isinstance(grads, tuple) and len(grads) == 2
        observe("the backward returned a tuple of two gradients", pair)
        if pair:
            observe("the backward's gradient for w", grads[0])
            observe("the backward's gradient for x", grads[1])
    y.backward(grad_output)
    observe("w.grad after scaled_square(w, x).backward(grad_output)", w.grad)
    observe("x.grad after scaled_square(w, x).backward(grad_output)", x.grad)
    points = [
        draw.tensor(5, low=-3.0, high=3.0, dtype=torch.float64, requires_grad=True)
        for _ in range(2)
    ]
    observe(
        "gradcheck(scaled_square)", gradcheck(scaled_square, tuple(points), raise_exception=False)
    )
