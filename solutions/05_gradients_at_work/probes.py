"""Lesson 5 (gradients at work): what the grader observes of each answer."""

import torch
from torch.autograd import gradcheck

from grader.probing import number


def test_hand_derivative(student, observe, draw):
    for x in [1.0, 2.0] + [draw.number(-4.0, 4.0) for _ in range(8)]:
        observe(f"dg({x})", number(student.dg(x)), atol=1e-4)


FUNCTIONS = {
    "torch.sin": torch.sin,
    "torch.exp": torch.exp,
    "t**3 - 2t": lambda t: t**3 - 2 * t,
    "tanh(2t)": lambda t: torch.tanh(2 * t),
}


def test_derivative_on_grid(student, observe, draw):
    for formula, fn in FUNCTIONS.items():
        low = draw.number(-3.0, 0.0)
        grid = torch.linspace(low, low + draw.number(1.0, 3.0), draw.integer(3, 40))
        calls = []

        def counted(t, fn=fn, calls=calls):
            calls.append(1)
            return fn(t)

        observe(f"derivative_on_grid({formula}, grid)", student.derivative_on_grid(counted, grid))
        observe(f"calls of {formula}", len(calls))


def test_gradient_descent(student, observe, draw):
    runs = [(2.0, 0.05, 3)]
    for _ in range(4):
        x0 = round(draw.choice([-1, 1]) * draw.number(0.5, 3.0) - 1, 3)
        runs.append((x0, draw.number(0.01, 0.05), draw.integer(2, 10)))
    for x0, lr, steps in runs:
        result = number(student.gradient_descent(x0, lr, steps))
        observe(f"gradient_descent({x0}, {lr}, {steps})", result, atol=1e-4)


def test_central_difference(student, observe, draw):
    for formula, fn in FUNCTIONS.items():
        x = draw.tensor(draw.integer(1, 6), dtype=torch.float64)
        h = draw.choice([1e-2, 1e-3, 1e-4])
        estimate = student.central_difference(fn, x, h)
        observe(f"central_difference({formula}, x, {h})", estimate, rtol=1e-7, atol=1e-9)
        estimate = student.central_difference(fn, x, 1e-5)
        observe(f"central_difference({formula}, x, 1e-5)", estimate, rtol=1e-6, atol=1e-6)


def test_cube_function(student, observe, draw):
    cube = student.Cube
    is_function = isinstance(cube, type) and issubclass(cube, torch.autograd.Function)
    observe("Cube is a torch.autograd.Function", is_function)
    x = draw.tensor(5, low=-3.0, high=3.0, dtype=torch.float64, requires_grad=True)
    y = cube.apply(x)
    observe("Cube.apply(x)", y)
    y.sum().backward()
    observe("x.grad after Cube.apply(x).sum().backward()", x.grad)
    points = draw.tensor(5, low=-3.0, high=3.0, dtype=torch.float64, requires_grad=True)
    observe("gradcheck(Cube.apply)", gradcheck(cube.apply, (points,), raise_exception=False))


def test_predict_descent(student, observe, draw):
    observe("predict_one_step", student.predict_one_step, atol=1e-6)
    observe("predict_five_steps", student.predict_five_steps, atol=1e-6)
    observe("predict_diverges", student.predict_diverges)
