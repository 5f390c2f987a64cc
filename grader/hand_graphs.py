"""Lesson 6's drawn graphs for a backward pass run by hand, whose steps the grading process owns
(`grader.function_oracle`).

A hand graph is a `random_graph` whose every intermediate, `h0 * h0` and output pass through a
step: a drawn function of the tensor, A (t + a tanh(b t + c)) with A a square matrix that mixes
its elements. Its values are worked out here and handed to the submission's process, which
builds the same graph on them (`grader.remote_functions`): a step's node there knows its value
and nothing of its function, and its vector-Jacobian product is asked of this process. Here
each step answers only in the order the exercise hands over (`HandGraph.order`), from the
output's step on, once per pass, and the passes are counted, one per call of the answer.

So torch's engine cannot run such a graph: it calls two steps the other way round on every path
(`random_graph`'s twins), and the grading process refuses the second. Nor can an answer learn a
step and run the engine on its own copy: one pass asks each step once, and one product of a
mixing matrix does not give the matrix. Only calling the nodes in the order handed over, each on
the gradient it has received, gets the reference's numbers.
"""

import random
from dataclasses import dataclass

import torch

from grader.random_graphs import counts_of, random_graph

ORDER = (
    "the drawn graph's own nodes answer only when called in the order handed to your function, "
    "from output.grad_fn on, each once per pass (backward() and torch.autograd.grad call them in "
    "an order of their own): walk `order` as section 8 does"
)


@dataclass
class Step:
    """One step's drawn function, and the input it was made from."""

    mix: torch.Tensor  # A: square, of the input's size (empty for a one-number input)
    a: float
    b: float
    c: float
    at: torch.Tensor  # the input, in float64

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        inner = t + self.a * torch.tanh(self.b * t + self.c)
        return self.mix @ inner if t.dim() else inner

    def vjp(self, grad: torch.Tensor) -> torch.Tensor:
        """grad times the Jacobian at the input, A diag(1 + a b sech²(b t + c)), worked out
        directly (no autograd here: a visible check runs this in the student's process)."""
        slope = 1 + self.a * self.b / torch.cosh(self.b * self.at + self.c) ** 2
        return slope * (self.mix.T @ grad if grad.dim() else grad)


@dataclass
class HandGraph:
    """The steps of one drawn hand graph, their order, and the passes still allowed."""

    seed: int  # of the graph's structure and leaves, which are no secret
    values: list[torch.Tensor]  # what each step makes, in the order they were made
    steps: list[Step]
    positions: list[int]  # each step's place among the steps in the order handed over
    order: list[int]  # the order handed over: each node's place in the graph's order of making
    runs: int
    started: int = 0
    last: int | None = None  # the place of the step asked last in this pass

    def backward(self, index: int, grad: torch.Tensor) -> torch.Tensor:
        """Step `index`'s vector-Jacobian product at `grad`, if it is asked for in order."""
        if not 0 <= index < len(self.steps):
            raise TypeError("no such node of the drawn graph")
        step, place = self.steps[index], self.positions[index]
        if grad.shape != step.at.shape or not grad.is_floating_point():  # before a pass counts
            raise TypeError(
                f"this node takes the gradient of the tensor it made, of shape "
                f"{tuple(step.at.shape)}, not {grad.dtype} of shape {tuple(grad.shape)}"
            )
        if place == 0:
            if self.started >= self.runs:
                raise TypeError(
                    f"the drawn graph is walked {self.runs} time(s) here, once per call of "
                    "your function: walk it once per call"
                )
            self.started += 1
        elif self.last is None or place <= self.last:
            raise TypeError(ORDER)
        self.last = place
        return step.vjp(grad.to(torch.float64)).to(grad.dtype)


def draw_hand_graph(
    rng: random.Random, *, leaves: int, size: int, steps: int, runs: int
) -> HandGraph:
    """A hand graph drawn from `rng`: its structure's seed, its steps, their values and order."""
    seed = rng.getrandbits(63)
    drawn: list[Step] = []
    values: list[torch.Tensor] = []
    nodes: dict = {}

    def through(tensor: torch.Tensor) -> torch.Tensor:
        n = tensor.numel() if tensor.dim() else 0
        mix = torch.eye(n, dtype=torch.float64)
        mix += torch.tensor([[rng.uniform(-0.6, 0.6) for _ in range(n)] for _ in range(n)])
        a, b, c = rng.uniform(0.2, 0.5), rng.uniform(0.5, 1.5), rng.uniform(-1.0, 1.0)
        step = Step(mix, a, b, c, tensor.detach().to(torch.float64))
        value = step(step.at).to(tensor.dtype)
        made = _Tag.apply(tensor, value)
        nodes[made.grad_fn] = len(drawn)
        drawn.append(step)
        values.append(value)
        return made

    graph = random_graph(
        random.Random(seed), leaves=leaves, size=size, steps=steps, through=through
    )
    # The order handed over: from the output's node, a node placed once every entry of
    # next_functions that points at it has been, the last one to become ready first. It runs
    # twin1 before twin2, and the last node before h0 * h0's step, against torch's engine.
    waiting, handed, ready = counts_of(graph.order), [], [graph.output.grad_fn]
    while ready:
        handed.append(ready.pop())
        for child, _ in handed[-1].next_functions:
            if child is not None:
                waiting[child] -= 1
                if waiting[child] == 0:
                    ready.append(child)
    positions = [0] * len(drawn)
    for place, index in enumerate(nodes[node] for node in handed if node in nodes):
        positions[index] = place
    made = {node: i for i, node in enumerate(graph.order)}
    return HandGraph(seed, values, drawn, positions, [made[node] for node in handed], runs)


def hand_graph_truth(record: HandGraph):
    """The same graph with its steps' functions differentiable here: the gradients a walk of the
    hand graph must give (`torch.autograd` on it)."""
    steps = iter(record.steps)
    through = lambda t: next(steps)(t.double()).float()  # noqa: E731
    return random_graph(random.Random(record.seed), through=through)


class _Tag(torch.autograd.Function):
    """A step as the grading process builds it, to find its place in the order: its value."""

    @staticmethod
    def forward(ctx, tensor, value):
        return value.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("the grading process never runs a hand graph backward")
