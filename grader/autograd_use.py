"""Whether an answer used autograd (or a hook), for exercises whose wording says "by hand",
"using autograd" or "with a hook".

`watch_autograd` counts the calls to autograd's entry points (`Tensor.backward` goes through
`torch.autograd.backward`; `torch.autograd.functional` and `torch.func` through
`torch.autograd.grad`). With `forbid=True` it also runs the answer under `torch.no_grad()` and
makes every such call raise `AutogradUsed`, so only an answer worked out by hand runs through.
"""

import contextlib

import torch

ENTRY_POINTS = ("backward", "grad")
SCALE = 1.25  # how much larger autograd's gradients come out inside `scaled_gradients`
_REGISTER_HOOK = torch.Tensor.register_hook  # torch's own, whatever a block patches later


class AutogradUsed(RuntimeError):
    """An answer called autograd where the exercise asks for the result by hand."""


@contextlib.contextmanager
def watch_autograd(*, forbid: bool = False):
    """Yield the list of autograd entry points called inside the block, in order."""
    calls: list[str] = []
    originals = {name: getattr(torch.autograd, name) for name in ENTRY_POINTS}

    def watched(name, original):
        def entry(*args, **kwargs):
            calls.append(name)
            if forbid:
                raise AutogradUsed(f"torch.autograd.{name} was called")
            return original(*args, **kwargs)

        return entry

    for name, original in originals.items():
        setattr(torch.autograd, name, watched(name, original))
    try:
        with torch.no_grad() if forbid else contextlib.nullcontext():
            yield calls
    finally:
        for name, original in originals.items():
            setattr(torch.autograd, name, original)


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
def scaled_gradients(scale: float = SCALE):
    """Make every gradient autograd computes inside the block `scale` times too large.

    Autograd is linear in the gradient it starts from, so scaling that start (a hook on each
    output given to `backward`/`torch.autograd.grad`) scales every gradient it computes, along
    any path, to any order. An answer that really takes its result from autograd changes with
    the scale exactly as the solution does; a formula with a throwaway autograd call does not.
    """
    originals = {name: getattr(torch.autograd, name) for name in ENTRY_POINTS}

    def scaled(original):
        def entry(outputs, *args, **kwargs):
            roots = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)
            handles = [
                _REGISTER_HOOK(root, lambda grad: grad * scale)
                for root in roots
                if isinstance(root, torch.Tensor) and root.requires_grad
            ]
            try:
                return original(outputs, *args, **kwargs)
            finally:
                for handle in handles:
                    handle.remove()

        return entry

    for name, original in originals.items():
        setattr(torch.autograd, name, scaled(original))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(torch.autograd, name, original)
