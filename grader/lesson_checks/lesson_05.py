"""Lesson 5 (gradients at work): the visible checks of its test cells.

Each function compares what the student's function returned with the values the test cell writes
out; the cell calls the student's function itself (by hand or through autograd, as the exercise
asks) where the exercise says how.
"""

import contextlib
import math

import torch
from torch.autograd.function import BackwardCFunction

from grader.autograd_use import watch_autograd
from grader.checks import (
    RUN_ABOVE,
    CheckFailed,
    advise,
    call,
    check_grad,
    check_tensor,
    require,
)


def float64(values) -> torch.Tensor:
    """`values` as a float64 tensor (a copy, cut off from any graph)."""
    if isinstance(values, torch.Tensor):
        return values.detach().clone().to(torch.float64)
    return torch.tensor(values, dtype=torch.float64)


# Exercise 5 · A backward with two inputs

SWAPPED = (
    "the two gradients are swapped: return the gradient for w first, then the one for x, in the "
    "order of forward's inputs."
)
NO_FACTOR_2 = "the gradient for x misses the factor 2 of the derivative of x**2."
NO_CHAIN = (
    "backward ignored grad_output: by the chain rule each gradient is grad_output times a "
    "partial derivative of w * x**2."
)
SAVED_RESULT = (
    "backward used the forward's result w * x**2 where x belongs: the partial derivatives "
    "need the inputs themselves (section 9)."
)


def scaled_square_to_test(namespace: dict):
    """The student's scaled_square; ScaledSquare.apply if only the class is defined."""
    if "scaled_square" in namespace:
        return namespace["scaled_square"]
    function = namespace.get("ScaledSquare")
    require(
        function is not None,
        "Neither scaled_square nor ScaledSquare is defined: the answer cell above has not run "
        f"to its end (an error there stopped it, or it was not run). {RUN_ABOVE}",
    )
    require(
        isinstance(function, type) and issubclass(function, torch.autograd.Function),
        "scaled_square is not defined, and ScaledSquare is not a class derived from "
        "torch.autograd.Function: write ScaledSquare as such a class and end the answer cell "
        "with `scaled_square = ScaledSquare.apply`.",
    )
    return function.apply


def check_scaled_square(namespace: dict, w, x, value, label: str) -> torch.Tensor:
    """Check scaled_square(w, x) is `value`, from the student's own Function that saved tensors."""
    w, x = float64(w).requires_grad_(True), float64(x).requires_grad_(True)
    y = call(scaled_square_to_test(namespace), w, x, name="scaled_square")
    check_tensor(y, value, label)
    require(
        isinstance(y.grad_fn, BackwardCFunction),
        f"scaled_square(w, x) was made by {type(y.grad_fn).__name__}, not by your own "
        "torch.autograd.Function, so autograd never calls your backward (section 9).",
    )
    require(
        len(y.grad_fn.saved_tensors) > 0,
        "your forward saved nothing for backward, which needs w and x (section 9).",
    )
    return y


def check_gradient_pair(result, right, grad_output, label: str, *, saved_result=None) -> None:
    """Check the backward's result for `grad_output` is the tuple `right` (for w, then for x)."""
    require(
        not isinstance(result, list),
        f"{label} is a list, which autograd takes for one gradient: backward hands its gradients "
        "back as a tuple, one per input of forward (section 9 and the exercise's text).",
    )
    require(
        isinstance(result, tuple) and len(result) == 2,
        f"{label} is {result!r}, but forward takes two inputs, w and x, so backward returns two "
        "gradients: (the gradient for w, the gradient for x), in that order.",
    )
    right_w, right_x = float64(right[0]), float64(right[1])
    grad_output = float64(grad_output)
    wrong_w, wrong_x = {SWAPPED: right_x}, {SWAPPED: right_w, NO_FACTOR_2: right_x / 2}
    wrong_w[NO_CHAIN], wrong_x[NO_CHAIN] = right_w / grad_output, right_x / grad_output
    if saved_result is not None:
        wrong_w[SAVED_RESULT], wrong_x[SAVED_RESULT] = saved_result
    check_tensor(result[0], right_w, f"the gradient for w in {label}", mistakes=wrong_w)
    check_tensor(result[1], right_x, f"the gradient for x in {label}", mistakes=wrong_x)


def check_grads_of_sum(namespace: dict, w, x, right_w, right_x) -> None:
    """Check w.grad and x.grad after scaled_square(w, x).sum().backward() (float64 leaves)."""
    w, x = float64(w).requires_grad_(True), float64(x).requires_grad_(True)
    y = call(scaled_square_to_test(namespace), w, x, name="scaled_square")
    call(lambda: y.sum().backward(), name="scaled_square(w, x).sum().backward")
    check_grad(w, right_w, "w")
    check_grad(x, right_x, "x")


class Formula:
    """A function that shows its formula in failure messages."""

    def __init__(self, fn, formula: str):
        self.fn, self.formula = fn, formula

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self):
        return self.formula


# Exercise 1 · A derivative by hand


def check_dg(value, x: float, right: float) -> None:
    """Check dg(x)'s `value` is a plain float within a relative 1e-12 of autograd's `right`."""
    require(
        isinstance(value, int | float) and not isinstance(value, bool),
        f"dg({x}) returned a {type(value).__name__}, {value!r}: return a plain Python float, "
        "computed with math.sin and math.cos, not a tensor.",
    )
    require(math.isfinite(value), f"dg({x}) returned {value!r}; it should return a finite number.")
    if abs(value - right) <= 1e-6 * max(1.0, abs(right)):
        require(
            abs(value - right) <= 1e-12 * max(1.0, abs(right)),
            f"dg({x}) returned {value!r}, close to autograd's {right!r} but not equal to it: "
            "that is what a finite difference gives. It is an estimate; derive the exact formula "
            "(product rule) and write it with math.sin and math.cos.",
        )
    require(
        abs(value - right) <= 1e-12 * max(1.0, abs(right)),
        f"dg({x}) returned {value:.15g}, but autograd says the derivative at x = {x} is "
        f"{right!r}. Check your derivation (product rule, chain rule, constant factors).",
    )


# Exercise 2 · Two partial derivatives at many points

POINTS_BACK = "it holds the points themselves: return the gradients, x.grad and y.grad."
AVERAGED = (
    "it is divided by the number of points: a mean scales every point's term by 1/n (lesson 3, "
    "section 5)."
)
SWAPPED_PARTIALS = "dx and dy are swapped: return (df/dx, df/dy), in that order."
EVEN = (
    "it holds the derivatives at evenly spaced points between the first and last coordinate: "
    "use the points as given; they are not evenly spaced."
)


class Counted(Formula):
    """A function that counts its calls and shows its formula in failure messages."""

    def __init__(self, fn, formula: str):
        super().__init__(fn, formula)
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)


@contextlib.contextmanager
def watching_partials():
    """Yield the list of autograd calls made inside; explain a backward() on a non-scalar."""
    try:
        with watch_autograd() as calls:
            yield calls
    except CheckFailed as failure:
        if "only for scalar outputs" in str(failure):
            raise CheckFailed(
                f"{failure}\nf(x, y) holds one value per point, and backward() starts from one "
                "number (lesson 3, section 3; section 1 here)."
            ) from None
        raise


def partials_case(example) -> tuple[tuple, tuple]:
    """partial_derivatives' visible example (`example`: its OnPoints, f(x, y) = a x sin(b y)):
    the right (df/dx, df/dy) at its points, and (the `even` slip) at as many evenly spaced
    points between the first and the last, written out in float64: df/dx = a sin(b y) and
    df/dy = a b x cos(b y). Only the example's own function: nothing here takes an f."""
    a, b = float(example.a), float(example.b)

    def at(x, y):
        return a * torch.sin(b * y), a * b * x * torch.cos(b * y)

    xs, ys = float64(example.xs), float64(example.ys)
    n = len(xs)
    even = [torch.linspace(float(v[0]), float(v[-1]), n, dtype=torch.float64) for v in (xs, ys)]
    return at(xs, ys), at(*even)


def descent_paths(example) -> tuple[torch.Tensor, ...]:
    """gradient_descent's visible example (`example`: its Start, f(x) = sum((x - c)**2) +
    k x[0] x[1], from x0 with lr and steps): the path in float64, by f's gradient written out,
    2 (x - c) + k (x[1], x[0], 0); and the paths the slips check_descent_path names give:
    `piled_up` (each step's gradient added to the earlier ones', as x.grad does unzeroed) and
    `uphill` (+ lr)."""
    c, k, lr = float(example.c), float(example.k), float(example.lr)

    def gradient(x):
        return 2 * (x - c) + k * torch.stack([x[1], x[0], torch.zeros_like(x[0])])

    def path(*, pile=False, sign=-1):
        x = float64(example.x0)
        held, rows = torch.zeros_like(x), [x]
        for _ in range(int(example.steps)):
            held = held + gradient(x) if pile else gradient(x)
            x = x + sign * lr * held
            rows.append(x)
        return torch.stack(rows)

    return path(), path(pile=True), path(sign=1)


def differences_case(example) -> tuple[torch.Tensor, ...]:
    """central_difference's visible example (`example`: its Nudged, f(t) = sum((t - c)**3) at x
    with h): its central differences element by element, in float64, and the values the slips
    check_central_difference names give: the forward differences, and the one quotient of
    nudging all of x at once, in every element. f is a sum over elements, so nudging one element
    changes its term alone, written out here."""
    c, h = float(example.c), float(example.h)
    x = float64(example.x)
    central = ((x + h - c) ** 3 - (x - h - c) ** 3) / (2 * h)
    forward = ((x + h - c) ** 3 - (x - c) ** 3) / h
    return central, forward, torch.full_like(x, float(central.sum()))


def check_partials(result, f: Counted, xs, ys, calls, label: str, right, *, even=None, atol=1e-5):
    """Check partial_derivatives' `result` is `right` (dx, dy); advise one f call, one backward."""
    name = f"partial_derivatives({f}, xs, ys) for xs = {xs}, ys = {ys}"
    advise(
        f.calls == 1,
        f"{name} called f {f.calls} times for {len(xs)} points: one call, on tracked copies of "
        "all the points, is enough.",
    )
    advise(
        len(calls) == 1,
        f"{name} called autograd {len(calls)} times: one backward() on the sum gives both "
        "partial derivatives at every point.",
    )
    require(
        isinstance(result, tuple | list) and len(result) == 2,
        f"{name} returned {result!r}: return the pair (dx, dy).",
    )
    right = [torch.as_tensor(r, dtype=torch.float64) for r in right]
    for which, got, mine, other, points, at_even in [
        ("dx", result[0], right[0], right[1], xs, even and even[0]),
        ("dy", result[1], right[1], right[0], ys, even and even[1]),
    ]:
        mistakes = {POINTS_BACK: points, AVERAGED: mine / len(xs), SWAPPED_PARTIALS: other}
        if at_even is not None:
            mistakes[EVEN] = at_even
        check_tensor(got, mine, f"{which} of {label}", atol=atol, mistakes=mistakes)


# Exercise 3 · Gradient descent in several variables, with its path

PILED_UP = (
    "Gradients accumulate: each backward() adds to x.grad, so every step used the sum of all "
    "gradients so far (section 5)."
)
UPHILL = "x walked uphill: each step went along the gradient, not against it (section 3)."
STILL = "x never moved: no step changed it (section 3)."
SAME_ROWS = (
    "every row holds the same x, the last one. The rows you kept are the tensor x itself, or "
    "share its memory, so every in-place update changed them all. Each row must keep x as it "
    "was after its step (section 3 kept plain numbers, which no update can change)."
)


@contextlib.contextmanager
def explaining_descent_errors():
    """Add this exercise's advice to the usual errors of a descent loop."""
    try:
        yield
    except CheckFailed as failure:
        text = str(failure)
        if "in-place operation" in text:
            raise CheckFailed(
                f"{text}\nAutograd refuses to record an in-place change of a leaf that "
                "requires gradients: the update is no part of the function to differentiate, "
                "so it must not be recorded (section 4)."
            ) from None
        if "NoneType" in text:
            raise CheckFailed(
                f"{text}\nx.grad was None at a later step: the update made a new tensor x, "
                "computed from the old one, which is no leaf, so backward() does not fill its "
                ".grad (section 4)."
            ) from None
        raise


def check_descent_path(path, x0, before, label: str, expected, *, piled_up, uphill) -> None:
    """Check gradient_descent's `path` against `expected` (one row per step), and that x0 still
    holds `before`; `piled_up`, `uphill`: the paths that typical slips give."""
    before = torch.as_tensor(before, dtype=x0.dtype)
    require(
        torch.allclose(x0.detach(), before, rtol=0.0, atol=1e-12),
        f"gradient_descent changed x0: it was\n{before}\nbefore the call and is\n{x0.detach()}"
        "\nafter it. The caller still needs x0 as it was: the descent must move a tensor of its "
        "own.",
    )
    expected = float64(expected)
    steps, size = expected.shape
    steps -= 1
    require(
        isinstance(path, torch.Tensor),
        f"{label} returned a {type(path).__name__}; it should return one tensor, the path, of "
        f"shape ({steps + 1}, {size}).",
    )
    require(
        tuple(path.shape) != (steps, size),
        f"{label} returned a path of shape {tuple(path.shape)}: one row short. Row 0 holds x0, "
        f"before any step, so {steps} steps make {steps + 1} rows.",
    )
    require(
        tuple(path.shape) != (size,),
        f"{label} returned one position, of shape {tuple(path.shape)}, but it should return the "
        f"whole path, one row per position: shape ({steps + 1}, {size}).",
    )
    mistakes = {PILED_UP: piled_up, UPHILL: uphill, STILL: float64(before).expand(steps + 1, size)}
    if tuple(path.shape) == (steps + 1, size):
        mistakes[SAME_ROWS] = float64(path)[-1].expand(steps + 1, size)
    check_tensor(path, expected, label, atol=1e-4, mistakes=mistakes)


# Exercise 4 · Central differences, element by element

FORWARD_DIFFERENCE = (
    "that is the forward difference (f(x + h e_i) - f(x)) / h; the central one steps both ways "
    "(section 7)."
)
TWICE = "it is twice the right value: the two points are 2h apart (section 7)."
PRECEDENCE = "it is h**2 times the right value: `/ 2 * h` divides by 2 and then multiplies by h."
ALL_AT_ONCE = (
    "every element holds the same number: you nudged all of x at once (x + h), whereas each "
    "partial derivative moves one element alone (section 8 and the exercise's text)."
)


def check_central_difference(
    result, x, before, h: float, label: str, right, *, forward_difference, all_at_once
) -> None:
    """Check central_difference's `result` is `right`, and that x still holds `before`."""
    before = torch.as_tensor(before, dtype=x.dtype)
    require(
        torch.allclose(x, before, rtol=0.0, atol=1e-12),
        f"central_difference changed x: it was\n{before}\nbefore the call and is\n{x}\nafter it. "
        "Nudging x's own elements in place changed the caller's tensor, which still needs its "
        "values: the nudged points must be tensors of their own (lesson 1, section 7).",
    )
    require(
        not (isinstance(result, torch.Tensor) and result.numel() == 1 < x.numel()),
        f"{label} returned one number, {result}, but x has {x.numel()} elements: return one "
        "estimate per element. x + h moves every element at once (section 8).",
    )
    right = torch.as_tensor(right, dtype=torch.float64)
    check_tensor(
        result,
        right,
        label,
        atol=1e-9,
        mistakes={
            FORWARD_DIFFERENCE: forward_difference,
            TWICE: 2 * right,
            PRECEDENCE: right * h * h,
            ALL_AT_ONCE: all_at_once,
        },
    )
