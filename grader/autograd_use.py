"""Whether an answer used autograd (or a hook), for the visible checks of exercises whose wording
says "by hand", "using autograd" or "with a hook". These are advice in the student's own process:
no score rests on them (the probes observe values, on functions and graphs drawn at grading time).

Every reverse-mode gradient (`Tensor.backward`, `torch.autograd.backward` and `.grad`, and
`torch.autograd.functional` and `torch.func.grad`/`vjp` on top of them) reaches torch's engine
through one function, `torch.autograd._engine_run_backward`, whatever name the answer imported
them under; every forward-mode one (`torch.func.jvp`, `jacfwd`, `linearize`, `forward_ad`'s
`dual_level`) enters a dual level through `torch.autograd.forward_ad.enter_dual_level`.
`watch_autograd` counts the calls to both; with `forbid=True` it also runs the answer under
`torch.no_grad()` and makes every call raise `AutogradUsed`, so only an answer worked out by hand
runs through.
"""

import contextlib

import torch
import torch.autograd
import torch.autograd.forward_ad as forward_ad

ENGINE = "_engine_run_backward"  # torch.autograd's own name for the engine's entry


class AutogradUsed(RuntimeError):
    """An answer called autograd where the exercise asks for the result by hand."""


@contextlib.contextmanager
def _replaced(module, name: str, replacement):
    """Run the block with `module.name` replaced."""
    original = getattr(module, name)
    setattr(module, name, replacement)
    try:
        yield
    finally:
        setattr(module, name, original)


@contextlib.contextmanager
def watch_autograd(*, forbid: bool = False):
    """Yield the list of autograd calls made inside the block, in order ("backward" for one that
    accumulates into .grad, "grad" for one that returns gradients, "forward" for forward mode)."""
    calls: list[str] = []
    engine, enter_dual_level = getattr(torch.autograd, ENGINE), forward_ad.enter_dual_level

    def called(kind: str) -> None:
        calls.append(kind)
        if forbid:
            raise AutogradUsed(f"autograd ({kind}) was called")

    def run_engine(*args, **kwargs):
        called("backward" if kwargs.get("accumulate_grad", True) else "grad")
        return engine(*args, **kwargs)

    def enter_forward_mode():
        called("forward")
        return enter_dual_level()

    with (
        _replaced(torch.autograd, ENGINE, run_engine),
        _replaced(forward_ad, "enter_dual_level", enter_forward_mode),
        torch.no_grad() if forbid else contextlib.nullcontext(),
    ):
        yield calls


@contextlib.contextmanager
def watch_hooks():
    """Yield the list of tensors that got a hook (`Tensor.register_hook`) inside the block."""
    hooked: list[torch.Tensor] = []
    original = torch.Tensor.register_hook

    def register_hook(self, hook):
        hooked.append(self)
        return original(self, hook)

    with _replaced(torch.Tensor, "register_hook", register_hook):
        yield hooked
