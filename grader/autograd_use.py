"""Whether an answer used autograd (or a hook), for exercises whose wording says "by hand",
"using autograd" or "with a hook".

Every reverse-mode gradient (`Tensor.backward`, `torch.autograd.backward` and `.grad`, and
`torch.autograd.functional` and `torch.func` on top of them) reaches torch's engine through one
function, `torch.autograd._engine_run_backward`, whatever name the answer imported them under.
`watch_autograd` counts the calls to it; with `forbid=True` it also runs the answer under
`torch.no_grad()` and makes every call raise `AutogradUsed`, so only an answer worked out by hand
runs through. `scaled_gradients` scales the gradient each call starts from.
"""

import contextlib

import torch
import torch.autograd

SCALE = 1.25  # how much larger autograd's gradients come out inside `scaled_gradients`
ENGINE = "_engine_run_backward"  # torch.autograd's own name for the engine's entry
_REGISTER_HOOK = torch.Tensor.register_hook  # torch's own, whatever a block patches later


class AutogradUsed(RuntimeError):
    """An answer called autograd where the exercise asks for the result by hand."""


@contextlib.contextmanager
def _engine_wrapped(wrap):
    """Run the block with torch.autograd's engine entry replaced by `wrap(original)`."""
    original = getattr(torch.autograd, ENGINE)
    setattr(torch.autograd, ENGINE, wrap(original))
    try:
        yield
    finally:
        setattr(torch.autograd, ENGINE, original)


@contextlib.contextmanager
def watch_autograd(*, forbid: bool = False):
    """Yield the list of autograd calls made inside the block, in order ("backward" for one that
    accumulates into .grad, "grad" for one that returns gradients)."""
    calls: list[str] = []

    def wrap(original):
        def engine(*args, **kwargs):
            calls.append("backward" if kwargs.get("accumulate_grad", True) else "grad")
            if forbid:
                raise AutogradUsed(f"torch.autograd.{calls[-1]} was called")
            return original(*args, **kwargs)

        return engine

    with _engine_wrapped(wrap), torch.no_grad() if forbid else contextlib.nullcontext():
        yield calls


@contextlib.contextmanager
def watch_hooks():
    """Yield the list of tensors that got a hook (`Tensor.register_hook`) inside the block."""
    hooked: list[torch.Tensor] = []
    original = torch.Tensor.register_hook

    def register_hook(self, hook):
        hooked.append(self)
        return original(self, hook)

    torch.Tensor.register_hook = register_hook
    try:
        yield hooked
    finally:
        torch.Tensor.register_hook = original


@contextlib.contextmanager
def gradients_reaching(leaf: torch.Tensor):
    """Yield the list of gradients that reach `leaf` inside the block, one per autograd call."""
    reached: list[torch.Tensor] = []
    handle = _REGISTER_HOOK(leaf, lambda grad: reached.append(grad.detach().clone()))
    try:
        yield reached
    finally:
        handle.remove()


@contextlib.contextmanager
def curvature_reaching(leaf: torch.Tensor, direction: torch.Tensor):
    """Yield a list that gets, for each autograd call inside the block, how the gradient it
    sends to `leaf` changes along `direction` (a Hessian-vector product), read before the call
    runs. A gradient typed in by hand and fed through autograd (`(w * formula).sum().backward()`)
    does not change with `leaf`; the gradient of the exercise's loss does, as the solution's."""
    found: list[torch.Tensor] = []
    busy = []  # the block's own calls of autograd, made while reading one

    def wrap(original):
        def engine(outputs, starts, *args, **kwargs):
            if not busy:
                busy.append(True)
                try:
                    found.append(_changes(outputs, starts, leaf, direction))
                finally:
                    busy.pop()
            return original(outputs, starts, *args, **kwargs)

        return engine

    with _engine_wrapped(wrap):
        yield found


def _changes(outputs, starts, leaf, direction) -> torch.Tensor:
    """d/dt of the gradient `outputs` send to `leaf` (from `starts`), at leaf + t * direction."""
    nothing = torch.zeros_like(leaf)
    try:
        with torch.enable_grad():
            (gradient,) = torch.autograd.grad(
                outputs, leaf, starts, retain_graph=True, create_graph=True, allow_unused=True
            )
            if gradient is None or not gradient.requires_grad:
                return nothing
            (change,) = torch.autograd.grad(
                (gradient * direction).sum(), leaf, retain_graph=True, allow_unused=True
            )
    except RuntimeError:  # the answer's graph cannot go twice: its own call will say so
        return nothing
    return nothing if change is None else change.detach()


@contextlib.contextmanager
def scaled_gradients(scale: float = SCALE):
    """Make every gradient autograd computes inside the block `scale` times too large.

    Autograd is linear in the gradient it starts from, so scaling that start scales every
    gradient it computes, along any path, to any order. An answer that really takes its result
    from autograd changes with the scale exactly as the solution does; a formula with a
    throwaway autograd call does not.
    """

    def wrap(original):
        def engine(outputs, starts, *args, **kwargs):
            if isinstance(starts, torch.Tensor):
                starts = starts * scale
            else:
                starts = tuple(None if s is None else s * scale for s in starts)
            return original(outputs, starts, *args, **kwargs)

        return engine

    with _engine_wrapped(wrap):
        yield
