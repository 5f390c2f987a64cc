"""The visible checks' view of how an answer worked: autograd called, in reverse or forward mode,
under any name the answer imported it by, and hooks registered. This is advice shown in the
student's notebook; no score rests on it."""

import pytest
import torch
from torch.autograd import backward as run_backward
from torch.autograd import grad as slope
from torch.autograd.forward_ad import dual_level, make_dual, unpack_dual

from grader.autograd_use import AutogradUsed, watch_autograd, watch_hooks
from grader.checks import CheckFailed, call_by_hand, call_with_autograd


def _leaf(x):
    return x.detach().requires_grad_()


def _by_backward(x):
    leaf = _leaf(x)
    run_backward((leaf**3).sum())
    return leaf.grad


def _by_grad(x):
    leaf = _leaf(x)
    return slope((leaf**3).sum(), leaf)[0]


def _by_dual_numbers(x):
    with dual_level():
        out = unpack_dual(make_dual(x, torch.ones_like(x)) ** 3).tangent
    return out


ANSWERS = {
    "backward(), imported by name": _by_backward,
    "torch.autograd.grad, imported by name": _by_grad,
    "torch.func.grad": lambda x: torch.func.grad(lambda t: (t**3).sum())(x),
    "torch.func.jvp (forward mode)": lambda x: torch.func.jvp(
        lambda t: t**3, (x,), (torch.ones_like(x),)
    )[1],
    "torch.func.jacfwd (forward mode)": lambda x: torch.func.jacfwd(lambda t: t**3)(x).diagonal(),
    "forward_ad's dual numbers": _by_dual_numbers,
    "torch.autograd.functional.jacobian": lambda x: torch.autograd.functional.jacobian(
        lambda t: t**3, x
    ).diagonal(),
}


@pytest.mark.parametrize("route", sorted(ANSWERS))
def test_every_route_through_autograd_is_seen_and_forbidden_by_hand(route):
    """Each route counts as a call, passes `call_with_autograd`, and raises where autograd is
    forbidden (`call_by_hand`): forward mode is autograd too."""
    x = torch.tensor([1.0, -2.0])
    with watch_autograd() as calls:
        result = ANSWERS[route](x)
    assert calls and torch.allclose(result, 3 * x**2), route
    assert torch.allclose(call_with_autograd(ANSWERS[route], x, name="f"), 3 * x**2)
    with pytest.raises(CheckFailed, match="by hand"):
        call_by_hand(ANSWERS[route], x, name="f")
    with pytest.raises(AutogradUsed), watch_autograd(forbid=True):
        ANSWERS[route](x)


def test_a_formula_calls_nothing_and_the_watch_leaves_torch_as_it_was():
    x = torch.tensor([1.0, -2.0])
    with watch_autograd() as calls:
        3 * x**2
    assert calls == []
    with pytest.raises(CheckFailed, match="without calling autograd"):
        call_with_autograd(lambda t: 3 * t**2, x, name="f")
    assert torch.allclose(_by_grad(x), 3 * x**2) and torch.allclose(_by_dual_numbers(x), 3 * x**2)


def test_hooks_registered_inside_the_block_are_seen():
    """A hook registered inside the block is listed; none outside it."""
    x = torch.ones(2, requires_grad=True)
    with watch_hooks() as hooked:
        h = x * 3
        h.register_hook(lambda grad: grad.clamp(-1, 1))
    x.register_hook(lambda grad: grad)
    assert hooked == [h]
