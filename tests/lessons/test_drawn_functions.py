"""Functions drawn for the "using autograd" exercises: autograd differentiates their smooth part
exactly, every estimate made from their values misses (their shadow), complex input and tensor
subclasses are refused, no formula is shown, and a seed always draws the same function."""

import operator
import random

import pytest
import torch

from grader import drawn_functions
from grader.probing import DEFAULT_ATOL, DEFAULT_RTOL, Draw

SEEDS = range(40)


def _drawn(seed: int) -> dict:
    """One function of each kind, as a function of one 1-D float64 tensor, with its smooth part."""
    rng = random.Random(seed)
    two = drawn_functions.of_two_parts(rng)
    mixing, _ = drawn_functions.mixing_parts(rng, 5)
    parts = {
        "elementwise": drawn_functions.elementwise_parts(rng),
        "convex": drawn_functions.convex_parts(rng),
        "of two": tuple((lambda t, p=p: p(t, t.flip(0))) for p in two),
        "mixing": mixing,
    }
    return {kind: (drawn_functions.drawn_function(p), p[0]) for kind, p in parts.items()}


def _autograd(f, t):
    t = t.detach().requires_grad_()
    return torch.autograd.functional.jacobian(f, t)


def _central(f, t, h):
    columns = []
    for i in range(t.numel()):
        e = torch.zeros_like(t)
        e[i] = h
        columns.append((f(t + e) - f(t - e)) / (2 * h))
    return torch.stack(columns, -1)


def _richardson(f, t, h=0.1, levels=5):
    """Ridders' table of central differences at h, h/2, …, extrapolated to step 0."""
    table = [_central(f, t, h / 2**k) for k in range(levels)]
    for order in range(1, levels):
        factor = 4**order
        table = [
            (factor * fine - coarse) / (factor - 1)
            for coarse, fine in zip(table, table[1:], strict=False)
        ]
    return table[0]


def _close(a, b):
    return torch.allclose(a, b, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_autograd_differentiates_the_smooth_part_and_estimates_from_values_miss(seed):
    """Autograd's Jacobian is the smooth part's (a fine central difference of it agrees), while
    central differences of any step and Richardson extrapolation of the function's values miss it
    at the points drawn, by the shadow's slope."""
    t = torch.linspace(-2.9, 2.9, 5, dtype=torch.float64) + 0.01 * seed
    for kind, (f, smooth) in _drawn(seed).items():
        exact = _autograd(f, t)
        assert torch.allclose(exact, _central(smooth, t, 1e-6), atol=1e-6), kind
        for estimate in [_central(f, t, h) for h in (1e-3, 1e-6, 1e-9)] + [_richardson(f, t)]:
            assert not _close(estimate, exact), kind
            assert (estimate - exact).abs().max() > 0.25, kind


def test_second_derivatives_from_values_miss_and_convex_ones_stay_positive():
    """A convex drawn function's f'' (from autograd) stays positive on [-3, 3], and the second
    difference of its values is off by the shadow's curvature."""
    for seed in SEEDS:
        f = drawn_functions.convex(random.Random(seed))
        t = torch.linspace(-3, 3, 61, dtype=torch.float64, requires_grad=True)
        (first,) = torch.autograd.grad(f(t).sum(), t, create_graph=True)
        (second,) = torch.autograd.grad(first.sum(), t)
        assert second.min() > 0.4
        h = 1e-3
        values = t.detach()
        by_values = (f(values + h) - 2 * f(values) + f(values - h)) / h**2
        assert (by_values - second).abs().min() > 0.35


def test_complex_input_subclasses_and_plain_numbers_are_refused_with_a_clear_message():
    """No complex step, and no tensor subclass whose detach() could hide the shadow: each is
    refused, as is a plain number, saying what to pass. A Parameter is a plain tensor here."""

    class Undetached(torch.Tensor):
        def detach(self):
            return torch.zeros_like(self)

    f = drawn_functions.elementwise(random.Random(0))
    with pytest.raises(TypeError, match="real tensors"):
        f(torch.ones(3, dtype=torch.complex128))
    with pytest.raises(TypeError, match="not a tensor subclass"):
        f(torch.ones(3).as_subclass(Undetached))
    with pytest.raises(TypeError, match="not float"):
        f(1.0)
    assert f(torch.nn.Parameter(torch.ones(3))).shape == (3,)
    assert torch.equal(f(t=torch.ones(3)), f(torch.ones(3)))  # called by a name of the student's


def test_a_drawn_function_shows_no_formula_and_keeps_its_parts_in_its_closure():
    """Its repr, attributes and labels hold no coefficient: only the interpreter's internals
    (`__closure__`, which costs the exercise) reach them."""
    f = Draw(3, "test_x").function()
    assert "drawn" in repr(f) and not any(c.isdigit() for c in repr(f).split(" at ")[0])
    assert not [name for name in dir(f) if not name.startswith("__")]


def test_a_seed_draws_the_same_function_and_another_seed_another():
    """The submission and the reference draw the same function from the same seed."""
    t = torch.linspace(-1, 1, 4, dtype=torch.float64)
    first, again = Draw(7, "test_x").function(), Draw(7, "test_x").function()
    other = Draw(8, "test_x").function()
    assert torch.equal(first(t), again(t)) and not torch.equal(first(t), other(t))


def test_a_kernel_registered_with_torch_library_is_refused_while_it_is_there():
    """A `detach` that returns zeros, registered with torch.library on any dispatch key, would
    hide the shadow from values: the function refuses to run until the registration is gone."""
    f, x = drawn_functions.elementwise(random.Random(3)), torch.linspace(-1, 1, 5)
    before = f(x)
    for key in ("CPU", "Autograd", "ADInplaceOrView"):
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("detach", torch.zeros_like, key)
        with pytest.raises(TypeError, match="torch.library"):
            f(x)
        del lib
    assert torch.equal(f(x), before)


def test_compilers_and_tracers_record_none_of_its_operations():
    """torch.compile hands its backend the graphs it records, torch.jit.trace returns one, and
    either would show the terms, their coefficients and the detached shadow: torch.compile runs
    the function as it is (its backend sees none of its operations, whatever the answer wraps
    around it), and torch.jit.trace is refused."""
    f, x = drawn_functions.elementwise(random.Random(3)), torch.linspace(-1, 1, 5)
    recorded = []

    def keep(graph, example_inputs):
        recorded.extend(node.target for node in graph.graph.nodes if node.op != "placeholder")
        return graph.forward

    for answer in (f, lambda t: 2 * f(t)):
        assert torch.equal(torch.compile(answer, backend=keep, dynamic=False)(x), answer(x))
    assert torch.sin not in recorded and "detach" not in recorded and torch.add not in recorded
    assert operator.mul in recorded  # the answer's own 2 * f(t) was recorded: the backend ran
    with pytest.raises(TypeError, match="not compiled, traced or exported"):
        torch.jit.trace(f, (x,))
