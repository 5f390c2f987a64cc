"""Lesson 8's visible checks: `jacobian_by_columns`, `hvp`, `per_sample_grads` and
`per_sample_grad_norms`.

The test cells call the student's function themselves (with `call_with_autograd`, inside one of
the `explaining_...` blocks below where an error needs a word of explanation) and hand what it
returned to a check here, with the values the cell writes out. The visible tests use the lesson's
examples, the student's own in Exercises 2 and 3 (`jacobian_case` and `hvp_case` build them, from
`grader.variants.examples.lesson_08`); the hidden ones hand the answers functions drawn at random
(`grader.drawn_functions`, `DrawnActivation`), and a check told `drawn=True` says so when the
values are wrong.
"""

import contextlib

import torch

from grader.checks import CheckFailed, check_drawn_tensor, explained, require
from grader.lesson_checks.lesson_07 import DrawnActivation

__all__ = [
    "DrawnActivation",
    "check_hvp",
    "check_jacobian",
    "check_per_sample",
    "check_grad_norms",
    "explaining_hvp_errors",
    "explaining_module_errors",
    "explaining_vmap_errors",
    "hvp_case",
    "jacobian_case",
]


# Exercise 2 · A Jacobian, one column per forward pass


def check_jacobian(result, expected, text, wrong=None, drawn=False) -> None:
    """Check jacobian_by_columns(f, x)'s result against `expected` (m x n); `wrong`: the result
    of each typical mistake, by name ("values": f(x) in every column); `drawn`: f was drawn."""
    wrong = wrong or {}
    m, n = expected.shape
    if isinstance(result, torch.Tensor) and result.dim() == 1 and result.shape[0] == m:
        raise CheckFailed(
            f"jacobian_by_columns({text}, x) returned one vector of {m} numbers, not an "
            f"{m} x {n} matrix: one Jacobian-vector product with a vector of ones gives J·1, "
            "the sum of the columns, whereas each column comes from a pass of its own (section 2)."
        )
    mistakes = {
        "the columns were stacked as rows: this is the Jacobian transposed. The Jacobian-vector "
        "product for input j is column j of the Jacobian (section 2).": expected.T,
        "every column is J·1, the sum of the Jacobian's columns: the tangent of the pass for "
        "input j must pick input j alone, 1 there and 0 elsewhere (section 2).": expected.sum(
            1, keepdim=True
        ).expand(m, n),
    }
    if "values" in wrong:
        mistakes[
            "every column holds f(x), the function's value: jvp returns (f(x), J·v), and the "
            "column is the second of the two (section 2)."
        ] = wrong["values"]
    check_drawn_tensor(
        result,
        expected,
        f"jacobian_by_columns({text}, x)",
        atol=1e-4,
        mistakes=mistakes,
        drawn="jacobian_by_columns a function f" if drawn else None,
    )


def jacobian_case(examples):
    """The visible case of jacobian_by_columns for a student's `examples` (lesson 8's Products,
    f(v) = (a v0 v1, b v1 v2, c v0^2) at x): f, x, the Jacobian, and what the usual slips give
    (for check_jacobian's `wrong`: "values", f(x) in every column)."""
    a, b, c = examples.a, examples.b, examples.c

    def f(v):
        return torch.stack([a * v[0] * v[1], b * v[1] * v[2], c * v[0] ** 2])

    x = torch.tensor([float(e) for e in examples.x])
    value = torch.tensor(examples.value, dtype=torch.float32)
    expected = torch.tensor(examples.jacobian, dtype=torch.float32)
    return f, x, expected, {"values": value[:, None].expand(3, 3)}


# Exercise 3 · A Hessian-vector product


def hvp_case(examples):
    """The visible case of hvp for a student's `examples` (lesson 8's Cubic, f(t) = a t0^2 t1 +
    b t1^3 at x, along v): f, x, v, H v, and what the usual slips give, as check_hvp's keywords
    (the gradient, H times ones, H's diagonal times v)."""
    a, b = examples.a, examples.b

    def f(t):
        return a * t[0] ** 2 * t[1] + b * t[1] ** 3

    x, v = (torch.tensor([float(e) for e in values]) for values in (examples.x, examples.v))
    slips = {
        "gradient": examples.gradient,
        "ones": examples.ones,
        "diagonal": examples.diagonal,
    }
    expected = torch.tensor(examples.product, dtype=torch.float32)
    return f, x, v, expected, {k: torch.tensor(w, dtype=torch.float32) for k, w in slips.items()}


@contextlib.contextmanager
def explaining_hvp_errors():
    """Around the call of hvp: explain a second gradient with nothing to differentiate, and a
    function of x that returns more than one number."""
    with (
        explained(
            "does not require grad",
            "The first gradient was computed without create_graph=True (or x was not tracked), "
            "so it is a constant with nothing to differentiate (section 4).",
        ),
        explained(
            "Expected f(*args) to return a scalar Tensor",
            "torch.func.grad differentiates a function that returns one number, a 0-d tensor: "
            "f(x) is one; the gradient dotted with v is one too (section 4).",
        ),
    ):
        yield


def check_hvp(result, expected, text, gradient, ones, diagonal, drawn=False) -> None:
    """Check hvp(f, x, v)'s result against `expected`, H v; `gradient`: f's gradient at x;
    `ones`: H times a vector of ones; `diagonal`: H's diagonal times v; `drawn`: f was drawn."""
    require(
        not isinstance(result, torch.Tensor) or result.dim() != 0,
        f"hvp({text}, x, v) returned one number, {result}: that is v·(H v) or the gradient "
        "dotted with v. Return H v, a vector shaped like x (section 4).",
    )
    check_drawn_tensor(
        result,
        expected,
        f"hvp({text}, x, v)",
        atol=1e-4,
        drawn="hvp a function f" if drawn else None,
        mistakes={
            "that is the gradient of f at x, not the Hessian times v: differentiate once more, "
            "along v (section 4).": gradient,
            "that is the Hessian times a vector of ones: the second gradient must be of the "
            "first gradient dotted with v, not of its sum (section 4).": ones,
            "only the diagonal of the Hessian was used: H v mixes the entries of v through the "
            "Hessian's off-diagonal entries too (section 4).": diagonal,
        },
    )


# Exercise 4 · Per-example gradients


@contextlib.contextmanager
def explaining_vmap_errors():
    """Around the call of per_sample_grads: explain vmap's in_dims for the shared w."""
    with explained(
        "vmap",
        "vmap was told to split an argument that has no batch dimension: w is shared by every "
        "example, xs and ys hold one example per row (section 1, in_dims).",
    ):
        yield


def per_sample_case(example):
    """per_sample_grads' visible example (`example`: lesson 8's Batch, w, xs, ys): w, xs, ys, the
    loss (x @ w - y) ** 2, the right rows 2 (x·w - y) x written out, and what the usual slips
    give, as check_per_sample's `wrong`: "running" (row i summing the rows 0 to i, as w.grad
    does unzeroed) and "x" (the gradient with respect to x, 2 (x·w - y) w). Only the example's
    own loss: nothing here takes a loss."""
    w, xs, ys = (
        torch.tensor(values, dtype=torch.float32) for values in (example.w, example.xs, example.ys)
    )

    def loss(w, x, y):
        return (x @ w - y) ** 2

    residuals = xs @ w - ys
    rows = 2 * residuals[:, None] * xs
    return w, xs, ys, loss, rows, {"running": rows.cumsum(0), "x": 2 * residuals[:, None] * w}


def check_per_sample(result, w, expected, wrong, drawn=False) -> None:
    """Check per_sample_grads(w, xs, ys, loss)'s result against `expected` (row i: the gradient
    of example i's loss with respect to w); `wrong`: the result of each typical mistake, by name;
    `drawn`: the loss was drawn at random."""
    require(
        not isinstance(result, torch.Tensor) or tuple(result.shape) != tuple(w.shape),
        "per_sample_grads returned one gradient for the whole batch, the gradient of the "
        "summed (or mean) loss: return one row per example, the gradient of that example's "
        "loss alone.",
    )
    check_drawn_tensor(
        result,
        expected,
        "per_sample_grads(w, xs, ys, loss)",
        atol=1e-4,
        drawn="per_sample_grads a loss" if drawn else None,
        mistakes={
            "row i holds the sum of the gradients of examples 0 to i: backward() adds to "
            "w.grad, so each example's gradient was added to the ones before it (lesson 4, "
            "sections 4 and 5; section 5 here).": wrong["running"],
            "these are the gradients with respect to each x, not w: differentiate with "
            "respect to w (section 1 on grad's first argument).": wrong["x"],
            "each row is divided by the number of examples: row i is the gradient of example "
            "i's loss alone, not of its share of a mean (section 5).": expected / len(expected),
            "every row holds the last example's gradient: each row kept is the one tensor "
            "w.grad, which the next example's backward() refills, so what was kept changes "
            "with it (section 5).": expected[-1:].expand_as(expected),
        },
    )


# Exercise 5 · Per-example gradient lengths of a module


@contextlib.contextmanager
def explaining_module_errors():
    """Around the call of per_sample_grad_norms: explain vmap splitting the parameters."""
    with explained(
        "vmap",
        "vmap was told to split an argument that has no batch dimension: the parameters are "
        "shared by every example, whereas xs and ys hold one example per row (section 5).",
    ):
        yield


_NORM_MISTAKES = {
    "squared": "these are the squared lengths: the length is the square root of the sum of "
    "the squared entries (Exercise 5's last sentence).",
    "summed": "this adds up one length per parameter tensor: the length of an example's "
    "gradient is taken over all its parameters together, as one long vector (Exercise 5).",
    "running": "entry i is the length of the gradients of examples 0 to i added up: backward() "
    "adds to .grad, so each example's gradients were added to the ones before it (lesson 4, "
    "sections 4 and 5; section 5 here).",
}


def check_grad_norms(result, expected, wrong, drawn=False) -> None:
    """Check per_sample_grad_norms(model, xs, ys, loss)'s result against `expected` (entry i:
    the length of example i's gradient over all parameters); `wrong`: the result of each typical
    mistake, by name (`_NORM_MISTAKES`); `drawn`: the model and the loss were drawn at random."""
    require(
        not isinstance(result, torch.Tensor) or result.numel() != 1 or len(expected) == 1,
        f"per_sample_grad_norms returned one number, {result}: one length for the whole batch, "
        "the gradient of the summed (or mean) loss. Return one length per example, of the "
        "gradient of that example's loss alone (section 5).",
    )
    check_drawn_tensor(
        result,
        expected,
        "per_sample_grad_norms(model, xs, ys, loss)",
        atol=1e-4,
        drawn="per_sample_grad_norms a model and a loss" if drawn else None,
        mistakes={_NORM_MISTAKES[key]: value for key, value in wrong.items()},
    )
