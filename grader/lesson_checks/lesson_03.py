"""Lesson 3 (backward and scalar outputs): the visible checks of its test cells.

Each function compares what the student's function returned with the values the test cell writes
out; the cell calls the student's function itself (by hand or through autograd, as the exercise
asks).
"""

import contextlib
import math

import torch

from grader.checks import CheckFailed, as_number, check_tensor, one_number, require
from grader.variants.families import times

INNER_LEFT_OUT = (
    "it leaves out the derivative of the inner function {inner}: by the chain rule, dz/dx "
    "is dz/dy times dy/dx (section 6)."
)
INNER_OF_SECTION_6 = (
    "it multiplies dz/dy by 2, the derivative of section 6's inner function 2x + 3. Here the "
    "inner function is {inner}, whose derivative changes with x."
)
INNER_WITHOUT_BX = (
    "its factor for the inner function {inner} is the derivative of x^2 alone: the -{bx} "
    "term has a derivative too."
)
INNER_SIGN = (
    "its factor for the inner function {inner} has the derivative of the -{bx} term with the "
    "wrong sign: recheck the sign of each term of dy/dx."
)


def check_dz_dx(answer, x: float, task) -> None:
    """Check that `answer`, what dz_dx(x) returned, is dz/dx at x for the student's `task`
    (z = a y^3, y = x^2 - b x: its `a` and `b`), explaining the usual slips."""
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = answer.item()
    value = as_number(answer)
    require(
        value is not None and math.isfinite(value),
        f"dz_dx({x}) returned {answer!r}; it should return a finite number.",
    )

    def near(target: float) -> bool:
        return abs(value - target) <= 1e-4 * max(1.0, abs(target))

    a, b = task.a, task.b
    outer = 3 * a * (x**2 - b * x) ** 2  # dz/dy at x
    right = outer * (2 * x - b)
    if near(right):
        return
    said = f"dz_dx({x}) returned {value:.6g}, but dz/dx at x = {x} is {right:g}"
    for wrong, why in [
        (outer, INNER_LEFT_OUT),
        (outer * 2, INNER_OF_SECTION_6),
        (outer * 2 * x, INNER_WITHOUT_BX),
        (outer * (2 * x + b), INNER_SIGN),
    ]:
        inner = f"y = x^2 - {times(b, 'x')}"
        require(not near(wrong), f"{said}: {why.format(inner=inner, bx=times(b, 'x'))}")
    raise CheckFailed(f"{said}. Check your derivation (chain rule, constant factors).")


def check_mean_grad(grad, x: torch.Tensor, right, label: str, task) -> None:
    """Check `grad`, what mean_grad(x) returned, against `right`, explaining the usual slips,
    for the student's `task` (out = mean((a x + b)^3))."""
    n = x.numel()
    right = torch.as_tensor(right, dtype=torch.float64)
    a, b = task.a, task.b
    at_ones = 3 * a * (a + b) ** 2 / 4  # the visible example's value, a 2x2 x of ones
    check_tensor(
        grad,
        right,
        label,
        atol=1e-5,
        mistakes={
            "it is n times too large: that is the gradient of the sum. The mean divides by n, the "
            "number of elements of x, and so does its gradient.": right * n,
            f"it is 1/{a} of the right value: the inner function {a}x + {b} has derivative {a}, "
            "and the chain rule multiplies by it.": right / a,
            "you divided by 4, the size of a 2x2 example: the mean divides by the number of "
            "elements of x, whatever its shape.": right * n / 4,
            f"it is {at_ones:g} everywhere, which is right only for a 2x2 x of ones. Return a "
            "formula in x.": torch.full_like(x, at_ones),
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
        "the errors, so every one of them counts (sections 3 and 7 of this lesson).",
    )
    raise CheckFailed(
        f"{name} returned {result:.6g}, but dE/dw is {right:.6g}: the derivative of the total "
        "error E with respect to w, through every error (sections 2, 3 and 7 of this lesson)."
    )


class Formula:
    """A function that shows its formula in failure messages."""

    def __init__(self, fn, formula):
        self.fn, self.formula = fn, formula

    def __call__(self, t):
        return self.fn(t)

    def __repr__(self):
        return self.formula


BY_COLUMN = (
    "it weights the columns of z, not its rows: weight j went to every element of column j. "
    "Broadcasting lines shapes up from the right (section 12), so a 1-D tensor of weights is "
    "repeated down the rows, one weight per column."
)
ALL_ONES = (
    "it is the gradient for weights of all ones (of z.sum()): the weights {v} were not used "
    "(section 7)."
)
ADDED = (
    "it holds both gradients added together: backward() adds to what x.grad already holds, so "
    "the second call added to the first (section 8)."
)
SAME_TENSOR = (
    "it equals the second gradient: what you returned as g1 is the tensor x.grad itself, which "
    "the work for g2 then changed in place (section 8)."
)


@contextlib.contextmanager
def explain_row_weights():
    """Add this exercise's advice to the errors of backward() with weights of the wrong shape."""
    try:
        yield
    except CheckFailed as failure:
        text = str(failure)
        if "Mismatch in shape" in text:
            raise CheckFailed(
                f"{text}\nbackward() takes one weight for every element of z, in exactly z's "
                "shape (section 9), but v1 and v2 hold one weight per row."
            ) from None
        if "only for scalar outputs" in text:
            raise CheckFailed(
                f"{text}\nz has many elements, so backward() needs the weights to start from "
                "(sections 2 and 7)."
            ) from None
        if "backward through the graph a second time" in text:
            raise CheckFailed(
                f"{text}\nThe first backward() freed the tensors the graph of z saved: the "
                "second weighting needs them again (section 8)."
            ) from None
        raise


def row_weight_answers(example) -> dict:
    """What check_weighted_grads wants for a weighted_grads example (`RowWeights`), written out:
    sum_ij v[i] z[ij] for z = x**2 @ A has the gradient 2 x[i, k] v[i] (row k of A summed), and
    weights v given to the columns instead, 2 x[i, k] (A @ v)[k]."""
    x, a = torch.tensor(example.x), torch.tensor(example.A)
    v1, v2 = torch.tensor(example.v1), torch.tensor(example.v2)

    def by_rows(v):
        return 2 * x * v[:, None] * a.sum(dim=1)

    return {
        "g1": by_rows(v1),
        "g2": by_rows(v2),
        "ones": by_rows(torch.ones(2)),
        "by_column": (2 * x * (a @ v1), 2 * x * (a @ v2)),
    }


def check_weighted_grads(pair, f, *, g1, g2, ones, by_column=None) -> None:
    """Check `pair`, what weighted_grads(f, x, v1, v2) returned, against (`g1`, `g2`) (`ones`: the
    gradient for weights of all ones; `by_column`: the pair for the weights given to z's columns,
    where z is square), explaining the usual slips."""
    where = f"for f = {f!r}"
    right1, right2, ones = (torch.as_tensor(r, dtype=torch.float64) for r in (g1, g2, ones))
    require(
        isinstance(pair, tuple | list) and len(pair) == 2,
        f"weighted_grads should return a pair (g1, g2), but it returned {pair!r}.",
    )
    got1, got2 = pair
    column1, column2 = by_column if by_column is not None else (None, None)
    mistakes2 = {ADDED: right1 + right2, ALL_ONES.format(v="v2"): ones, BY_COLUMN: column2}
    check_tensor(
        got2,
        right2,
        f"g2 {where}",
        atol=1e-5,
        mistakes={why: wrong for why, wrong in mistakes2.items() if wrong is not None},
    )
    mistakes1 = {SAME_TENSOR: right2, ALL_ONES.format(v="v1"): ones, BY_COLUMN: column1}
    check_tensor(
        got1,
        right1,
        f"g1 {where}",
        atol=1e-5,
        mistakes={why: wrong for why, wrong in mistakes1.items() if wrong is not None},
    )


MEAN = (
    "it is the mean, not the sum. The input was used once in every row (or column) it was "
    "repeated along, and the gradients of all its uses add up: sum them."
)
ROW_SUMS = (
    "it holds the sum of each row. Broadcasting lines the shapes up from the right, so a "
    "1-D input was repeated down the rows, along a new leading dimension: sum over "
    "dimension 0."
)


def _shape_advice(got: tuple, want: tuple) -> str:
    """What a result of shape `got` instead of `want` says about the dimensions summed."""
    if not got:
        return (
            "you summed over every dimension and kept none, where only the dimensions that "
            "broadcasting added (the leading ones) or stretched (where shape has size 1) are "
            "summed, and a stretched one stays, with size 1 (section 12)."
        )
    if len(got) < len(want):
        return (
            "a dimension is missing: a sum drops the dimension it runs over, so either it ran "
            "over a dimension the input has, or it dropped a size-1 dimension that must stay, "
            "with size 1 (section 12)."
        )
    if len(got) > len(want):
        return "it still has the dimensions that broadcasting added, the leading ones (section 12)."
    if any(w == 1 and g != 1 for g, w in zip(got, want, strict=True)):
        return (
            "where shape has size 1, broadcasting repeated the input along that dimension, and "
            "every copy's gradient adds up (section 12)."
        )
    return (
        "broadcasting lines the shapes up from the right and adds the new dimensions at the "
        "front, so the dimensions to sum over are the leading ones (section 12)."
    )


def unbroadcast_case(grad_shape: tuple, shape: tuple) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """A visible case of unbroadcast: a grad of `grad_shape` holding 1, 2, 3, ..., the sum back
    to `shape`, and the values the usual slips give there (for check_unbroadcast)."""
    grad = torch.arange(1.0, math.prod(grad_shape) + 1).reshape(grad_shape)
    right = grad.sum_to_size(shape)
    slips = {}
    if grad.numel() > right.numel():
        slips["mean"] = right / (grad.numel() // right.numel())
    if len(shape) == 1 and grad.dim() == 2 and grad.shape[0] == grad.shape[1]:
        slips["row_sums"] = grad.sum(dim=-1)
    return grad, right, slips


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
