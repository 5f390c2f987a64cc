"""Functions drawn at grading time, for the exercises that ask for a result "using autograd".

A probe hands a drawn function to the student's answer where the lesson shows an example (the
function to differentiate, an error function, a loss, an activation, a recurrent cell). Two
things make autograd the only route to the numbers the grader expects, by construction rather
than by reading the code:

- it is drawn for the submission, a sum of smooth terms with random coefficients, so no formula
  can be typed in advance (its coefficients live only in closures, which no answer reaches
  without reaching for the interpreter's internals, `grader.judging.internals`);
- its value carries a *shadow*: a smooth term of the inputs **detached** (lesson 7's `detach()`),
  so autograd's gradient leaves it out while every estimate made from values (finite differences
  of any order, Richardson extrapolation, fits) takes in its derivative, of order one.
  Complex input is refused (no complex step), and so are a compiler or tracer (whose recording
  shows the terms and the shadow), a tensor subclass, an active torch
  function or dispatch mode, and a kernel registered with `torch.library` for an operator it runs
  (torch's dispatcher tables, compared with what they held at import), through any of which
  `detach` could be made to hide the shadow.

The reference runs the solution on the same drawn function, so an answer that differentiates what
it is handed with autograd (backward, torch.autograd.grad, torch.func) agrees with it.
"""

import random
from collections.abc import Callable

import torch

Parts = tuple[Callable, Callable]  # (smooth, shadow): what autograd sees, and what it does not
SHOWN = "a function drawn at grading time"  # how labels name one: its formula is nowhere
# torch's own, taken before any submission runs: patching the Tensor class (its operators, its
# detach) through a name the reading does not know cannot reach the shadow or the sum
_DETACH, _ADD, _MUL = torch.Tensor.detach, torch.add, torch.mul
_MATMUL, _CUMSUM = torch.matmul, torch.cumsum
_DISPATCH_DUMP = torch._C._dispatch_dump
# a compiler or tracer records the function's operations, and its recording shows the terms, their
# coefficients and the shadow (torch.compile and torch.export hand a backend the graph, and
# torch.jit.trace returns it): the function refuses to run under one
_COMPILING, _TRACING = torch.compiler.is_compiling, torch._C._is_tracing
_ACCEPTED = (torch.Tensor, torch.nn.Parameter)


def _operators_run() -> tuple[str, ...]:
    """The operators every kind of drawn function runs, recorded once, at import: each builder
    below, for seeds that draw every kind of term, on float32 and float64 inputs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = {"aten::detach"}

    class Recording(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func.name())
            return func(*args, **(kwargs or {}))

    rng = random.Random(0)
    inputs = [
        [torch.rand(3, dtype=dtype, requires_grad=True) for _ in range(2)]
        for dtype in (torch.float32, torch.float64)
    ]
    with Recording():
        for _ in range(40):
            for x, y in inputs:
                for smooth, shadow in (elementwise_parts(rng), convex_parts(rng)):
                    _ADD(smooth(x), shadow(_DETACH(x)))
                smooth, shadow = of_two_parts(rng)
                _ADD(smooth(x, y), shadow(_DETACH(x), _DETACH(y)))
                (smooth, shadow), _ = mixing_parts(rng, 3)
                _ADD(smooth(x), shadow(_DETACH(x)))
    return tuple(sorted(seen))


def _kernels(operators: tuple[str, ...]) -> tuple[str, ...]:
    """Where each operator's kernels were registered, as torch's dispatcher lists them."""
    return tuple(_DISPATCH_DUMP(name) for name in operators)


def drawn_function(parts: Parts) -> Callable:
    """A function of one or more tensors whose value is the smooth part plus the shadow, computed
    from the inputs detached. Its parts live only in its closure."""
    smooth, shadow = parts

    def drawn(*inputs, **named):
        inputs = (*inputs, *named.values())  # f(t=x): whatever the student calls its input
        if torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack():
            raise TypeError("this function runs outside torch function and dispatch modes")
        if _COMPILING() or _TRACING():
            raise TypeError("this function runs as it is: not compiled, traced or exported")
        if _kernels(_OPERATORS) != _KERNELS:
            raise TypeError(
                "this function runs only on torch's own kernels, not on ones "
                "registered with torch.library"
            )
        for given in inputs:
            _refuse(given)
        return _evaluate(smooth, shadow, inputs)

    return drawn


@torch.compiler.disable  # torch.compile runs it, and what it calls, as it is: no graph to show
def _evaluate(smooth: Callable, shadow: Callable, inputs: tuple) -> torch.Tensor:
    return _ADD(smooth(*inputs), shadow(*(_DETACH(given) for given in inputs)))


def _refuse(given) -> None:
    if type(given) not in _ACCEPTED:
        kind = "a tensor subclass" if isinstance(given, torch.Tensor) else type(given).__name__
        raise TypeError(f"this function takes plain tensors, not {kind}: pass it a torch.Tensor")
    if given.is_complex():
        raise TypeError("this function takes real tensors, not complex ones")


def _coefficient(rng: random.Random, low: float, high: float) -> float:
    """A number between low and high in size, of either sign, rounded to 2 decimals."""
    return round(rng.choice([-1, 1]) * rng.uniform(low, high), 2)


def _term(rng: random.Random) -> Callable:
    """One smooth term of one variable, of moderate slope on [-3, 3]."""
    a, b, c = _coefficient(rng, 0.5, 1.5), round(rng.uniform(0.5, 1.5), 2), _coefficient(rng, 0, 1)
    kind = rng.choice(["sin", "tanh", "exp", "softplus", "square", "cube", "t sin"])
    if kind == "sin":
        return lambda t: a * torch.sin(b * t + c)
    if kind == "tanh":
        return lambda t: a * torch.tanh(b * t + c)
    if kind == "exp":
        return lambda t: a * torch.exp(b / 3 * t)
    if kind == "softplus":
        return lambda t: a * torch.nn.functional.softplus(b * t + c)
    if kind == "square":
        return lambda t: a * (t + c) ** 2
    if kind == "cube":
        return lambda t: a / 5 * t**3
    return lambda t: a * t * torch.sin(b * t)


def _shadow(rng: random.Random) -> Callable:
    """p1 t + p2 t**2 with |p1| > 6 |p2|: on [-3, 3] a slope of at least 0.3 and a curvature of
    at least 0.4 in size, which autograd does not see."""
    p2 = _coefficient(rng, 0.2, 0.4)
    p1 = _coefficient(rng, 6 * abs(p2) + 0.3, 6 * abs(p2) + 1.0)
    return lambda t: _ADD(_MUL(t, p1), _MUL(_MUL(t, t), p2))


def elementwise_parts(rng: random.Random, terms: int = 2) -> Parts:
    """A sum of smooth terms applied elementwise, and its shadow."""
    chosen = [_term(rng) for _ in range(terms)]
    return (lambda t: sum(term(t) for term in chosen)), _shadow(rng)


def convex_parts(rng: random.Random) -> Parts:
    """Elementwise, with a second derivative between a > 0 and about 10 on [-3, 3]:
    a * (t - m)**2, a convex term, and a wave too gentle to undo the curvature; and its shadow."""
    a, m = round(rng.uniform(0.5, 1.5), 2), round(rng.uniform(-1.0, 1.0), 2)
    b = round(rng.uniform(0.3, 1.0), 2)
    extra = rng.choice(
        [
            lambda t: torch.cosh(b * t),
            lambda t: torch.nn.functional.softplus(3 * b * t),
            lambda t: torch.exp(b * t),
        ]
    )
    k = round(rng.uniform(0.5, 2.0), 2)
    s = round(min(0.5 * a / k**2, 0.5) * rng.uniform(0.5, 1.0), 3)  # s k**2 <= a / 2
    c = _coefficient(rng, 0, 1)
    return (lambda t: a * (t - m) ** 2 + extra(t) + s * torch.sin(k * t + c)), _shadow(rng)


def of_two_parts(rng: random.Random) -> Parts:
    """A smooth function of two tensors of one shape, elementwise, f(x, y), and its shadow."""
    u, w, mix = _term(rng), _term(rng), _term(rng)
    q3 = _coefficient(rng, 0.2, 0.4)  # each partial of the shadow at least 0.3 in size on [-3, 3]
    q1, q2 = (_coefficient(rng, 3 * abs(q3) + 0.3, 3 * abs(q3) + 1.0) for _ in range(2))
    shadow = lambda x, y: _ADD(_ADD(_MUL(x, q1), _MUL(y, q2)), _MUL(_MUL(x, y), q3))  # noqa: E731
    return (lambda x, y: u(x) * w(y) + mix(x * y)), shadow


def mixing_parts(rng: random.Random, size: int) -> tuple[Parts, int]:
    """A function of a 1-D tensor of `size` elements whose outputs mix its inputs (a matrix, a
    running sum, or elementwise), and the number of outputs it returns."""
    smooth, shadow = elementwise_parts(rng)
    kind = rng.choice(["matrix", "cumsum", "elementwise"])
    if kind == "elementwise":
        return (smooth, shadow), size
    if kind == "cumsum":
        outer, outputs = (lambda z: _CUMSUM(z, 0)), size
    else:
        outputs = rng.randint(2, 4)
        entries = [[round(rng.uniform(-2, 2), 1) for _ in range(size)] for _ in range(outputs)]
        outer = lambda z: _MATMUL(torch.tensor(entries, dtype=z.dtype), z)  # noqa: E731
    return ((lambda t: outer(smooth(t))), (lambda t: outer(shadow(t)))), outputs


def elementwise(rng: random.Random) -> Callable:
    """f(t), applied elementwise."""
    return drawn_function(elementwise_parts(rng))


def convex(rng: random.Random) -> Callable:
    """f(t), applied elementwise, with f'' > 0.4 on [-3, 3] (for Newton's method and descent)."""
    return drawn_function(convex_parts(rng))


def of_two(rng: random.Random) -> Callable:
    """f(x, y), applied elementwise."""
    return drawn_function(of_two_parts(rng))


def mixing(rng: random.Random, size: int) -> tuple[Callable, int]:
    """f(t) for a 1-D t of `size` elements, whose outputs mix its inputs; and their number."""
    parts, outputs = mixing_parts(rng, size)
    return drawn_function(parts), outputs


_OPERATORS = _operators_run()
_KERNELS = _kernels(_OPERATORS)  # before any submission runs: torch's own
