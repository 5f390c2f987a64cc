"""Telling how an answer got its result: autograd called, hooks registered, and gradients that
come from autograd rather than from a formula next to a throwaway autograd call."""

import torch

from grader.autograd_use import SCALE, scaled_gradients
from grader.probing import autograd_called, hooks_registered


def _by_autograd(x):
    leaf = x.detach().requires_grad_()
    (leaf**3).sum().backward()
    return leaf.grad


def _formula_after_a_throwaway_call(x):
    torch.ones(1, requires_grad=True).sum().backward()
    return 3 * x**2


def test_scaled_gradients_scale_every_gradient_autograd_computes():
    """backward, autograd.grad, second derivatives and torch.func all come out scaled."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with scaled_gradients():
        (x**3).sum().backward()
        (first,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
        (second,) = torch.autograd.grad(first.sum(), x)
        functional = torch.func.grad(lambda t: (t**3).sum())(x.detach())
    plain = 3 * x.detach() ** 2
    assert torch.allclose(x.grad, SCALE * plain) and torch.allclose(functional, SCALE * plain)
    assert torch.allclose(second, SCALE**2 * 6 * x.detach())
    (after,) = torch.autograd.grad((x**3).sum(), x)
    assert torch.allclose(after, plain)  # nothing is left scaled after the block


def test_a_formula_with_a_throwaway_call_is_told_apart():
    """Both call autograd, but only the answer taken from autograd changes with the scale."""
    x = torch.tensor([1.0, -2.0])
    real, real_used = autograd_called(_by_autograd, x)
    fake, fake_used = autograd_called(_formula_after_a_throwaway_call, x)
    assert real_used and fake_used
    assert torch.allclose(real, SCALE * fake)


def test_hooks_registered_counts_register_hook_calls():
    """A hook registered inside the call is counted; none outside it."""

    def clamp(x):
        h = x * 3
        h.register_hook(lambda grad: grad.clamp(-1, 1))
        return h

    assert hooks_registered(clamp, torch.ones(2, requires_grad=True))[1] == 1
    assert hooks_registered(lambda x: x * 3, torch.ones(2, requires_grad=True))[1] == 0


def test_autograd_imported_under_any_name_is_seen_and_scaled():
    """An answer that imported grad or backward itself (bound before any check ran) is seen to
    call autograd, and its gradients scale like the solution's: the checks watch the engine
    entry both go through, not the names an answer may have copied."""
    from torch.autograd import backward as run_backward
    from torch.autograd import grad as slope

    def by_grad(x):
        leaf = x.detach().requires_grad_()
        return slope((leaf**3).sum(), leaf)[0]

    def by_backward(x):
        leaf = x.detach().requires_grad_()
        run_backward((leaf**3).sum())
        return leaf.grad

    x = torch.tensor([1.0, -2.0])
    for answer in (by_grad, by_backward):
        result, used = autograd_called(answer, x)
        assert used and torch.allclose(result, SCALE * 3 * x**2), answer.__name__
