"""Lesson 7's visible checks: `fine_tune`, `trainable_gradients`, `newton_step` and
`clipped_gradient`.

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

from grader.checks import CheckFailed, check_drawn_tensor, explained, require


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


def drawn_model(draw, sizes, activation) -> nn.Sequential:
    """Linear layers of the sizes with a DrawnActivation made of `activation()` (a drawn
    function) between each two, and parameters drawn small enough for the activations to stay
    moderate; `draw` is a probe's draw."""
    layers = [nn.Linear(sizes[0], sizes[1])]
    for i in range(1, len(sizes) - 1):
        layers += [DrawnActivation(activation()), nn.Linear(sizes[i], sizes[i + 1])]
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(draw.tensor(*p.shape, low=-0.6, high=0.6))
    return model


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
            "fine_tune's loss does not depend on anything that trains: either the first layer "
            "was frozen too, or the later layers ran with recording off (or had their output "
            "detached), which cuts the way back to the first layer. Freezing a layer's "
            "parameters leaves the way through it open (section 3; lesson 1, section 6)."
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
            "here, and the layers after it are the ones to freeze (section 2).",
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
                f"{where}.grad is not None: a frozen layer got a gradient, so it was frozen after "
                "a backward() had run (section 2).",
            )
            require(
                torch.equal(p, original[index].get_parameter(name)),
                f"{where} changed: a frozen layer must keep its values, and only the parameters "
                "that still train are to be updated (section 2).",
            )
    for (name, p), want, old in zip(model[0].named_parameters(), expected, stale, strict=False):
        check_drawn_tensor(
            p,
            want,
            f"model[0].{name} after fine_tune",
            atol=atol,
            drawn="fine_tune a model whose activations were" if drawn else None,
            mistakes={
                "the gradients of earlier steps were added in: backward() adds to .grad "
                "(lesson 4, section 5).": old,
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
        "A frozen parameter (requires_grad False) has no gradient to ask for, and "
        "torch.autograd.grad refuses to differentiate with respect to one (sections 2 and 4).",
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
            check_drawn_tensor(
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
        "Either the gradient was asked with respect to x, which does not require gradients (a "
        "tracked copy of its values is needed), or the first gradient was computed without "
        "create_graph=True, so it is a constant with nothing to differentiate (section 4).",
    ):
        yield


def newton_case(example) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """newton_step's visible example (`example`: its Quartic, f(t) = t**4 + a t**2 at x): the
    Newton step x - f'/f'', and f' = 4 t**3 + 2 a t, f'' = 12 t**2 + 2 a there, written out in
    float64 (for check_newton, which names the slips these give)."""
    a, t = float(example.a), torch.tensor(example.x, dtype=torch.float64)
    d1, d2 = 4 * t**3 + 2 * a * t, 12 * t**2 + 2 * a
    return t - d1 / d2, d1, d2


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
    check_drawn_tensor(
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
    "unclipped": "x.grad is not clipped: a hook changes a gradient only through what it returns, "
    "and only if it is registered before backward() runs (section 5).",
    "clamped": "each entry of the gradient into h was clamped to [-max_norm, max_norm], as in "
    "section 5, which can turn the gradient's direction and does not set its length: "
    "clipping a length keeps the direction.",
    "x": "the gradient of x was clipped, not the gradient flowing into h: clip the gradient "
    "into h (x ** 3) on its way to x (section 5).",
    "stretched": "the gradient into h was scaled to length max_norm although it was shorter: "
    "a gradient no longer than max_norm must pass unchanged.",
}


def clipped_case(example):
    """clipped_gradient's visible example (`example`: lesson 7's Clipped, g(h) = a h**2 at x): g,
    the loss a sum(x**6), and for each max_norm (2: clipped, 100: passes unchanged) x.grad and
    what the slips check_clipped names give there, written out: the gradient into h is 2 a h,
    times dh/dx = 3 x**2. Only the example's own g: nothing here takes a function."""
    a = float(example.a)

    def g(h):
        return a * h**2

    x = torch.tensor(example.x, dtype=torch.float64)
    slope, into_h = 3 * x**2, 2 * a * x**3
    unclipped = slope * into_h
    length, x_length = into_h.norm(), unclipped.norm()
    cases = []
    for max_norm, wrong in zip(
        example.max_norms, (("unclipped", "clamped", "x"), ("stretched",)), strict=True
    ):
        slips = {
            "unclipped": unclipped,
            "clamped": slope * into_h.clamp(-max_norm, max_norm),
            "x": unclipped * torch.clamp(max_norm / x_length, max=1.0),
            "stretched": unclipped * max_norm / length,
        }
        right = unclipped * torch.clamp(max_norm / length, max=1.0)
        cases.append((max_norm, right.float(), {k: slips[k].float() for k in wrong}))
    return g, float((a * x**6).sum()), cases


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
    check_drawn_tensor(
        x.grad,
        expected_grad,
        "x.grad",
        atol=1e-3,
        mistakes={_CLIPPING[key]: grad for key, grad in wrong.items()},
        drawn="clipped_gradient a function g" if drawn else None,
    )
