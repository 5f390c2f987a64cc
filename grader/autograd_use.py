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
