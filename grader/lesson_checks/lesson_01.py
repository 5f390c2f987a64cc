"""Lesson 1's visible checks: `make_leaf`, `make_weights` and `fresh_leaf`.

Each function calls the student's function on the example its test cell writes out and compares
the result with the values the cell passes in.
"""

import torch

from grader.checks import CheckFailed, call, check_grad, check_tensor, check_tracked_leaf, require


def check_make_leaf(make_leaf, rows, cols, right, counting_from_one, right_grad) -> None:
    """Check make_leaf(rows, cols) against `right` and its gradient for (leaf * leaf).sum()."""
    shown = f"make_leaf({rows}, {cols})"
    leaf = call(make_leaf, rows, cols, name="make_leaf")
    if isinstance(leaf, torch.Tensor) and not leaf.is_leaf:
        raise CheckFailed(
            f"{shown} is not a leaf: autograd recorded the operation that made it "
            f"({type(leaf.grad_fn).__name__}), because its input already required gradients. "
            "Arrange the values first, then ask for gradients on the finished tensor."
        )
    check_tracked_leaf(leaf, shown)
    require(
        tuple(leaf.shape) == (rows, cols),
        f"{shown} has shape {tuple(leaf.shape)}, but it should have {rows} rows and {cols} "
        f"columns: shape ({rows}, {cols}).",
    )
    check_tensor(leaf, right, shown, mistakes={"count from 0, not from 1.": counting_from_one})
    (leaf * leaf).sum().backward()
    check_grad(leaf, right_grad, shown)


def check_make_weights(make_weights, counts, right_w, right_loss, right_grad) -> None:
    """Check make_weights(counts)'s w and loss, and w.grad after loss.backward()."""
    shown = f"make_weights({counts})"
    result = call(make_weights, counts, name="make_weights")
    require(
        isinstance(result, tuple | list) and len(result) == 2,
        f"{shown} should return two things, w and loss, but it returned {result!r}.",
    )
    w, loss = result
    check_tracked_leaf(w, f"w = {shown}[0]")
    check_tensor(
        w,
        right_w,
        f"w = {shown}[0]",
        atol=1e-5,
        mistakes={"w should hold counts[i] / sum(counts), not the counts.": counts},
    )
    check_tensor(loss, right_loss, f"loss = {shown}[1]", atol=1e-5)
    require(
        loss.requires_grad,
        f"loss = {shown}[1] does not require gradients, so loss.backward() cannot reach w: "
        "w required gradients only after loss was computed from it, or loss was computed from "
        "something other than w itself (section 6).",
    )
    loss.backward()
    check_grad(w, right_grad, f"w = {shown}[0]", atol=1e-5)


def check_fresh_leaf(fresh_leaf, t, name, values, right_grad, source):
    """Check fresh_leaf(t) is an independent tracked leaf holding `values`; return the result."""
    shown = f"fresh_leaf({name})"
    trial = call(fresh_leaf, t, name="fresh_leaf")
    require(trial is not t, f"{shown} returned {name} itself: return a new tensor.")
    if isinstance(trial, torch.Tensor) and not trial.is_leaf:
        raise CheckFailed(
            f"{shown} is not a leaf: it is still linked to the graph of {name} (its grad_fn is "
            f"{type(trial.grad_fn).__name__}), so backward() would send gradients on into "
            f"{name}. It must be cut off from that graph (section 7)."
        )
    check_tracked_leaf(trial, shown)
    check_tensor(trial, values, shown)
    require(
        trial.data_ptr() != t.data_ptr(),
        f"{shown} shares memory with {name}, so updating one changes the other: it needs "
        "values of its own (section 7).",
    )
    (trial**2).sum().backward()
    check_grad(trial, right_grad, f"trial = {shown}")
    with torch.no_grad():
        trial -= 0.1 * trial.grad
    check_tensor(t, values, f"{name} after the update of trial")
    require(
        source.grad is None,
        f"{name}.grad is not None: a gradient reached {name}, and not through trial, which is a "
        f"leaf. fresh_leaf itself ran a backward pass into {name}, where it only has to make "
        "the new tensor (section 7).",
    )
    return trial
