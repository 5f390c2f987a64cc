"""Lesson 10's visible checks: `df_branch`, `rule_slope`, `ramp` and `unit_rows`.

The test cells call the student's function themselves (with `call_by_hand` or `call`) and hand
what it returned, or the function itself, to a check here, with the values the cell writes out.
The visible tests use the lesson's examples; the grader checks the answers again on inputs drawn
at grading time (the lesson's probes), outside the student's process.
"""

import math

import torch

from grader.checks import CheckFailed, call, check_tensor, require
from grader.variants.families import times

__all__ = ["check_branch", "check_ramp", "check_rule_slope", "check_unit_rows"]


def _number(answer, name: str):
    """`answer` as a float when it is one number (a Python or NumPy number, a one-element
    tensor); fail saying a number is wanted otherwise."""
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = answer.item()
    if hasattr(answer, "item") and not isinstance(answer, torch.Tensor):  # a NumPy number
        answer = answer.item()
    require(
        isinstance(answer, int | float) and not isinstance(answer, bool),
        f"{name} returned {answer!r}; it should return a number.",
    )
    return float(answer)


# Exercise 2 · The derivative of the branch that ran


def check_branch(answer, x, want, task) -> None:
    """Check df_branch(x)'s answer against `want`, the x.grad autograd gives after
    f_branch(x).backward(), for the student's `task` (x**a if x > 0.5, else sin(b x))."""
    answer = _number(answer, f"df_branch({x})")
    branch = f"x**{task.a}" if x > 0.5 else f"sin({times(task.b, 'x')})"
    if x == 0.5:
        branch += " (x > 0.5 is False at x = 0.5 itself)"
    require(
        abs(answer - want) <= 1e-4 * max(1.0, abs(want)),
        f"df_branch({x}) returned {answer:.6g}, but at x = {x} the branch {branch} runs and "
        f"autograd gives {want:.6g}. Differentiate that branch (chain rule, constant factors; "
        "section 1).",
    )


# Exercise 3 · The rule at a corner


def check_rule_slope(answer, left, right, want) -> None:
    """Check rule_slope(left, right)'s answer against `want`, the number the rule gives at a
    corner with those slopes on its left and its right."""
    name = f"rule_slope({left}, {right})"
    answer = _number(answer, name)
    if math.isclose(answer, want, rel_tol=1e-9, abs_tol=1e-12):
        return
    require(
        left != right,
        f"{name} returned {answer:.6g}: with equal slopes on both sides there is no corner, so "
        "the operation has a derivative at p, and the rule uses it (section 2).",
    )
    low, high = min(left, right), max(left, right)
    kind = "convex" if left < right else "concave"
    if left != right and math.isclose(answer, (left + right) / 2, abs_tol=1e-12):
        raise CheckFailed(
            f"{name} returned {answer:.6g}, the average of the two slopes: that is how a tie "
            "between two tensor inputs is shared, not the rule for one input at a corner. Of "
            "the slopes the rule allows there, it takes the one of minimum norm (section 2)."
        )
    if not low - 1e-12 <= answer <= high + 1e-12:
        raise CheckFailed(
            f"{name} returned {answer:.6g}, which is not between the two slopes: at this "
            f"{kind} corner only the slopes from {low:g} to {high:g} are "
            f"{'sub' if kind == 'convex' else 'super'}gradients (section 2)."
        )
    raise CheckFailed(
        f"{name} returned {answer:.6g}: it lies between the two slopes, but another number "
        "there is nearer 0, and the rule takes the one of minimum norm (section 2)."
    )


# Exercise 4 · A clamp that follows the rule


def check_ramp(ramp, values, weights, expected_values, expected_gradient) -> None:
    """Check ramp(x) for x = `values` against `expected_values`, and the gradient of
    sum(weights * ramp(x)) with respect to x against `expected_gradient`."""
    x = torch.tensor(values, requires_grad=True)
    result = call(ramp, x, name="ramp")
    check_tensor(result, expected_values, "ramp(x)", atol=1e-6)
    require(
        isinstance(result, torch.Tensor) and result.requires_grad,
        "ramp(x) does not depend on x through autograd, so it has no gradient: build it from "
        "torch operations on x (section 2).",
    )
    (gradient,) = torch.autograd.grad(result, x, torch.tensor(weights))
    at = {point: [i for i, v in enumerate(values) if v == point] for point in (0.0, 1.0)}
    for point, places in at.items():
        slopes = sorted({round(float(gradient[i] / weights[i]), 6) for i in places})
        require(
            slopes == [0.0] or not slopes,
            f"at x = {point:g} autograd gives ramp the slope {slopes[-1]:g}, where the rule "
            f"gives another number: at x = {point:g} the ramp "
            f"is {'convex' if point == 0 else 'concave'} nearby, with the slopes 0 and 1 on its "
            "two sides. "
            + (
                "A tie between two tensor inputs shares the gradient half and half "
                if slopes[-1] == 0.5
                else "Each operation follows its own convention at its corner, and some depart "
                "from the rule "
            )
            + "(section 2).",
        )
    check_tensor(gradient, expected_gradient, "the gradient of ramp", atol=1e-6)


# Exercise 5 · A direction with no nan gradient


def check_unit_rows(unit_rows, rows, weights, expected_values, expected_gradient) -> None:
    """Check unit_rows(v) for v = `rows` against `expected_values`, and the gradient of
    sum(weights * unit_rows(v)) with respect to v against `expected_gradient` (0 on the rows
    of zeros)."""
    v = torch.tensor(rows, requires_grad=True)
    zero = [i for i, row in enumerate(rows) if not any(row)]
    lengths = v.detach().double().norm(dim=1)
    result = call(unit_rows, v, name="unit_rows")
    shaped = isinstance(result, torch.Tensor) and tuple(result.shape) == tuple(v.shape)
    if shaped:
        bad = [i for i in range(len(rows)) if not bool(torch.isfinite(result[i]).all())]
        require(
            not bad,
            f"unit_rows(v) is not finite (nan or inf) on the rows {bad}:\n{result.detach()}\n"
            + (
                "a row of zeros has length 0, and 0 / 0 is nan (section 3)."
                if set(bad) <= set(zero)
                else "a row that is not zero has a length above 0, however short the row: "
                "look at what each operation computes on it (section 3)."
            ),
        )
        for i, length in enumerate(lengths.tolist()):
            got = float(result[i].detach().double().norm())
            require(
                not 0 < length < 1e-3 or math.isclose(got, 1.0, rel_tol=1e-4),
                f"row {i} of unit_rows(v) has length {got:.6g}, not 1: that row of v is short "
                f"(length {length:.3g}) but not zero, so it has a direction, and dividing it by "
                "its own length gives length 1. A number added to the length, or a lower bound "
                "on it, changes the result on short rows (section 3).",
            )
    check_tensor(result, expected_values, "unit_rows(v)", atol=1e-5)
    require(
        result.requires_grad,
        "unit_rows(v) does not depend on v through autograd, so it has no gradient: build it "
        "from torch operations on v, without detach(), torch.no_grad() or .item().",
    )
    (gradient,) = torch.autograd.grad(result, v, torch.tensor(weights))
    bad = [i for i in range(len(rows)) if not bool(torch.isfinite(gradient[i]).all())]
    require(
        not bad,
        f"the gradient of unit_rows is not finite (nan or inf) on the rows {bad}:\n"
        f"{gradient}\nan operation ran at a point where its backward divides by 0, and a "
        "torch.where after it picks values, but that operation's backward still runs on every "
        "entry (section 3). Look at every operation that sees the length of "
        + ("a row of zeros." if set(bad) <= set(zero) else "those rows."),
    )
    on_zero_rows = gradient[zero]
    require(
        not zero or bool((on_zero_rows == 0).all()),
        f"on the rows of zeros {zero} the gradient is\n{on_zero_rows}\nnot 0: the output "
        "there is 0 whatever v is, so no gradient may reach v from it. An operation that "
        "still sees v on those rows passes its gradient back, however small a number it "
        "adds or divides by (section 3).",
    )
    # A short row's gradient is about 1 / its length (up to 1e9), so float32 rounding errs by
    # about 1e-7 / length there, even where its entries nearly cancel: compare each row shorter
    # than 1 times its length (a slip still shows, 1e-4 of the row's size), the others as they are.
    scale = lengths.clamp(max=1.0).masked_fill(lengths == 0, 1.0).unsqueeze(1)
    scaled = gradient.double() * scale, torch.as_tensor(expected_gradient).double() * scale
    if scaled[0].shape != scaled[1].shape or not torch.allclose(*scaled, atol=1e-4, rtol=1e-5):
        check_tensor(gradient, expected_gradient, "the gradient of unit_rows", atol=1e-4)
