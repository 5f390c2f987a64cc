"""Lesson 3 (backward and scalar outputs): the visible checks of its test cells.

Each function compares what the student's function returned with the values the test cell writes
out; the cell calls the student's function itself (by hand or through autograd, as the exercise
asks).
"""

import contextlib
import math

import torch

from grader.checks import CheckFailed, as_number, check_tensor, one_number, require


def check_dz_dx(answer, x: float, right: float) -> None:
    """Check that `answer`, what dz_dx(x) returned, is the finite number `right`."""
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = answer.item()
    value = as_number(answer)
    require(
        value is not None and math.isfinite(value),
        f"dz_dx({x}) returned {answer!r}; it should return a finite number.",
    )
    require(
        abs(value - right) <= 1e-4 * max(1.0, abs(right)),
        f"dz_dx({x}) returned {value:.6g}, but the derivative of 3(2x+3)^2 at x = {x} is "
        f"{right:g}. Check your derivation (chain rule, constant factors).",
    )


def check_mean_grad(grad, x: torch.Tensor, right, label: str) -> None:
    """Check `grad`, what mean_grad(x) returned, against `right`, explaining the usual slips."""
    n = x.numel()
    right = torch.as_tensor(right, dtype=torch.float64)
    check_tensor(
        grad,
        right,
        label,
        atol=1e-5,
        mistakes={
            "it is n times too large: that is the gradient of the sum. The mean divides by n, the "
            "number of elements of x, and so does its gradient.": right * n,
            "it is half the right value: the inner function 2x + 1 has derivative 2, and the "
            "chain rule multiplies by it.": right / 2,
            "you divided by 4, the size of a 2x2 example: the mean divides by the number of "
            "elements of x (x.numel()), whatever its shape.": right * n / 4,
            "it is 13.5 everywhere, which is right only for a 2x2 x of ones. Return a formula in "
            "x.": torch.full_like(x, 13.5),
        },
    )


@contextlib.contextmanager
def explain_non_scalar_backward():
    """Add this exercise's advice to a failure of backward() on a tensor of several errors."""
    try:
        yield
    except CheckFailed as failure:
        if "only for scalar outputs" in str(failure):
            raise CheckFailed(
                f"{failure}\nThat is the bug to fix: errors holds one value per data point, "
                "and backward() starts only from a scalar unless it is told how to weigh each "
                "element (sections 2, 3 and 7 of this lesson)."
            ) from None
        raise


def check_error_grad(result, w, xs, right: float, first_only: float, where: str = "") -> None:
    """Check `result`, what error_grad(w, xs, ts) returned, against dE/dw = `right`
    (`first_only`: the derivative of the first error alone), explaining the usual slips."""
    name = f"error_grad({w}, xs, ts) {where}".strip()
    result = one_number(result, name, "dE/dw, one number (or w.grad)")

    def near(value):
        return math.isclose(result, value, rel_tol=1e-4, abs_tol=1e-4)

    if near(right):
        return
    require(
        not near(right / len(xs)),
        f"{name} returned {result:.6g}, n = {len(xs)} times too small: you reduced with mean(), "
        "but E is the total, the sum of the errors.",
    )
    require(
        not near(first_only),
        f"{name} returned {result:.6g}, the derivative of the first error only. E adds up all "
        "the errors: reduce with sum(), or pass backward() a weight of 1 for every error.",
    )
    raise CheckFailed(
        f"{name} returned {result:.6g}, but dE/dw is {right:.6g}. Build the errors from a "
        "w that requires gradients, call backward() on their sum, and return w.grad."
    )


class Formula:
    """A function that shows its formula in failure messages."""

    def __init__(self, fn, formula):
        self.fn, self.formula = fn, formula

    def __call__(self, t):
        return self.fn(t)

    def __repr__(self):
        return self.formula


def check_weighted_grads(pair, f, *, g1, g2, ones) -> None:
    """Check `pair`, what weighted_grads(f, x, v1, v2) returned, against (`g1`, `g2`) (`ones`: the
    gradient for weights of all ones), explaining the usual slips."""
    where = f"for f = {f!r}"
    right1, right2, ones = (torch.as_tensor(r, dtype=torch.float64) for r in (g1, g2, ones))
    require(
        isinstance(pair, tuple | list) and len(pair) == 2,
        f"weighted_grads should return a pair (g1, g2), but it returned {pair!r}.",
    )
    g1, g2 = pair
    check_tensor(
        g2,
        right2,
        f"g2 {where}",
        atol=1e-5,
        mistakes={
            "it holds both gradients added together: backward() adds to what x.grad already "
            "holds, so the second call added to the first.": right1 + right2,
            "it is the gradient for weights of all ones (or of z.sum()): v2 was not used as "
            "the weights (section 7).": ones,
        },
    )
    check_tensor(
        g1,
        right1,
        f"g1 {where}",
        atol=1e-5,
        mistakes={
            "it equals the second gradient: you returned x.grad itself, and zero_() and the "
            "second backward() changed that same tensor in place.": right2,
            "it is the gradient for weights of all ones (or of z.sum()): v1 was not used as "
            "the weights (section 7).": ones,
        },
    )


MEAN = (
    "it is the mean, not the sum. The input was used once in every row (or column) it was "
    "repeated along, and the gradients of all its uses add up: sum them."
)
ROW_SUMS = (
    "it holds the sum of each row. Broadcasting lines the shapes up from the right, so a "
    "(2,) input was repeated down the rows, along a new leading dimension: sum over "
    "dimension 0."
)


def _shape_advice(got: tuple, want: tuple) -> str:
    """What a result of shape `got` instead of `want` says about the dimensions summed."""
    if not got:
        return (
            "you summed over every dimension. Sum only over the dimensions that broadcasting "
            "added (the leading ones) or stretched (where shape has size 1)."
        )
    if len(got) < len(want):
        return (
            "a dimension is missing. Where shape has size 1, sum with keepdim=True so that the "
            "dimension stays, with size 1."
        )
    if len(got) > len(want):
        return (
            "it still has the dimensions that broadcasting added. They are the leading ones: "
            "sum over dimension 0 until the result has len(shape) dimensions."
        )
    if any(w == 1 and g != 1 for g, w in zip(got, want, strict=True)):
        return (
            "where shape has size 1, broadcasting repeated the input along that dimension: sum "
            "over it with keepdim=True."
        )
    return (
        "broadcasting lines the shapes up from the right and adds the new dimensions at the "
        "front, so the dimensions to sum over are the leading ones."
    )


def check_unbroadcast(result, grad, shape, right, *, mean=None, row_sums=None) -> None:
    """Check `result`, what unbroadcast(grad, shape) returned, against `right`, explaining the
    usual slips (`row_sums`, `mean`: the values those slips give)."""
    label = f"unbroadcast(grad of shape {tuple(grad.shape)}, {tuple(shape)})"
    require(
        isinstance(result, torch.Tensor),
        f"{label} returned a {type(result).__name__}; it should return a tensor.",
    )
    got, want = tuple(result.shape), tuple(shape)
    require(
        got == want,
        f"{label} has shape {got}, but it must have the input's shape {want}: "
        + _shape_advice(got, want),
    )
    mistakes = {ROW_SUMS: row_sums, MEAN: mean}
    mistakes = {why: value for why, value in mistakes.items() if value is not None}
    check_tensor(result, right, label, atol=1e-5, mistakes=mistakes)
