"""Functions drawn for the "using autograd" exercises: autograd differentiates their smooth part
exactly, every estimate made from their values misses (their shadow), complex input is refused,
no formula is shown, a seed always draws the same function, and the handle a probe holds in
grading answers every route of autograd as the function itself would."""

import random

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.func import grad, hessian, jacfwd, jacrev, jvp, vmap

from grader import drawn_functions
from grader.function_oracle import IN_PROCESS, MAX_ELEMENTS, WIRE, FunctionOracle
from grader.probing import DEFAULT_ATOL, DEFAULT_RTOL, Draw
from grader.remote_functions import RemoteFunctions

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


def test_complex_input_and_plain_numbers_are_refused_with_a_clear_message():
    """No complex step: complex input is refused, as is a plain number, saying what to pass,
    whether the function is evaluated here or handed over as a handle. A Parameter is a tensor."""
    for f in (drawn_functions.elementwise(random.Random(0)), Draw(3, "test_x").function()):
        with pytest.raises(TypeError, match="real tensors"):
            f(torch.ones(3, dtype=torch.complex128))
        with pytest.raises(TypeError, match="not float"):
            f(1.0)
        assert f(torch.nn.Parameter(torch.ones(3))).shape == (3,)
        assert torch.equal(f(t=torch.ones(3)), f(torch.ones(3)))  # called by a name of its own
    with pytest.raises(ValueError, match="at most 3 values at a time"):
        Draw(3, "test_x").function(rows=3)(torch.ones(4))


def test_a_drawn_function_shows_no_formula():
    """Its repr and the labels that name it hold no coefficient."""
    f = Draw(3, "test_x").function()
    assert repr(f) == drawn_functions.SHOWN


def test_a_seed_draws_the_same_function_and_another_seed_another():
    """The submission and the reference draw the same function from the same seed."""
    t = torch.linspace(-1, 1, 4, dtype=torch.float64)
    first, again = Draw(7, "test_x").function(), Draw(7, "test_x").function()
    other = Draw(8, "test_x").function()
    assert torch.equal(first(t), again(t)) and not torch.equal(first(t), other(t))


def _routes(f, x, y):
    """What each route autograd offers computes of `f` (of x, and y where it takes two)."""
    args = (x,) if y is None else (x, y)
    total = lambda *a: f(*a).sum()  # noqa: E731
    routes = {"value": f(*args), "jacrev": jacrev(f)(*args), "jacfwd": jacfwd(f)(*args)}
    routes["hessian"] = hessian(total)(*args)
    routes["hvp"] = jvp(grad(total), args, tuple(torch.ones_like(a) for a in args))[1]
    leaf = x.clone().requires_grad_()
    (first,) = torch.autograd.grad(f(leaf, *args[1:]).sum(), leaf, create_graph=True)
    routes["double backward"] = torch.autograd.grad((first**2).sum(), leaf)[0]
    cotangents = torch.stack([torch.ones_like(x), torch.linspace(0, 1, x.numel()).to(x)])
    output = f(leaf, *args[1:])
    routes["is_grads_batched"] = torch.autograd.grad(
        output, leaf, cotangents, is_grads_batched=True
    )[0]
    forward = torch.autograd.functional.jacobian(
        lambda t: f(t, *args[1:]), x, vectorize=True, strategy="forward-mode"
    )
    routes["jacobian, forward mode"] = forward
    changed = f(leaf, *args[1:])
    changed.mul_(2)  # changed in place before backward, as any tensor may be
    routes["in place, then backward"] = torch.autograd.grad(changed.sum(), leaf)[0]
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        routes["dual numbers"] = fwAD.unpack_dual(f(dual, *args[1:])).tangent
    batch = torch.stack([x, x.flip(0), x * 0.5])
    if y is None:
        routes["vmap(grad)"] = vmap(grad(total))(batch)
        routes["vmap(jacfwd)"] = vmap(jacfwd(f))(batch)
        routes["float32"] = f(x.float())
    return routes


@pytest.mark.parametrize("kind", drawn_functions.KINDS)
def test_a_handed_function_answers_every_route_of_autograd_as_the_function_itself(kind):
    """backward (twice, and with is_grads_batched), torch.func's grad, jacrev, jacfwd, hessian,
    vmap and jvp, and dual numbers give on the handle (evaluated elsewhere, as in grading)
    what they give on the function itself."""
    x = torch.linspace(-1.5, 1.3, 4, dtype=torch.float64)
    y = x.flip(0) if kind == "of_two" else None
    handed, _ = RemoteFunctions.here("key").draw("test_x", 0, kind, size=4)
    itself, _ = drawn_functions.FunctionDraws("key").draw("test_x", 0, kind, size=4)
    ours, theirs = _routes(handed, x, y), _routes(itself, x, y)
    for route, value in theirs.items():
        assert ours[route].dtype == value.dtype, route
        assert torch.allclose(ours[route], value, rtol=1e-9, atol=1e-12), route


@pytest.mark.parametrize("kind", drawn_functions.KINDS)
def test_tensors_handed_over_in_process_give_exactly_what_they_give_as_json(kind):
    """The reference and a student's own notebook hand tensors to the oracle in their process;
    a submission sends them as JSON. Every route gives the same bits either way, and the same
    inputs are refused with the same words."""
    x = torch.linspace(-1.5, 1.3, 4, dtype=torch.float64)
    y = x.flip(0) if kind == "of_two" else None
    handles = [
        RemoteFunctions(FunctionOracle("key", crossing).answer, crossing).draw(
            "test_x", 0, kind, size=4
        )[0]
        for crossing in (WIRE, IN_PROCESS)
    ]
    over_wire, in_process = (_routes(f, x, y) for f in handles)
    for route, value in over_wire.items():
        assert in_process[route].dtype == value.dtype, route
        assert torch.equal(in_process[route], value), route
    refused = [
        torch.ones(4, dtype=torch.complex128),
        torch.ones(4, dtype=torch.bool),
        torch.ones(MAX_ELEMENTS + 1),
    ]
    for given in refused:
        said = []
        for f in handles:
            with pytest.raises(TypeError) as error:
                f(given) if y is None else f(given, given)
            said.append(str(error.value))
        assert said[0] == said[1] and ("tensors" in said[0] or "values" in said[0]), said


class _Meddling(torch.Tensor):
    """A tensor subclass whose own code would change what torch computes on it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.sin:
            return torch.zeros(())
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_tensor_subclass_s_code_never_runs_where_the_function_is_evaluated():
    """Handed over in process, as sent as JSON, a subclass's input arrives as a plain tensor: its
    own code cannot change the function's values, nor reach what the oracle keeps."""
    x = torch.linspace(-1.5, 1.3, 4, dtype=torch.float64)
    answers = []
    for crossing in (WIRE, IN_PROCESS):
        f = RemoteFunctions(FunctionOracle("key", crossing).answer, crossing).draw(
            "test_x", 0, "elementwise"
        )[0]
        answers.append(f(x.as_subclass(_Meddling)))
        assert type(answers[-1]) is torch.Tensor
    assert torch.equal(answers[0], answers[1])
    assert torch.equal(
        answers[1], RemoteFunctions.here("key").draw("test_x", 0, "elementwise")[0](x)
    )


def test_a_tracer_is_told_to_call_the_function_and_broadcast_inputs_are_refused():
    """linearize or make_fx would record the function's answers as constants, silently wrong:
    the handle says what to use instead; inputs of different shapes are refused, so a few values
    sent cannot ask the grading process for a product of their sizes."""
    f, _ = RemoteFunctions.here("key").draw("test_x", 0, "elementwise")
    with pytest.raises(TypeError, match="torch.func.jvp or backward"):
        torch.func.linearize(f, torch.ones(3))
    g, _ = RemoteFunctions.here("key").draw("test_x", 1, "of_two")
    with pytest.raises(TypeError, match="one shape"):
        g(torch.ones(4000, 1), torch.ones(1, 4000))


def test_a_drawn_program_runs_as_often_as_asked_and_each_node_once_per_run():
    """Lesson 11's secrets: a second run past the budget, or a node asked twice in one run,
    is refused with what to do instead."""
    program = RemoteFunctions.here("key").program("test_x", 0, inputs=2, nodes=2, runs=1)
    constants = program.run([0.5, -0.25])
    assert len(constants) == 2 and all(0.0 < abs(c) < 2.0 for c in constants)
    program.node(0, 0.3)
    with pytest.raises(TypeError, match="once per run"):
        program.node(0, 0.31)
    with pytest.raises(TypeError, match="runs 1 time"):
        program.run([0.5001, -0.25])
    source = RemoteFunctions.here("key")
    source.program("test_x", 0, inputs=2, nodes=2, runs=1)
    with pytest.raises(TypeError, match="drawn once"):  # afresh, with a budget of its own
        source.program("test_x", 0, inputs=2, nodes=2, runs=64)
