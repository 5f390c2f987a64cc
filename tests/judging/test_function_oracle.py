"""Drawn functions live outside the submission's process: what the submission's side holds is a
handle, the oracle answers every ask with an answer (never an exception of its own), and a
submission that floods the channel with asks gets no grade."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from grader.function_oracle import MAX_ELEMENTS, FunctionOracle, encode
from grader.sandbox import wire
from grader.sandbox.outside.isolation import Limits
from grader.sandbox.outside.reports import ASK_BYTES, UNREAD_ANSWERS, ReportWatch
from grader.sandbox.wire import Kind

# The submission's side, in a process of its own: it draws, differentiates (backward, Hessian,
# compiled), then looks through its whole memory for what a drawn function is made of.
SUBMISSION_SIDE = textwrap.dedent(
    """
    import gc, json, sys, types
    import torch
    from grader import drawn_functions, drawn_programs, hand_graphs
    from grader.probing import Draw
    from grader.remote_functions import RemoteFunctions

    asks, answers = map(int, sys.argv[1:3])
    draw = Draw(5, "test_x", RemoteFunctions.over_pipes(asks, answers))
    f, g = draw.function(), draw.convex_function()
    x = torch.linspace(-1, 1, 5, dtype=torch.float64, requires_grad=True)
    (f(x) + g(x)).sum().backward()
    hessian = torch.func.hessian(lambda t: g(t).sum())(x.detach())
    recorded = []

    def keep(graph, example_inputs):
        recorded.extend(str(node.target) for node in graph.graph.nodes)
        return graph.forward

    compiled = torch.compile(lambda t: 2 * f(t), backend=keep)(x.detach())
    program = draw.program(2, 1, runs=1)
    program.run([0.1, 0.2])
    graph = draw.graph(hand_only=True)
    with torch.no_grad():
        for node in graph.order[:1]:  # its first step, as a walk calls it
            node(torch.ones_like(graph.output))
    sources = {drawn_functions.__file__, drawn_programs.__file__, hand_graphs.__file__}
    closures = [
        o.__qualname__ for o in gc.get_objects()
        if type(o) is types.FunctionType and o.__closure__
        and o.__code__.co_filename in sources
    ]
    secrets = (drawn_programs.Program, hand_graphs.HandGraph, hand_graphs.Step)
    programs = [o for o in gc.get_objects() if type(o) in secrets]
    print(json.dumps({
        "grad": x.grad.tolist(), "hessian": hessian.diagonal().tolist(),
        "compiled": compiled.tolist(), "recorded": recorded,
        "closures": closures, "programs": len(programs),
    }))
    """
)


def _serve(oracle: FunctionOracle, asks: int, answers: int) -> None:
    """Answer asks until the other side closes its end."""
    while True:
        try:
            ask = wire.receive(asks, 1 << 28)
        except wire.WireError:
            return
        wire.send(answers, Kind.ANSWER, **oracle.answer(ask))


def test_the_submission_side_holds_no_term_coefficient_or_count_of_what_it_is_handed():
    """A process that draws, backpropagates, takes a Hessian and compiles a drawn function (with a
    backend of its own that records every operation), walks a hand graph, then finds no closure
    of a drawn function, no program's secrets, no hand graph's steps and no term in any compiled
    graph: they are all in the oracle's process.
    Its gradients are the function's own."""
    from grader.drawn_functions import FunctionDraws

    asks_read, asks_write = os.pipe()
    answers_read, answers_write = os.pipe()
    side = subprocess.Popen(
        [sys.executable, "-c", SUBMISSION_SIDE, str(asks_write), str(answers_read)],
        pass_fds=(asks_write, answers_read),
        stdout=subprocess.PIPE,
        text=True,
    )
    os.close(asks_write)
    os.close(answers_read)
    _serve(FunctionOracle("5"), asks_read, answers_write)
    seen = json.loads(side.communicate(timeout=120)[0])
    os.close(asks_read)
    os.close(answers_write)
    assert seen["closures"] == [] and seen["programs"] == 0
    assert not any(term in seen["recorded"] for term in ("aten.sin", "<built-in method sin"))

    f, _ = FunctionDraws("5").draw("test_x", 0, "elementwise")
    g, _ = FunctionDraws("5").draw("test_x", 1, "convex")
    x = torch.linspace(-1, 1, 5, dtype=torch.float64, requires_grad=True)
    (f(x) + g(x)).sum().backward()
    assert torch.allclose(torch.tensor(seen["grad"], dtype=torch.float64), x.grad)
    assert torch.allclose(torch.tensor(seen["compiled"], dtype=torch.float64), 2 * f(x.detach()))


@pytest.mark.parametrize(
    "ask",
    [
        {},
        {"op": "what"},
        {"op": "draw", "family": "elementwise", "test": 5, "index": 0},
        {"op": "draw", "family": "secret", "test": "t", "index": 0},
        {"op": "draw", "family": "mixing", "test": "t", "index": 0, "size": 10**6},
        {"op": "draw", "family": "elementwise", "test": "t", "index": -1},
        {"op": "apply", "spec": ["f", 0], "tensors": []},
        {"op": "apply", "spec": ["f", 99], "tensors": []},
        {"op": "apply", "spec": ["vjp"] * 3, "tensors": []},
        {"op": "apply", "spec": ["f", 0], "tensors": [{"dtype": "complex64", "shape": [1]}]},
        {"op": "apply", "spec": ["f", 0], "tensors": [{"dtype": "float32", "shape": [3]}]},
        {
            "op": "apply",
            "spec": ["f", 0],
            "tensors": [{"dtype": "float64", "shape": [MAX_ELEMENTS + 1], "data": ""}],
        },
        {
            "op": "apply",
            "spec": ["f", 0],
            "tensors": [{"dtype": "float64", "shape": [2], "data": "!!"}],
        },
        {"op": "run", "handle": 0, "xs": [float("nan")]},
        {"op": "node", "handle": 3, "node": 0, "at": 1.0},
        {"op": "graph", "test": "t", "index": 0, "leaves": 3, "size": 3, "steps": 99, "runs": 1},
        {"op": "graph", "test": "t", "index": 0, "leaves": 3, "size": 3, "steps": 6, "runs": 0},
        {"op": "step", "handle": 0, "step": 0, "grad": {"dtype": "float32", "shape": []}},
        {"op": "step", "handle": 1, "step": 0, "grad": encode(torch.ones(()))},
        {"op": "step", "handle": 0, "step": 99, "grad": encode(torch.ones(()))},
        {"op": "step", "handle": 0, "step": 0, "grad": encode(torch.ones(3))},
        {"op": "step", "handle": 0, "step": 0, "grad": encode(torch.ones((), dtype=torch.int64))},
        {"op": "step", "handle": 0, "step": 1, "grad": encode(torch.ones(3))},
    ],
)
def test_the_oracle_answers_a_hostile_ask_with_an_error_never_an_exception(ask):
    """Whatever a submission sends, the oracle answers it (an error the student reads); the
    grading process goes on."""
    oracle = FunctionOracle("key")
    oracle.answer({"op": "draw", "family": "elementwise", "test": "t", "index": 0})
    graph = {"test": "g", "index": 0, "leaves": 3, "size": 3, "steps": 6, "runs": 1}
    assert "seed" in oracle.answer({"op": "graph", **graph})
    assert "error" in oracle.answer({"op": "graph", **graph})  # drawn once
    deep = ["f", 0]
    for _ in range(20):
        deep = ["vjp", deep, 1]
    assert "error" in oracle.answer(ask)
    assert "error" in oracle.answer({"op": "apply", "spec": deep, "tensors": []})


def test_the_oracle_draws_no_more_than_its_limit_of_functions():
    """A run that asks for functions without end is refused past the limit."""
    oracle = FunctionOracle("key")
    answers = [
        oracle.answer({"op": "draw", "family": "elementwise", "test": "t", "index": i})
        for i in range(300)
    ]
    assert "handle" in answers[0] and "error" in answers[-1]


def test_asks_are_answered_and_a_flood_unread_or_without_functions_gets_no_grade():
    """An ask is answered on the request pipe; asks whose answers pile up unread past the limit,
    or asks where no function was drawn, break the channel's rules."""

    read, write = os.pipe()
    os.set_blocking(write, False)
    watch = ReportWatch(Limits(), {}, oracle=FunctionOracle("key"))
    draw = {"kind": Kind.ASK, "op": "draw", "family": "elementwise", "test": "t", "index": 0}
    assert watch._take(draw) is None and watch._answer(draw, write) is None
    assert wire.receive(read, 1 << 20)["handle"] == 0
    big = torch.zeros(MAX_ELEMENTS, dtype=torch.float64)
    apply = {"kind": Kind.ASK, "op": "apply", "spec": ["f", 0], "tensors": [encode(big)]}
    problems = []
    while not any(problems) and len(problems) < 2 * UNREAD_ANSWERS // big.numel():
        problems.append(watch._answer(apply, write))
    assert problems[-1] == "asks whose answers it does not read"
    assert len(watch.unsent) > UNREAD_ANSWERS
    watch.asked = ASK_BYTES + 1  # as a run that asked that much in all would have
    assert "over" in watch._answer(draw, write)
    os.close(read)
    os.close(write)
    assert ReportWatch(Limits(), {})._take(draw) is not None


def test_a_draw_asked_with_other_settings_than_the_tests_costs_the_test():
    """The grading process keeps what each test drew with which settings: a run whose probe's
    asks were rewritten (more passes of a graph, no row limit) differs from the reference's
    run there, and the judge says so first; a run that stopped before its last draw does not."""
    from grader.judging.verdict import verdict
    from grader.probing import DRAWN, with_drawn

    graph = {"op": "graph", "test": "t", "index": 0, "leaves": 3, "size": 3, "steps": 6}
    loss = {"op": "draw", "family": "elementwise", "test": "t", "index": 1, "size": 0}
    runs = {}
    for name, asks in {
        "reference": [{**graph, "runs": 1}, {**loss, "rows": 2}],
        "more passes": [{**graph, "runs": 16}, {**loss, "rows": 2}],
        "no row limit": [{**graph, "runs": 1}, {**loss, "rows": 0}],
        "drawn twice": [{**graph, "runs": 1}, {**loss, "rows": 0}, {**loss, "rows": 2}],
        "stopped early": [{**graph, "runs": 1}],
    }.items():
        oracle = FunctionOracle("key")
        assert all("error" not in oracle.answer(ask) for ask in asks)
        runs[name] = with_drawn([["w.grad", [1.0], {"rtol": 0, "atol": 0}]], oracle, "t")
    reference = runs.pop("reference")
    assert verdict(reference, runs.pop("stopped early")) is None
    for name, run in runs.items():
        assert verdict(reference, run).startswith(DRAWN), name


def test_a_row_limit_counts_a_batched_call_whole():
    """A loss that takes at most 3 values at a time refuses them under vmap too (each sample
    alone would pass the function's own check): the whole batch is one call."""
    from grader.remote_functions import RemoteFunctions

    oracle = FunctionOracle("key")
    phi, _ = RemoteFunctions(oracle.answer).draw("t", 0, "elementwise", rows=3)
    chunk = torch.ones(3, requires_grad=True)
    phi(chunk).sum().backward()
    assert chunk.grad.shape == (3,)
    with pytest.raises(ValueError, match="at most 3 values at a time, but it was given 8"):
        torch.func.vmap(lambda row: phi(row[None]).sum())(torch.ones(8, 1))
    assert oracle.rows == [3]


def test_a_row_limit_counts_nested_batches_of_two_inputs_as_their_product():
    """Two vmaps batching the two inputs of a function of two evaluate it on every pair: four
    values each, sixteen made, over a limit of four, so it is refused (no input was over it)."""
    oracle = FunctionOracle("key")
    handle = oracle.answer({"op": "draw", "family": "of_two", "test": "t", "index": 0, "rows": 4})
    spec = ["vmap", ["vmap", ["f", handle["handle"]], [None, 0]], [0, None]]
    pairs = [encode(torch.randn(4, 1)), encode(torch.randn(4, 1))]
    answer = oracle.answer({"op": "apply", "spec": spec, "tensors": pairs})
    assert "at most 4 values at a time, but it was given 16" in answer["error"]
    one = oracle.answer({"op": "apply", "spec": ["f", handle["handle"]], "tensors": pairs})
    assert "error" not in one
