"""Lesson 7's visible checks: `fine_tune`, `trainable_gradients`, `newton_step`,
`clipped_gradient`, `softplus_grad`, `df_branch`, `safe_norm` and `per_sample_grads`.

The test cells call the student's function themselves (with `call_with_autograd` or
`call_by_hand`, inside one of the `explaining_...` blocks below where an error needs a word of
explanation) and hand what it returned to a check here, with the values the cell writes out.
The visible tests use the lesson's examples; the hidden ones hand the answers functions drawn at
random (`grader.drawn_functions`, `DrawnActivation`), and a check told `drawn=True` says so when
the values are wrong.
"""

import contextlib
import copy
from types import SimpleNamespace

import torch
from torch import nn

from grader.checks import CheckFailed, call, check_tensor, explained, require

DRAWN = (
    "\nThis test hands {given} drawn at random, not the lesson's example: differentiate what "
    "it is given with autograd. A formula typed for the example fits only the example."
)


def _check_values(actual, expected, name, *, atol, mistakes=None, drawn=None, advice=None):
    """check_tensor; on wrong values, when `drawn` says what was drawn for whom ("newton_step a
    function f"), a word on why a formula for the example does not do (or `advice` instead)."""
    try:
        check_tensor(actual, expected, name, atol=atol, mistakes=mistakes)
    except CheckFailed as failure:
        advice = advice or (DRAWN.format(given=drawn) if drawn else None)
        if advice is None or "has the wrong values" not in str(failure):
            raise
        raise CheckFailed(f"{failure}{advice}") from None


class DrawnActivation(nn.Module):
    """An activation drawn at random: a drawn smooth function `f` (`grader.drawn_functions`) of
    tanh(t), so that what it is given stays between -1 and 1."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, t):
        return self.f(torch.tanh(t))

    def extra_repr(self):
        return "a drawn smooth function of tanh(t)"


# Exercise 2 · Retrain the first layer only


@contextlib.contextmanager
def fine_tune_run(model):
    """Around the call of fine_tune(model, ...): yield a record of the model as it was, and
    explain a loss that reaches no trainable parameter."""
    run = SimpleNamespace(original=copy.deepcopy(model))
    try:
        yield run
    except CheckFailed as failure:
        if "does not require grad" not in str(failure):
            raise
        raise CheckFailed(
            "fine_tune's loss does not depend on anything that trains: running the later "
            "layers under torch.no_grad() (or detaching their output) cuts the way back to the "
            "first layer. Freeze them with requires_grad_(False) and run the model as usual: "
            "the gradient still flows through frozen layers."
        ) from None


def check_fine_tuned(model, run, expected, stale, atol=1e-4, drawn=False) -> None:
    """Check the model after fine_tune: `expected` is the first layer's (weight, bias) after
    plain SGD with the rest fixed, `stale` the same when earlier gradients are never cleared;
    `drawn`: the model's activations were drawn at random."""
    original = run.original
    for name, p in model[0].named_parameters():
        require(
            p.requires_grad,
            f"model[0].{name}.requires_grad is False: the first layer is the one that trains "
            "here. Freeze the layers after it, model[1:], and leave model[0] alone.",
        )
    for index, layer in list(enumerate(model))[1:]:
        for name, p in layer.named_parameters():
            where = f"model[{index}].{name}"
            require(
                not p.requires_grad,
                f"{where}.requires_grad is still True after fine_tune: every layer but the "
                "first should be frozen (section 2).",
            )
            require(
                p.grad is None,
                f"{where}.grad is not None: a frozen layer got a gradient. Freeze the layers "
                "before the first backward().",
            )
            require(
                torch.equal(p, original[index].get_parameter(name)),
                f"{where} changed: a frozen layer must keep its values. Update only the "
                "parameters that still train (give the optimizer only those).",
            )
    for (name, p), want, old in zip(model[0].named_parameters(), expected, stale, strict=False):
        _check_values(
            p,
            want,
            f"model[0].{name} after fine_tune",
            atol=atol,
            drawn="fine_tune a model whose activations were" if drawn else None,
            mistakes={
                "the gradients of earlier steps were added in: clear them at every step "
                "with optimizer.zero_grad().": old,
                "the first layer did not change: it must keep requires_grad=True and be in "
                "the optimizer, and the loss must reach it through the frozen layers.": (
                    original[0].get_parameter(name)
                ),
            },
        )


# Exercise 4 · Look at the gradients in the middle of training


@contextlib.contextmanager
def keeping_grads(model):
    """Around the call of trainable_gradients(model, ...): yield a copy of each parameter's
    .grad (name: tensor or None), and explain asking for a frozen parameter's gradient."""
    saved = {
        name: None if p.grad is None else p.grad.clone() for name, p in model.named_parameters()
    }
    with explained(
        "does not require grad",
        "A frozen parameter (requires_grad False) has no gradient to ask for: "
        "give torch.autograd.grad only the parameters that require gradients.",
    ):
        yield saved


def check_trainable_gradients(model, result, saved, expected, drawn=False) -> None:
    """Check trainable_gradients' result against `expected` ({name: gradient} for the
    parameters that require gradients), and that every .grad is still as `saved`; `drawn`: the
    model's activations were drawn at random."""
    require(
        isinstance(result, list | tuple),
        f"trainable_gradients returned a {type(result).__name__}; it should return a list with "
        "one gradient per parameter that requires gradients.",
    )
    require(
        len(result) == len(expected),
        f"trainable_gradients returned {len(result)} gradients, but the model has "
        f"{len(expected)} parameters that require gradients (and "
        f"{sum(1 for p in model.parameters()) - len(expected)} frozen): return one gradient "
        "for each parameter that requires gradients, and none for the frozen ones.",
    )
    result = dict(zip(expected, result, strict=False))
    for name, p in model.named_parameters():
        if name in expected:
            stale = {}
            if saved[name] is not None:
                stale[
                    "it is the new gradient added to what .grad held: backward() adds to "
                    ".grad, and the exercise asks to leave .grad alone (section 4)."
                ] = saved[name] + expected[name]
            _check_values(
                result[name],
                expected[name],
                f"the gradient of {name}",
                atol=1e-4,
                mistakes=stale,
                drawn="trainable_gradients a model whose activations were" if drawn else None,
            )
        unchanged = (
            p.grad is None
            if saved[name] is None
            else (p.grad is not None and torch.equal(p.grad, saved[name]))
        )
        require(
            unchanged,
            f"{name}.grad was {saved[name]} and after trainable_gradients it is {p.grad}: leave "
            "every .grad as it was. torch.autograd.grad returns gradients without storing them.",
        )


# Exercise 5 · A Newton step


class _Slope(torch.autograd.Function):
    """3 t**2 going forward; autograd is told that its derivative is 6 t + 1."""

    generate_vmap_rule = True

    @staticmethod
    def forward(t):
        return 3 * t**2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved_tensors
        return grad * (6 * t + 1)

    @staticmethod
    def jvp(ctx, tangent):  # forward mode (torch.func.jvp, jacfwd, hessian) is told the same
        (t,) = ctx.saved_tensors
        return tangent * (6 * t + 1)


class Cube(torch.autograd.Function):
    """t**3 going forward; autograd's derivative is _Slope, so its f'' is 6 t + 1."""

    generate_vmap_rule = True

    @staticmethod
    def forward(t):
        return t**3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved_tensors
        return grad * _Slope.apply(t)

    @staticmethod
    def jvp(ctx, tangent):
        (t,) = ctx.saved_tensors
        return tangent * _Slope.apply(t)


@contextlib.contextmanager
def explaining_newton_errors():
    """Around the call of newton_step: explain a second gradient with nothing to differentiate."""
    with explained(
        "does not require grad",
        "Either x was not tracked (make a tracked copy, x.detach().requires_grad_()), or the "
        "first gradient was computed without create_graph=True, so it is a constant with "
        "nothing to differentiate.",
    ):
        yield


def check_newton(result, x, expected, d1, d2, text, formula=None, drawn=False) -> None:
    """Check newton_step(f, x)'s result against `expected`; `d1`, `d2`: f' and f'' at x;
    `formula`: the f'' a formula gives there, for an f whose backward defines its own
    derivative; `drawn`: f was drawn at random."""
    known = {}
    if formula is not None:
        known[
            "that is the Newton step with the second derivative of the formula (or finite "
            "differences of f), but this f tells autograd its own derivative: both derivatives "
            "must come from autograd (section 4)."
        ] = x - d1 / formula
    _check_values(
        result,
        expected,
        f"newton_step({text}, x)",
        atol=1e-4,
        drawn="newton_step a function f" if drawn else None,
        advice=(
            "\nThis f is a custom Function that tells autograd its own derivative: "
            "differentiate it with autograd. A formula typed for the example fits only the "
            "example."
        )
        if formula is not None
        else None,
        mistakes=known
        | {
            "that is a gradient-descent step, x - f'(x). Newton's step divides f'(x) by f''(x).": x
            - d1,
            "that is the step f'(x) / f''(x) alone, not the new x.": d1 / d2,
            "the sign is flipped: the step went uphill.": x + d1 / d2,
            "the quotient is upside down: f''(x) / f'(x).": x - d2 / d1,
            "the second derivative came out as f' + f'': backward() added it to the first one "
            "already in x.grad (section 4).": (x - d1 / (d1 + d2)),
        },
    )


# Exercise 6 · Clip a gradient's length with a hook

_CLIPPING = {
    "unclipped": "x.grad is not clipped: the hook must return the clipped gradient, and be "
    "registered on h before loss.backward().",
    "clamped": "each entry of the gradient into h was clamped to [-max_norm, max_norm], as in "
    "section 5: scale the whole gradient by max_norm / its length instead, so that its "
    "direction stays.",
    "x": "the gradient of x was clipped, not the gradient flowing into h: clip the gradient "
    "into h = x ** 3 (a hook on h does it), before it reaches x.",
    "stretched": "the gradient into h was scaled to length max_norm although it was shorter: "
    "a gradient no longer than max_norm must pass unchanged (scale it by at most 1).",
}


def check_clipped(x, loss, expected_loss, expected_grad, wrong, drawn=False) -> None:
    """Check clipped_gradient(x, max_norm, g)'s loss and x.grad (`wrong`: x.grad after each
    typical mistake, by name); `drawn`: g was drawn at random."""
    require(
        isinstance(loss, float) or (isinstance(loss, torch.Tensor) and loss.numel() == 1),
        f"clipped_gradient should return the loss, but it returned {loss!r}.",
    )
    value = float(loss.detach()) if isinstance(loss, torch.Tensor) else float(loss)
    require(
        abs(value - expected_loss) <= 1e-4 * max(1.0, abs(expected_loss)),
        f"clipped_gradient returned the loss {value:.6g}, but g(x**3).sum() is "
        f"{expected_loss:.6g}: the forward value changed. Clip the gradient flowing into h, "
        "not h itself.",
    )
    _check_values(
        x.grad,
        expected_grad,
        "x.grad",
        atol=1e-3,
        mistakes={_CLIPPING[key]: grad for key, grad in wrong.items()},
        drawn="clipped_gradient a function g" if drawn else None,
    )


# Exercise 7 · Fix the in-place bug


@contextlib.contextmanager
def explaining_inplace_errors():
    """Around the call of softplus_grad: explain the in-place error, or a graph cut."""
    try:
        yield
    except CheckFailed as failure:
        message = str(failure)
        if "modified by an inplace operation" in message:
            message = (
                "softplus_grad still raises 'modified by an inplace operation': exp() saved "
                "its output for the way back, and that tensor is still changed in place (under "
                "no_grad() too). Read section 6 on what a node saves."
            )
        elif "does not require grad" in message:
            message += (
                "\nThe loss no longer depends on the tracked x: a detach() (or no_grad()) cut "
                "the graph, so there is nothing to differentiate (sections 1 and 3)."
            )
        raise CheckFailed(message) from None


def check_softplus(gradient, expected, hidden_change, atol=1e-4, drawn=False) -> None:
    """Check softplus_grad(x, g)'s result against `expected`; `hidden_change`: what it returns
    when y.data is changed in place, so that exp()'s backward uses 1 + exp(x) for exp(x);
    `drawn`: g was drawn at random."""
    _check_values(
        gradient,
        expected,
        "softplus_grad(x, g)",
        atol=atol,
        mistakes={
            "a silently wrong gradient (all ones for g = torch.log): changing .data hides the "
            "change from autograd, and exp()'s backward then used the changed output "
            "(section 6).": hidden_change,
        },
        drawn="softplus_grad a function g" if drawn else None,
    )


# Exercise 8 · The derivative of the branch that ran


def check_branch(answer, x, want) -> None:
    """Check df_branch(x)'s answer against `want`, the x.grad autograd gives after
    f_branch(x).backward()."""
    answer = float(answer) if isinstance(answer, torch.Tensor) and answer.numel() == 1 else answer
    branch = "x**3" if x > 0.5 else "sin(2x)"
    if x == 0.5:
        branch += " (x > 0.5 is False at x = 0.5 itself)"
    require(
        isinstance(answer, int | float) and not isinstance(answer, bool),
        f"df_branch({x}) returned {answer!r}; it should return a number.",
    )
    require(
        abs(answer - want) <= 1e-4 * max(1.0, abs(want)),
        f"df_branch({x}) returned {answer:.6g}, but at x = {x} the branch {branch} runs and "
        f"autograd gives {want:.6g}. Differentiate that branch (chain rule, "
        "constant factors).",
    )


# Exercise 9 · A length with no nan gradient


def check_safe_norm(safe_norm, rows, weights, lengths, gradient) -> None:
    """Check safe_norm(v) for v = rows against `lengths`, and the gradient of
    sum(weights * lengths) with respect to v against `gradient` (0 on the rows of zeros)."""
    v = torch.tensor(rows, requires_grad=True)
    result = call(safe_norm, v, name="safe_norm")
    check_tensor(result, lengths, "safe_norm(v)", atol=1e-5)
    require(
        result.requires_grad,
        "safe_norm(v) does not depend on v through autograd, so it has no gradient: build it "
        "from torch operations on v, without detach(), torch.no_grad() or .item().",
    )
    (grad_v,) = torch.autograd.grad(result, v, torch.tensor(weights))
    require(
        bool(torch.isfinite(grad_v).all()),
        "the gradient of safe_norm is not finite (nan or inf) on the rows of zeros:\n"
        f"{grad_v}\ntorch.sqrt ran at 0, where its backward divides by 0 (0 / 0 is nan), and "
        "a torch.where after sqrt does not stop that. Keep 0 away from sqrt with a torch.where "
        "before it, which gives exactly 0 and a gradient of 0 on those rows.",
    )
    check_tensor(grad_v, gradient, "the gradient of safe_norm", atol=1e-4)


# Exercise 10 · Per-example gradients


@contextlib.contextmanager
def explaining_vmap_errors():
    """Around the call of per_sample_grads: explain vmap's in_dims for the shared w."""
    with explained(
        "vmap",
        "vmap was told to split an argument that has no batch dimension: w is shared by every "
        "example, xs and ys hold one example per row (section 9, in_dims).",
    ):
        yield


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
    _check_values(
        result,
        expected,
        "per_sample_grads(w, xs, ys, loss)",
        atol=1e-4,
        drawn="per_sample_grads a loss" if drawn else None,
        mistakes={
            "row i holds the sum of the gradients of examples 0 to i: backward() adds to "
            "w.grad, so clear it before each example (or use torch.autograd.grad).": wrong[
                "running"
            ],
            "these are the gradients with respect to each x, not w: differentiate with "
            "respect to w.": wrong["x"],
        },
    )
