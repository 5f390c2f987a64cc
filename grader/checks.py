"""Check helpers for the lessons' test cells.

Each helper raises `CheckFailed` (an AssertionError) with an explanation written for the
student, and never writes to stderr: nbgrader scores any stderr output as a failure, so torch
warnings raised while a check calls student code are swallowed here.
"""

import contextlib
import math
import random
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping

import numpy
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from grader.autograd_use import AutogradUsed, watch_autograd, watch_hooks


class CheckFailed(AssertionError):
    """A check failed; the message says what is wrong in the student's terms."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows: the explanation alone, without the check helpers' frames."""
        return [f"{type(self).__name__}: {self}"]


NOT_WRITTEN = (
    "{name} is not written yet: in its answer cell, replace the line "
    "`raise NotImplementedError(...)` with your code, run that cell, then run this test again."
)
RUN_ABOVE = (
    "Run the cells above this one first (after a kernel restart: Run > Run All Above Selected "
    "Cell), then this cell again."
)


def _explain_names_not_defined() -> None:
    """In a notebook, a name that is not defined (a cell above not run, or a kernel restarted)
    says which cells to run."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython else None
    if shell is None or NameError in shell.custom_exceptions:
        return

    def explain(shell, etype, value, tb, tb_offset=None):
        value.args = (f"{value}. {RUN_ABOVE}",)
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        return []

    shell.set_custom_exc((NameError,), explain)


_explain_names_not_defined()


def require(condition: bool, explanation: str) -> None:
    """Fail with `explanation` unless `condition` holds."""
    if not condition:
        raise CheckFailed(explanation)


def advise(condition: bool, advice: str) -> None:
    """Print `advice` unless `condition` holds: a habit worth keeping, not a failure."""
    if not condition:
        print(f"Advice: {advice}")


def quietly(fn: Callable, *args, **kwargs):
    """Call `fn`, swallowing the warnings it raises so that nothing reaches stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def call(fn: Callable, *args, name: str):
    """Call the student's function `name`; explain any error it raises as a failed check."""
    require(callable(fn), f"{name} should be a function, but it is {fn!r}.")
    given = _shown(args)  # as they were given, whatever fn does to them before it fails
    try:
        return quietly(fn, *args)
    except Exception as error:
        raise _failed_call(name, args, error, given) from None


def _shown(args: tuple) -> str:
    return ", ".join(repr(a) for a in args)


BY_HAND = (
    "{name} used autograd (backward() or torch.autograd.grad), but this exercise asks for the "
    "result by hand: write the formula you derived with plain arithmetic, without autograd."
)
WITH_AUTOGRAD = (
    "{name} returned the result without calling autograd, but this exercise asks you to get it "
    "from autograd, as the lesson's sections did: a result worked out another way fits only "
    "the example."
)


def call_by_hand(fn: Callable, *args, name: str):
    """Call `fn` with autograd switched off; fail with a clear message if it uses autograd."""
    require(callable(fn), f"{name} should be a function, but it is {fn!r}.")
    try:
        with watch_autograd(forbid=True):
            return quietly(fn, *args)
    except AutogradUsed:
        raise CheckFailed(BY_HAND.format(name=name)) from None
    except Exception as error:
        raise _failed_call(name, args, error) from None


def call_with_autograd(fn: Callable, *args, name: str):
    """Call `fn` and fail with a clear message unless it called autograd."""
    with watch_autograd() as calls:
        result = call(fn, *args, name=name)
    require(bool(calls), WITH_AUTOGRAD.format(name=name))
    return result


def call_with_hook(fn: Callable, *args, name: str):
    """Call `fn` and fail with a clear message unless it registered a hook on a tensor."""
    with watch_hooks() as hooked:
        result = call(fn, *args, name=name)
    require(
        bool(hooked),
        f"{name} registered no hook, but this exercise asks you to change the gradient with a "
        "hook: call register_hook on the tensor whose gradient you change.",
    )
    return result


def _is_stub(error: NotImplementedError) -> bool:
    """Whether the error is the released notebook's `raise NotImplementedError(...)` (or a bare
    one), not one that torch or a library raised from inside a written answer."""
    return not str(error) or str(error).startswith("Not written yet")


def _failed_call(name: str, args: tuple, error: Exception, shown: str = "") -> CheckFailed:
    """The explanation of an error the student's function raised: what was called, what came
    back, and what to do."""
    if isinstance(error, NotImplementedError) and _is_stub(error):
        return CheckFailed(NOT_WRITTEN.format(name=name))
    if isinstance(error, NameError):
        return CheckFailed(
            f"{name} uses {error.name or 'a name'}, which is not defined. {RUN_ABOVE}"
        )
    shown = shown or _shown(args)
    return CheckFailed(
        f"{name}({shown}) raised {type(error).__name__}: {str(error).rstrip('.')}. "
        f"Fix {name} so that it runs on this input, run its cell again, then this test."
    )


def check_tracked_leaf(tensor, name: str) -> None:
    """Check that `tensor` is a floating-point leaf tensor that autograd tracks."""
    require(
        isinstance(tensor, torch.Tensor),
        f"{name} should be a torch.Tensor, but it is a {type(tensor).__name__}.",
    )
    require(
        tensor.is_floating_point() or tensor.is_complex(),
        f"{name} has dtype {tensor.dtype}: only floating-point (or complex) tensors can "
        "require gradients (lesson 1, section 5).",
    )
    require(
        tensor.requires_grad,
        f"{name}.requires_grad is False: autograd does not track it (lesson 1, sections 2 and 3).",
    )
    require(
        tensor.is_leaf,
        f"{name} is not a leaf: it was computed from another tracked tensor "
        f"(its grad_fn is {type(tensor.grad_fn).__name__}; lesson 1, section 6).",
    )


def _as_tensor(value) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach()
    return torch.as_tensor(value, dtype=torch.float64)


def _close(actual, expected, atol: float) -> bool:
    a, e = _as_tensor(actual), _as_tensor(expected)
    if a.shape != e.shape:
        return False
    return bool(torch.allclose(a.double(), e.double(), atol=atol, rtol=1e-5))


def check_tensor(
    actual,
    expected,
    name: str,
    *,
    atol: float = 1e-6,
    mistakes: Mapping[str, object] | None = None,
) -> None:
    """Check that `actual` is a tensor equal to `expected` in shape and values.

    `mistakes` maps an explanation to the value a typical mistake produces; when the student's
    value matches one of them, that explanation is the failure message.
    """
    require(actual is not None, f"{name} is None: it has not been computed yet.")
    require(
        isinstance(actual, torch.Tensor),
        f"{name} should be a torch.Tensor, but it is a {type(actual).__name__}.",
    )
    expected_t = _as_tensor(expected)
    require(
        tuple(actual.shape) == tuple(expected_t.shape),
        f"{name} has shape {tuple(actual.shape)}, expected {tuple(expected_t.shape)}.",
    )
    if _close(actual, expected_t, atol):
        return
    # a drawn input can make two mistakes give the same values: the message names each
    found = [e for e, wrong in (mistakes or {}).items() if _close(actual, wrong, atol)]
    if found:
        raise CheckFailed(f"{name} is wrong: " + " Or ".join(found))
    raise CheckFailed(f"{name} has the wrong values:\n{actual.detach()}\nexpected:\n{expected_t}")


DRAWN = (
    "\nThis test hands {given} drawn at random, not the lesson's example: differentiate what "
    "it is given with autograd. A formula typed for the example fits only the example."
)


def check_drawn_tensor(actual, expected, name, *, atol, mistakes=None, drawn=None, advice=None):
    """check_tensor; on wrong values, when `drawn` says what was drawn for whom ("hvp a
    function f"), a word on why a formula typed for the example does not do (or `advice`)."""
    try:
        check_tensor(actual, expected, name, atol=atol, mistakes=mistakes)
    except CheckFailed as failure:
        advice = advice or (DRAWN.format(given=drawn) if drawn else None)
        if advice is None or "has the wrong values" not in str(failure):
            raise
        raise CheckFailed(f"{failure}{advice}") from None


def check_grad(
    tensor: torch.Tensor,
    expected,
    name: str,
    *,
    atol: float = 1e-6,
    mistakes: Mapping[str, object] | None = None,
) -> None:
    """Check the gradient stored in `tensor.grad`, explaining the usual autograd slips."""
    require(
        isinstance(tensor, torch.Tensor),
        f"{name} should be a torch.Tensor, but it is a {type(tensor).__name__}.",
    )
    if not tensor.is_leaf and not tensor.retains_grad:
        raise CheckFailed(
            f"{name} is not a leaf tensor, so backward() does not fill its .grad: read the "
            "gradient of the leaf you created with requires_grad=True, or call .retain_grad()."
        )
    require(
        tensor.grad is not None,
        f"{name}.grad is None: call .backward() on a scalar that depends on {name} first.",
    )
    expected_t = _as_tensor(expected)
    known = dict(mistakes or {})
    for times in (2, 3, 4):
        known.setdefault(
            f"it is {times}x the right gradient. Gradients accumulate across backward() calls: "
            f"zero {name}.grad (or set it to None) before calling backward() again.",
            expected_t * times,
        )
    check_tensor(tensor.grad, expected_t, f"{name}.grad", atol=atol, mistakes=known)


def check_value(actual, expected, name: str, *, hint: str = "") -> None:
    """Check that a plain Python answer equals `expected`.

    Numbers compare by value (6 is 6.0); anything else must also be of the expected type, so
    an object that claims to equal everything does not pass.
    """
    actual = _plain(actual)
    comparable = (_is_number(actual) and _is_number(expected)) or type(actual) is type(expected)
    if comparable and actual == expected:
        return
    message = f"{name} is {actual!r}, but that is not right."
    raise CheckFailed(f"{message} {hint}".strip())


def _is_number(value) -> bool:
    return type(value) in (int, float)


@contextlib.contextmanager
def explained(marker: str, advice: str):
    """Around a check: a failure whose message contains `marker` gets `advice` added below it."""
    try:
        yield
    except CheckFailed as failure:
        if marker not in str(failure):
            raise
        raise CheckFailed(f"{failure}\n{advice}") from None


def one_number(result, name: str, what: str) -> float:
    """`result` (what the call `name` returned) as a finite float; fail saying it should return
    `what` when it is not one number."""
    if isinstance(result, torch.Tensor):
        require(result.numel() == 1, f"{name} should return one number, not {result}.")
        result = result.item()
    result = float(result) if hasattr(result, "__float__") else result
    require(
        isinstance(result, float) and math.isfinite(result),
        f"{name} returned {result!r}; it should return {what}.",
    )
    return result


def as_number(value):
    """`value` as a plain int or float when it holds one number (a Python or NumPy number, or a
    0-d tensor); None for anything else, booleans included."""
    value = _plain(value)
    return value if _is_number(value) else None


def _plain(value):
    """A NumPy scalar (np.float64(6.0), np.True_) or a 0-d tensor as the Python number or bool it
    holds."""
    if isinstance(value, torch.Tensor) and value.dim() == 0:
        value = value.detach().item()
    if isinstance(value, numpy.generic):
        plain = value.item()
        if type(plain) in (bool, int, float, str):
            return plain
    return value


def check_derivative(
    student_derivative: Callable[[float], float],
    function: Callable[[torch.Tensor], torch.Tensor],
    name: str,
    *,
    points: Iterable[float] | None = None,
    low: float = -3.0,
    high: float = 3.0,
    count: int = 5,
    atol: float = 1e-4,
) -> None:
    """Check a hand-derived derivative against autograd at `points` (random if not given).

    Random points are drawn when the check runs, so a hard-coded number cannot pass.
    """
    if points is None:
        rng = random.Random()
        points = [round(rng.uniform(low, high), 3) for _ in range(count)]
    for x in points:
        leaf = torch.tensor(float(x), dtype=torch.float64, requires_grad=True)
        (reference,) = torch.autograd.grad(function(leaf), leaf)
        answer = call(student_derivative, float(x), name=name)
        answer = float(answer.detach()) if isinstance(answer, torch.Tensor) else _plain(answer)
        require(
            isinstance(answer, int | float) and math.isfinite(answer),
            f"{name}({x}) returned {answer!r}; it should return a finite number.",
        )
        require(
            abs(answer - float(reference)) <= atol * max(1.0, abs(float(reference))),
            f"{name}({x}) returned {answer:.6g}, but autograd says the derivative at x = {x} "
            f"is {float(reference):.6g}. Check your derivation (chain rule, constant factors).",
        )


def check_error_message(message, must_contain: str, name: str, *, hint: str = "") -> None:
    """Check that a caught error message was stored and names the expected problem."""
    require(
        isinstance(message, str) and message != "",
        f"{name} should hold the error message as a string (str(error)), "
        f"but it is {message!r}. {hint}".strip(),
    )
    require(
        must_contain.lower() in message.lower(),
        f"{name} is {message!r}, which is not the error this exercise asks for. {hint}".strip(),
    )


def check_grad_fn(tensor, expected: str | None, name: str) -> None:
    """Check the name of the backward node that made `tensor` (None for a leaf)."""
    require(
        isinstance(tensor, torch.Tensor),
        f"{name} should be a torch.Tensor, but it is a {type(tensor).__name__}.",
    )
    actual = None if tensor.grad_fn is None else type(tensor.grad_fn).__name__
    if actual == expected:
        return
    if expected is None:
        raise CheckFailed(f"{name} should be a leaf (grad_fn None), but it was made by {actual}.")
    if actual is None:
        raise CheckFailed(
            f"{name} has no grad_fn: it is a leaf or is not tracked, so autograd recorded no "
            f"operation. Expected {expected}."
        )
    raise CheckFailed(f"{name} was made by {actual}, but the exercise asks for {expected}.")


def check_warns(fn: Callable, *args, name: str, category: type = Warning, match: str = ""):
    """Call `fn` and check that it warns with `category` and a message containing `match`.

    The warnings are recorded, not printed, so the test cell still writes nothing to stderr.
    Returns what `fn` returned.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except Exception as error:
            raise _failed_call(name, args, error) from None
    found = [w for w in caught if issubclass(w.category, category) and match in str(w.message)]
    require(
        bool(found),
        f"{name} should warn with a {category.__name__}"
        + (f" about {match!r}" if match else "")
        + f", but it gave {[str(w.message) for w in caught] or 'no warning'}.",
    )
    return result


def call_shown(fn: Callable, *args, name: str, shown: str):
    """`call`, with the call written as `shown` in the messages: for arguments whose repr is
    long or unreadable (graph nodes, dicts of nodes)."""
    require(callable(fn), f"{name} should be a function, but it is {fn!r}.")
    try:
        return quietly(fn, *args)
    except (NotImplementedError, NameError) as error:
        raise _failed_call(name, args, error) from None
    except Exception as error:
        raise CheckFailed(
            f"{shown} raised {type(error).__name__}: {error}. "
            f"Fix {name} so that it runs on this input, run its cell again, then this test."
        ) from None


@contextlib.contextmanager
def optimizer_steps():
    """Yield the list of `torch.optim` optimizers that took a step inside the block, one entry
    per step: for exercises that ask for an optimizer, not a hand-written update."""
    stepped: list = []
    handle = register_optimizer_step_post_hook(
        lambda optimizer, args, kwargs: stepped.append(optimizer)
    )
    try:
        yield stepped
    finally:
        handle.remove()
