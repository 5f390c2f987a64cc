"""Runs in the submission's process: drawn functions that are handles, evaluated outside.

In grading, a probe's drawn functions (`grader.drawn_functions`) are drawn and evaluated by the
grading process (`grader.function_oracle`). Here each one is a handle: calling it sends its
inputs out and brings back its value, and autograd reaches it through `_Applied`, a
`torch.autograd.Function` whose backward, forward-mode rule and vmap rule are applications of
the same function asked for in turn (a vector-Jacobian product, a Jacobian-vector product, a
batch), themselves differentiable. So backward(), torch.autograd.grad (with create_graph),
torch.func (grad, jacrev, jacfwd, hessian, vmap, jvp) and dual numbers all work on it, and what
they compute is torch's autograd on the function's own terms, outside: nothing in this process
holds a term, a coefficient or a count.
"""

import random
from collections.abc import Callable
from dataclasses import replace

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.experimental.proxy_tensor import get_proxy_mode

from grader.drawn_functions import SHOWN, refuse
from grader.function_oracle import IN_PROCESS, WIRE, Crossing, FunctionOracle
from grader.random_graphs import RandomGraph, random_graph
from grader.sandbox import wire
from grader.sandbox.wire import Kind

ANSWER_LIMIT = 64 * 1024**2


class RemoteFunctions:
    """Drawn functions as handles, each ask answered by `answer` (a `FunctionOracle`'s, or one
    over a channel: `over_pipes`), its tensors carried as `crossing` carries them."""

    def __init__(self, answer: Callable[[dict], dict], crossing: Crossing = WIRE):
        self._answer = answer
        self._crossing = crossing

    @classmethod
    def over_pipes(cls, asks: int, answers: int) -> "RemoteFunctions":
        """The grading process's drawn functions, asked for on the submission's channel: asks go
        out with its reports (`asks`), answers come back on its request pipe (`answers`)."""

        def answer(fields: dict) -> dict:
            wire.send(asks, Kind.ASK, **fields)
            answered = wire.receive(answers, ANSWER_LIMIT)
            if answered.get("kind") != Kind.ANSWER:
                raise RuntimeError("the grader's answer did not come")
            return answered

        return cls(answer)

    @classmethod
    def here(cls, key: str) -> "RemoteFunctions":
        """Drawn functions from `key`, evaluated in this process as the grading process
        evaluates a submission's (the reference, on the same key, runs on the same ones)."""
        return cls(FunctionOracle(key, IN_PROCESS).answer, IN_PROCESS)

    def ask(self, **fields) -> dict:
        """One ask's answer; the student's error where it was refused."""
        answer = self._answer(fields)
        if "error" in answer:
            raise (ValueError if answer.get("type") == "ValueError" else TypeError)(answer["error"])
        return answer

    def draw(self, test: str, index: int, kind: str, size: int = 0, rows: int = 0):
        """A handle on a drawn function, and the number of outputs a mixing one returns."""
        answer = self.ask(op="draw", test=test, index=index, family=kind, size=size, rows=rows)
        return RemoteFunction(self, answer["handle"], rows), answer["outputs"]

    def program(self, test: str, index: int, inputs: int, nodes: int, runs: int):
        """A handle on a drawn program's secrets (`grader.drawn_programs.Program`)."""
        answer = self.ask(
            op="program", test=test, index=index, inputs=inputs, nodes=nodes, runs=runs
        )
        return RemoteProgram(self, answer["handle"])

    def graph(
        self, test: str, index: int, *, leaves: int, size: int, steps: int, runs: int
    ) -> RandomGraph:
        """Lesson 6's hand graph (`grader.hand_graphs`), built here on the values its steps
        make, each step a node whose backward is asked of the grading process."""
        answer = self.ask(
            op="graph", test=test, index=index, leaves=leaves, size=size, steps=steps, runs=runs
        )
        made = enumerate(self._crossing.take(value) for value in answer["values"])  # in order made

        def through(tensor: torch.Tensor) -> torch.Tensor:
            index, value = next(made)
            return _DrawnStep.apply(tensor, (self, answer["handle"], index, value))

        rng = random.Random(answer["seed"])
        graph = random_graph(rng, leaves=leaves, size=size, steps=steps, through=through)
        return replace(graph, order=[graph.order[i] for i in answer["order"]])

    def step(self, handle: int, index: int, grad) -> torch.Tensor:
        """A hand graph's step `index`: its vector-Jacobian product at `grad`."""
        if not isinstance(grad, torch.Tensor):
            raise TypeError(
                f"a node takes gradient tensors, not {type(grad).__name__}: pass it the sum "
                "of what its consumers sent it"
            )
        answer = self.ask(op="step", handle=handle, step=index, grad=self._crossing.send(grad))
        return self._crossing.take(answer["tensors"][0]).to(grad.device)

    def apply(self, spec: list, tensors) -> tuple[torch.Tensor, ...]:
        """The tensors an application of a drawn function returns, on the inputs' device."""
        if get_proxy_mode() is not None or any(isinstance(t, FakeTensor) for t in tensors):
            raise TypeError(
                "this function is evaluated by the grader, call by call: a tracer "
                "(torch.func.linearize, make_fx, torch.export) cannot record it; use "
                "torch.func.jvp or backward() instead"
            )
        device = tensors[0].device if tensors else torch.device("cpu")
        answer = self.ask(op="apply", spec=spec, tensors=[self._crossing.send(t) for t in tensors])
        return tuple(self._crossing.take(t).to(device) for t in answer["tensors"])


class RemoteFunction:
    """A drawn function, called as the local one is: f(x), f(x, y), f(t=x)."""

    def __init__(self, source: RemoteFunctions, handle: int, rows: int = 0):
        self._source, self._handle, self._rows = source, handle, rows

    @torch.compiler.disable  # a compiler runs it as it is: a call out, with nothing to trace
    def __call__(self, *inputs, **named):
        inputs = (*inputs, *named.values())
        for given in inputs:
            refuse(given, self._rows)  # the same messages, before anything is sent
        return _Applied.apply(self._source, ["f", self._handle], *inputs)[0]

    def __repr__(self):
        return SHOWN


class RemoteProgram:
    """A drawn program's secrets, asked of the grading process: `run`, then `node`."""

    def __init__(self, source: RemoteFunctions, handle: int):
        self._source, self._handle = source, handle

    def run(self, xs: list[float]) -> list[float]:
        """Start a run at `xs`: the constants they feed."""
        return self._source.ask(op="run", handle=self._handle, xs=list(xs))["constants"]

    def node(self, index: int, at: float) -> tuple[float, float]:
        """Node `index` of this run at `at`: its value and local derivative."""
        answer = self._source.ask(op="node", handle=self._handle, node=index, at=at)
        return answer["value"], answer["slope"]


class _DrawnStep(torch.autograd.Function):
    """A hand graph's step: the value the grading process made, and a backward asked of it."""

    @staticmethod
    def forward(ctx, tensor, where):
        ctx.where = where[:3]
        return where[3].clone()

    @staticmethod
    def backward(ctx, grad):
        source, handle, index = ctx.where
        return source.step(handle, index, grad), None


# Callable by hand like a built-in node: the gradient for its one input.
_DrawnStep._backward_cls.__call__ = lambda node, *grads: node.apply(*grads)[0]


class _Applied(torch.autograd.Function):
    """An application of a drawn function (`spec`), computed by the grading process."""

    @staticmethod
    def forward(source, spec, *inputs):
        return source.apply(spec, inputs)

    @staticmethod
    def setup_context(ctx, inputs, output):
        source, spec, *tensors = inputs
        ctx.source, ctx.spec = source, spec
        ctx.shapes = [out.shape for out in output]
        ctx.save_for_backward(*tensors)
        ctx.save_for_forward(*tensors)

    @staticmethod
    def backward(ctx, *cotangents):
        inputs = ctx.saved_tensors
        if any(_legacy_batched(c) for c in cotangents):  # is_grads_batched=True
            return (None, None, *_through_jacobians(ctx, inputs, cotangents))
        spec = ["vjp", ctx.spec, len(inputs)]
        return (None, None, *_Applied.apply(ctx.source, spec, *inputs, *cotangents))

    @staticmethod
    def jvp(ctx, _source, _spec, *tangents):
        inputs = ctx.saved_tensors
        tangents = [
            torch.zeros_like(x) if t is None else t for x, t in zip(inputs, tangents, strict=True)
        ]
        if any(_legacy_batched(t) for t in tangents):  # forward-mode jacobian(vectorize=True)
            return tuple(_forward_through_jacobians(ctx, inputs, tangents))
        spec = ["jvp", ctx.spec, len(inputs)]
        return _Applied.apply(ctx.source, spec, *inputs, *tangents)

    @staticmethod
    def vmap(info, in_dims, source, spec, *inputs):
        out = _Applied.apply(source, ["vmap", spec, list(in_dims[2:])], *inputs)
        return out, tuple(0 for _ in out)


def _legacy_batched(tensor) -> bool:
    return torch._C._functorch.is_legacy_batchedtensor(tensor)


def _jacobians(ctx, inputs, j: int) -> tuple[torch.Tensor, ...]:
    """Output j's Jacobian with respect to each input, as (its size, *the input's shape): one
    vjp per element of the output, batched outside."""
    count = ctx.shapes[j].numel()
    basis = [
        torch.eye(count, dtype=inputs[0].dtype).reshape(count, *shape)
        if k == j
        else torch.zeros(count, *shape, dtype=inputs[0].dtype)
        for k, shape in enumerate(ctx.shapes)
    ]
    dims = [None] * len(inputs) + [0] * len(basis)
    spec = ["vmap", ["vjp", ctx.spec, len(inputs)], dims]
    return _Applied.apply(ctx.source, spec, *inputs, *basis)


def _through_jacobians(ctx, inputs, cotangents) -> list[torch.Tensor]:
    """The vector-Jacobian products for cotangents batched by torch.autograd.grad's
    is_grads_batched (an older vmap, with no rule for a Function): each Jacobian asked for
    whole, then multiplied here by torch."""
    grads = [torch.zeros_like(x) for x in inputs]
    for j, cotangent in enumerate(cotangents):
        count = ctx.shapes[j].numel()
        for i, jacobian in enumerate(_jacobians(ctx, inputs, j)):
            flat = cotangent.reshape(-1) @ jacobian.reshape(count, -1)
            grads[i] = grads[i] + flat.reshape(inputs[i].shape)
    return grads


def _forward_through_jacobians(ctx, inputs, tangents) -> list[torch.Tensor]:
    """The Jacobian-vector products for tangents batched by the same older vmap (the
    forward-mode strategies of torch.autograd.functional), likewise."""
    outputs = []
    for j, shape in enumerate(ctx.shapes):
        count = shape.numel()
        total = 0
        for tangent, jacobian in zip(tangents, _jacobians(ctx, inputs, j), strict=True):
            total = total + jacobian.reshape(count, -1) @ tangent.reshape(-1)
        outputs.append(total.reshape(shape))
    return outputs
