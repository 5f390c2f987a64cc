"""Lesson 11 (an engine of your own): what the grader observes of each answer.

The engine works on plain Python floats, so torch cannot differentiate anything an answer is
handed, and no exercise here needs a rule read from the answer's code:

- Exercises 2 and 3 receive graphs of the grader's own nodes (`lesson_11.Node`): numbers, parents
  and local derivatives drawn at grading time, with no function behind them, so there is nothing
  to evaluate twice (no finite difference) and nothing torch recorded. Exercise 3 also receives
  the order, the order the nodes were made in, so it is observed apart from Exercise 2. Nothing
  here walks a graph, which is Exercise 2's task: an order is reported as data
  (`grader.probing.node_listing`) and judged outside (`grader.judging.node_listings`).
- Exercises 4 and 5 receive programs drawn at grading time (`lesson_11.DrawnProgram`), run on the
  submission's own `Value`. Their secrets are kept by the grading process, outside the
  submission (`grader.drawn_programs`): each input also feeds a constant computed from its value
  and recorded with no parents (slope 0.56 to 1.5 in size near the drawn point), and some steps
  are nodes of a drawn function of one number, made as Values of the value and local derivative
  the grading process gives. Each is asked once per run, and the runs are counted there: one per
  gradient asked for. The reference's engine, like torch with `detach()`, leaves the constants
  out; a finite difference of the program takes their slope in, so it misses every derivative
  by 0.56 or more, far past the tolerance (1e-5 + 1e-4 relative); and no answer can evaluate the
  program, or a drawn node, at a second point: only the local derivatives recorded in the graph
  lead to the reference's numbers. (One that copies the graph into torch, as a sum of parents
  times local derivatives, and calls `backward()` there, runs the same chain rule through the
  same recorded numbers; the values alone cannot tell it apart.)
"""

import random

import torch

from grader.lesson_checks.lesson_11 import DrawnProgram, is_input, random_graph
from grader.probing import node_listing

# How the exercises ask their answers to be worked out, read from the answers' code in the grading
# process (grader.judging.how): the engine is the student's own, in plain Python. Code that reaches
# for torch (local derivatives asked of torch.autograd, a graph copied into torch and backward()
# called there) is flagged for the instructor; the values are graded as for every test.
HOW = {
    "test_operations": {
        "sub": ["without torch"],
        "div": ["without torch"],
        "power": ["without torch"],
        "exp": ["without torch"],
        "log": ["without torch"],
        "tanh": ["without torch"],
        "relu": ["without torch"],
    },
    "test_topological_order": {"topological_order": ["without torch"]},
    "test_backward": {"backward": ["without torch"]},
    "test_gradients": {"gradients": ["without torch"]},
    "test_descend": {"descend": ["without torch"]},
}


def _rng(draw):
    """A generator for the graph builders, seeded from the draw: the same in both processes."""
    return random.Random(draw.integer(0, 2**31))


def test_operations(student, observe, draw):
    """Each operation on Values drawn here, and sub and div on a number and a Value (as in
    `2.0 - c`), which as_value turns into a Value with no parents (section 1)."""
    value = student.Value
    size = [draw.number(0.3, 2.0) for _ in range(5)]
    a, b = value(size[0]), value(-size[1])  # a positive, b negative
    c, d = value(size[2]), value(draw.choice([-1, 1]) * size[3])
    zero = value(0.0)  # the corner of relu, where its local derivative is 0, as worded
    k = draw.choice([-1.5, -0.5, 0.5, 1.5, 2.5])
    cases = [  # shown, operation, arguments, inputs (what the parents must be)
        ("sub(b, a)", student.sub, (b, a), (b, a)),
        ("sub(c, d)", student.sub, (c, d), (c, d)),
        (f"sub({size[4]}, d)", student.sub, (size[4], d), (size[4], d)),
        ("div(a, b)", student.div, (a, b), (a, b)),
        ("div(d, c)", student.div, (d, c), (d, c)),
        (f"div({size[4]}, b)", student.div, (size[4], b), (size[4], b)),
        (f"power(c, {k})", student.power, (c, k), (c,)),
        ("power(b, 3)", student.power, (b, 3), (b,)),
        ("power(0, 2)", student.power, (zero, 2), (zero,)),
        ("exp(d)", student.exp, (d,), (d,)),
        ("log(c)", student.log, (c,), (c,)),
        ("tanh(d)", student.tanh, (d,), (d,)),
        ("relu(a)", student.relu, (a,), (a,)),
        ("relu(b)", student.relu, (b,), (b,)),
        ("relu(0)", student.relu, (zero,), (zero,)),
    ]
    for shown, operation, args, inputs in cases:
        result = operation(*args)
        observe(f"{shown}.data", result.data)
        observe(f"{shown}.local_grads", list(result.local_grads))
        parents = list(result.parents)
        observe(
            f"{shown}.parents are its inputs, in order",
            len(parents) == len(inputs)
            and all(is_input(p, x) for p, x in zip(parents, inputs, strict=False)),
        )


def test_topological_order(student, observe, draw):
    """The deep graph (a recursive walk goes 2000 calls deep or more) comes last, and only after
    orders with no fault seen on the others: an answer that keeps no record of visited nodes
    lists a node once per path, and there are exponentially many paths in a deep graph with
    shared nodes."""
    rng = _rng(draw)
    graphs = [("a small drawn graph", 3, rng.randint(6, 9), 0)]
    graphs += [("a larger drawn graph", 4, rng.randint(15, 25), 0)]
    graphs += [("a drawn graph as deep as a chain", 2, rng.randint(2600, 4000), 3)]
    for name, leaves, steps, reach in graphs:
        output = random_graph(rng, leaves=leaves, steps=steps, reach=reach)[1]
        listing = node_listing(student.topological_order(output), output, _parents)
        observe(f"{name}: the order", listing, nodes="order", inputs_first=True)
        if _plainly_wrong(listing):
            return


def _parents(node) -> list:
    parents = getattr(node, "parents", ())
    return list(parents) if isinstance(parents, list | tuple) else []


def _plainly_wrong(listing) -> bool:
    """Whether a listing repeats a node, leaves out a parent or lists one late: only to stop
    before the deep graph (the judge decides, outside)."""
    if not isinstance(listing, list):
        return True
    return any(
        first != i or any(j < 0 or j > i for j in inputs)
        for i, (_, first, inputs) in enumerate(listing[1])
    )


def test_backward(student, observe, draw):
    rng = _rng(draw)
    for name, leaves, steps in [("graph 1", 2, rng.randint(5, 8)), ("graph 2", 3, 12)]:
        nodes, output = random_graph(rng, leaves=leaves, steps=steps)
        student.backward(output, list(nodes))  # the order they were made in: parents first
        observe(f"drawn {name}: every node's grad, in the order they were made", [
            n.grad for n in nodes
        ])  # fmt: skip


def test_gradients(student, observe, draw):
    rng = _rng(draw)
    for i in range(3):
        xs = [rng.uniform(-1.5, 1.5) for _ in range(rng.randint(2, 4))]
        program = DrawnProgram(rng, xs, steps=rng.randint(6, 10))
        secrets = draw.program(program.count, program.nodes, runs=1)
        result = student.gradients(program.on_values(student.Value, secrets=secrets), list(xs))
        observe(f"gradients(drawn function {i + 1}, xs)", result)


def test_descend(student, observe, draw):
    rng = _rng(draw)
    for i in range(2):
        xs = [rng.uniform(-1.0, 1.0) for _ in range(rng.randint(2, 3))]
        program = DrawnProgram(rng, xs, steps=6)
        tensors = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
        program.on_tensors()(*tensors).backward()  # only to size the steps: lr = 0.2 / (1 + |g|)
        lr = 0.2 / (1.0 + max(abs(t.grad.item()) for t in tensors))
        steps = rng.randint(2, 4)
        secrets = draw.program(program.count, program.nodes, runs=steps)  # once per step
        f = program.on_values(student.Value, secrets=secrets)
        result = student.descend(f, list(xs), lr, steps)
        observe(f"descend(drawn function {i + 1}, xs, {lr:.4f}, {steps})", result)
