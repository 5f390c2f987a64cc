"""Lesson 11's visible checks: the operations, `topological_order`, `backward`, `gradients` and
`descend`; and the graphs and functions the probes and hidden tests hand them.

The engine the lesson builds works on plain Python floats. The graphs here are made of the
grader's own `Node` (Exercises 2 and 3: values, parents and local derivatives drawn as numbers,
with no function behind them) or, for Exercises 4 and 5, of the student's `Value` class, run by a
program drawn at random (`DrawnProgram`): its nodes hold numbers that `math` computed, one of its
operations at least (softplus) is a node the grader makes itself, and every input also feeds a
*constant* node, a number computed from the input's value and recorded with no parents (what
`detach()` does in torch). Torch cannot differentiate any of it, and a finite difference of the
program sees the constants change where the chain rule, like autograd, leaves them out. In
grading, the constants and the nodes made here come from the grading process instead, asked once
per run (`grader.drawn_programs`).
"""

import math

from grader.checks import CheckFailed, require

__all__ = [
    "DrawnProgram",
    "Limited",
    "Node",
    "backward_case",
    "check_descent",
    "check_gradients",
    "check_operation",
    "check_order",
    "check_backward",
    "constant_from",
    "descend_case",
    "descend_function",
    "gradients_case",
    "gradients_function",
    "is_input",
    "random_graph",
]


class Node:
    """A node of a graph the grader builds: a number, the nodes it was computed from, and the
    derivative of this node with respect to each of them. No operation, no function behind it."""

    def __init__(self, data, parents=(), local_grads=()):
        self.data = data
        self.grad = 0.0
        self.parents = tuple(parents)
        self.local_grads = tuple(local_grads)

    def __repr__(self):
        return f"Node(data={self.data:.4g}, grad={self.grad:.4g})"


def random_graph(rng, *, leaves: int = 3, steps: int = 8, reach: int = 0, make=Node):
    """(nodes in the order they were made, output): `leaves` leaves, then `steps` nodes, each made
    from the node made just before it and, now and then, another node: the next unused leaf
    first, then the same node again (as in `a * a`) or any earlier node. So every node reaches
    the output, shared nodes are reached along paths of different lengths, and some node lists
    the same parent twice. With `reach`, the other node is one of the last `reach` made, so the
    graph stays as deep as a chain: a depth-first walk from the output goes at least
    steps / reach nodes deep. Values and local derivatives are drawn from `rng`."""
    nodes = [make(rng.uniform(-2.0, 2.0)) for _ in range(leaves)]
    previous = nodes[0]
    for step in range(steps):
        if step + 1 < leaves:
            parents = [previous, nodes[step + 1]]
        elif rng.random() < 0.25:
            parents = [previous]
        elif rng.random() < 0.3:
            parents = [previous, previous]
        else:
            parents = [previous, rng.choice(nodes[-reach:] if reach else nodes)]
        rng.shuffle(parents)
        local = [rng.choice([-1, 1]) * rng.uniform(0.5, 1.5) for _ in parents]
        previous = make(rng.uniform(-2.0, 2.0), parents, local)
        nodes.append(previous)
    return nodes, previous


def order_faults(order, output) -> dict:
    """What is wrong with `order` as a topological order of the output's graph, counted and read
    from the order alone: the graph is not walked here (that is the exercise), only followed from
    the output through the nodes `order` lists. Entries the output does not depend on that way,
    nodes listed more than once, nodes a listed node was computed from that are not listed, and
    nodes listed before one of their parents."""
    place: dict[int, int] = {}
    for i, node in enumerate(order):
        place.setdefault(id(node), i)
    reached, todo, unlisted, early = {id(output)}, [output], set(), 0
    while todo:
        node = todo.pop()
        parents = _parents(node)
        if id(node) in place and any(place.get(id(p), -1) > place[id(node)] for p in parents):
            early += 1
        for parent in parents:
            if id(parent) not in place:
                unlisted.add(id(parent))
            elif id(parent) not in reached:
                reached.add(id(parent))
                todo.append(parent)
    return {
        "foreign": sum(1 for node in order if id(node) not in reached),
        "repeated": sum(1 for node in order if id(node) in reached) - len(reached & set(place)),
        "missing": len(unlisted) + (id(output) not in place),
        "early": early,
    }


def _parents(node) -> tuple:
    parents = getattr(node, "parents", ())
    return tuple(parents) if isinstance(parents, list | tuple) else ()


# Exercise 1 · Local derivatives


def _number(value) -> bool:
    return type(value) in (int, float)


def _near(actual, expected, tol: float = 1e-6) -> bool:
    return abs(actual - expected) <= tol * max(1.0, abs(expected))


def is_input(parent, given) -> bool:
    """Whether `parent` is the input `given`: that Value itself or, for a number, a Value that
    holds it and has no parents (what `as_value` makes of it)."""
    if _number(given):
        return getattr(parent, "data", None) == given and not tuple(getattr(parent, "parents", ()))
    return parent is given


def check_operation(result, shown, inputs, data, local_grads, mistakes=None) -> None:
    """Check what an operation returned: a Value of the lesson's kind whose data is `data`, whose
    parents are `inputs` (a number among them: a Value holding it) and whose local_grads are
    `local_grads`; `mistakes`: the local_grads of each typical mistake, by explanation."""
    require(
        all(hasattr(result, a) for a in ("data", "parents", "local_grads")),
        f"{shown} returned {result!r}: it should return a new Value, made with "
        "Value(data, parents, local_grads) (section 1).",
    )
    require(
        _number(result.data),
        f"{shown}.data is {result.data!r}: the data of a Value is a Python float (section 1).",
    )
    require(
        _near(result.data, data),
        f"{shown}.data is {result.data:.6g}, but the operation's value is {data:.6g}.",
    )
    parents = tuple(result.parents) if isinstance(result.parents, list | tuple) else None
    numbers = any(_number(i) for i in inputs)
    require(
        parents is not None
        and len(parents) == len(inputs)
        and all(is_input(p, i) for p, i in zip(parents, inputs, strict=True)),
        f"{shown}.parents should be the {len(inputs)} Value(s) it was computed from, "
        f"{tuple(inputs)!r}, in the order the operation takes them"
        + (", a number turned into a Value with as_value" if numbers else "")
        + " (section 1).",
    )
    grads = tuple(result.local_grads) if isinstance(result.local_grads, list | tuple) else None
    require(
        grads is not None and len(grads) == len(inputs) and all(_number(g) for g in grads),
        f"{shown}.local_grads is {result.local_grads!r}: it should hold one number (a float) "
        "per parent, the derivative of the result with respect to that parent (section 1).",
    )
    if all(_near(g, w) for g, w in zip(grads, local_grads, strict=True)):
        return
    for why, wrong in (mistakes or {}).items():
        if all(_near(g, w) for g, w in zip(grads, wrong, strict=True)):
            raise CheckFailed(f"{shown}.local_grads is {grads}: {why}")
    raise CheckFailed(
        f"{shown}.local_grads is {grads}, but the derivatives of the result with respect to "
        f"its parents are {tuple(local_grads)} (section 2)."
    )


# Exercise 2 · A topological order at any depth

DEEP = (
    "A recursive walk goes one call deeper for each node on the longest path, and Python stops "
    "it at its recursion limit (section 4): keep the nodes still to visit in a list of your "
    "own instead of in the call stack."
)


def check_order(order, output, shown) -> None:
    """Check that `order` lists every node of the output's graph once, each after all the nodes
    it was computed from."""
    require(
        isinstance(order, list | tuple),
        f"{shown} returned {type(order).__name__}, not a list of the graph's nodes.",
    )
    faults = order_faults(order, output)
    if faults["early"] and not order_faults(list(order)[::-1], output)["early"]:
        raise CheckFailed(
            f"{shown} lists the output first and the leaves last. The order asked for lists "
            "each node after the nodes it was computed from, so the output comes last; backward "
            "walks it from the end (section 4)."
        )
    require(
        not faults["missing"],
        f"{shown} misses {faults['missing']} node(s) that the nodes it lists were computed from: "
        "every node the output depends on belongs in the order, the output and the leaves "
        "included (section 4).",
    )
    require(
        not faults["foreign"],
        f"{shown} lists {faults['foreign']} entries that are not nodes of the graph: list the "
        "nodes themselves (section 4).",
    )
    require(
        not faults["repeated"],
        f"{shown} lists {faults['repeated']} node(s) more than once: a node reached along "
        "several paths (a shared node) belongs in the order once (section 4).",
    )
    require(
        not faults["early"],
        f"{shown} lists {faults['early']} node(s) before a node they were computed from: a node "
        "goes in only after all its parents are in (section 4).",
    )


# Exercise 3 · backward


def check_backward(grads, expected, shown, mistakes=None) -> None:
    """Check the .grad of each node, `grads` (a dict name -> value), against `expected`;
    `mistakes`: the .grad values each typical mistake leaves, by explanation."""
    names = list(expected)
    got = [grads[n] for n in names]
    require(
        all(_number(g) for g in got),
        f"after {shown}, the nodes' .grad are {got}: each should be a number (a float).",
    )
    if all(_near(g, expected[n]) for g, n in zip(got, names, strict=True)):
        return
    listed = ", ".join(f"{n}.grad = {g:.6g}" for n, g in zip(names, got, strict=True))
    for why, wrong in (mistakes or {}).items():
        if all(_near(g, w) for g, w in zip(got, wrong, strict=True)):
            raise CheckFailed(f"after {shown}: {listed}. {why}")
    wanted = ", ".join(f"{n}.grad = {expected[n]:.6g}" for n in names)
    raise CheckFailed(f"after {shown}: {listed}, but the chain rule gives {wanted} (section 3).")


# Exercises 4 and 5 · the engine on drawn programs


class Limited:
    """A function that runs `runs` times at most, once per list of gradients an engine needs, so
    that no answer evaluates it again at other points (a finite difference); shown as `name`.
    For the visible tests, whose verdict is the student's own; in grading, the runs are counted
    by the grading process, outside the answer's reach (`grader.drawn_programs`)."""

    __slots__ = ("_call", "_name")

    def __init__(self, fn, runs: int, name: str = "f"):
        left = [runs]

        def call(*args):
            if left[0] <= 0:
                raise TypeError(
                    f"{name} runs {runs} time(s) here, once per list of gradients: run it once "
                    "on Values and walk the graph it records backward (sections 3 to 5)"
                )
            left[0] -= 1
            return fn(*args)

        self._call, self._name = call, name

    def __call__(self, *args):
        return self._call(*args)

    def __repr__(self):
        return self._name


def constant_from(value, fn):
    """A Value of value's own class holding fn(value.data), recorded with no parents: a number
    computed from value that the chain rule does not follow back, as torch's detach()."""
    return type(value)(fn(value.data))


def _softplus_node(value):
    """softplus(a) = log(1 + e^a) as one node made here, with its local derivative sigmoid(a),
    both computed so that no exponential overflows."""
    a = value.data
    small = math.exp(-abs(a))
    slope = 1.0 / (1.0 + small) if a >= 0 else small / (1.0 + small)
    return type(value)(max(a, 0.0) + math.log1p(small), (value,), (slope,))


class DrawnProgram:
    """A function of several numbers, drawn at random: a chain of operations (+, -, *, /, a power
    by a number, exp, log, tanh, relu, and softplus as a node made here, once at least), each on
    the node made just before and often another earlier one, so nodes are shared; plus, for each
    input, a constant computed from it (`constant_from`): a term whose slope the chain rule leaves
    out.

    `on_values(Value)` runs it on the student's Values; `on_tensors()` on torch tensors, the
    constants computed from the inputs detached (what a reference differentiates)."""

    def __init__(self, rng, xs, steps: int = 8):
        import torch

        self.count = len(xs)
        self.steps = []
        h, last = [torch.tensor(float(x), dtype=torch.float64) for x in xs], 0
        softplus = rng.randrange(self.count - 1, steps)  # one step at least is softplus
        for step in range(steps):
            other = step + 1 if step + 1 < self.count else rng.randrange(len(h))
            op = rng.choice(["add", "sub", "mul", "div"] if step + 1 < self.count else _OPS)
            op = "softplus" if step == softplus else op
            const = _constant(rng, op, h[last])
            made = _on_tensors(op, h[last], h[other], const)
            if not abs(float(made)) < 20.0:  # values kept moderate: tanh in place of a big one
                op, const = "tanh", None
                made = _on_tensors(op, h[last], h[other], const)
            self.steps.append((op, other, const))
            h.append(made)
            last = len(h) - 1
        self.shadows = []  # a sin(b x + c), with slope a b cos(b x + c) of 0.56 to 1.5 in size
        for x in xs:
            b, angle = rng.uniform(1.0, 2.0), rng.uniform(-0.8, 0.8) + rng.choice([0.0, math.pi])
            self.shadows.append((rng.uniform(0.8, 1.5) / b, b, angle - b * x))

    @property
    def nodes(self) -> int:
        """How many of its steps are a node made here (softplus, or a drawn one)."""
        return sum(op == "softplus" for op, _, _ in self.steps)

    def _run(self, inputs, constants, node):
        """The chain on `inputs`, each softplus step made by `node(i, a)`, plus `constants`."""
        h, last, made = list(inputs), 0, 0
        for op, other, const in self.steps:
            if op == "softplus":
                h.append(node(made, h[last]))
                made += 1
            else:
                h.append(_apply(op, h[last], h[other], const))
            last = len(h) - 1
        out = h[last]
        for constant in constants:
            out = out + constant
        return out

    def on_values(self, Value, runs: int | None = None, secrets=None):
        """The program as a function of Values: f(*values) returns a Value. With `runs`, it runs
        that many times at most (once per gradient an engine needs), so no answer can evaluate
        it again at other points: a finite difference is impossible, however its Values behave
        (one that hands every constant back as first made would otherwise hide their slope).

        In grading, `secrets` (`grader.drawn_programs.Program`, kept by the grading process and
        asked through a handle) give the constants and make its softplus steps drawn nodes of
        their own, each asked once per run, and count the runs: nothing in the answer's process
        can evaluate them at another point."""

        def drawn(*values):
            if len(values) != self.count or not all(isinstance(v, Value) for v in values):
                raise TypeError(f"this drawn function takes {self.count} Values")
            if secrets is None:
                constants = [
                    constant_from(x, lambda d, a=a, b=b, c=c: a * math.sin(b * d + c))
                    for x, (a, b, c) in zip(values, self.shadows, strict=True)
                ]
                return self._run(values, constants, lambda _, a: _softplus_node(a))
            numbers = secrets.run([float(v.data) for v in values])
            constants = [type(v)(number) for v, number in zip(values, numbers, strict=True)]
            return self._run(values, constants, lambda i, a: _drawn_node(secrets, i, a))

        return drawn if runs is None else Limited(drawn, runs, "the drawn function")

    def on_tensors(self):
        """The program on 0-d float64 tensors, the constants computed from detached inputs."""
        import torch

        def drawn(*tensors):
            constants = [
                a * torch.sin(b * x.detach() + c)
                for x, (a, b, c) in zip(tensors, self.shadows, strict=True)
            ]
            return self._run(tensors, constants, lambda _, a: torch.nn.functional.softplus(a))

        return drawn


def _on_tensors(op, a, b, const):
    """One step on tensors, softplus included."""
    import torch

    return torch.nn.functional.softplus(a) if op == "softplus" else _apply(op, a, b, const)


def _drawn_node(secrets, index: int, value):
    """A drawn node on `value`: a Value of its class, with the value and local derivative the
    secrets give at value.data."""
    made, slope = secrets.node(index, float(value.data))
    return type(value)(made, (value,), (slope,))


_OPS = ["add", "sub", "mul", "div", "power", "exp", "log", "tanh", "relu", "softplus"]


def _constant(rng, op, value):
    """The number an operation takes besides its inputs, drawn (for relu: so that its input is
    0.2 or more away from the kink at the drawn point)."""
    if op == "power":
        return rng.choice([2, 3, -1.5, -0.5, 0.5, 1.5])
    if op == "exp":
        return rng.choice([-1, 1]) * rng.uniform(0.5, 1.5)
    if op == "log":
        return rng.uniform(0.5, 1.5)
    if op == "relu":
        shift = rng.uniform(-0.5, 0.5)
        if abs(float(value) + shift) < 0.2:
            shift += 0.5 if float(value) + shift >= 0 else -0.5
        return shift
    return None


def _apply(op, a, b, const):
    """One step of a drawn program, on Values or on tensors alike."""
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / (b * b + 1.0)
    if op == "power":
        return a**const if isinstance(const, int) else (a * a + 0.5) ** const
    if op == "exp":
        return (a.tanh() * const).exp()
    if op == "log":
        return (a * a + const).log()
    if op == "tanh":
        return a.tanh()
    return (a + const).relu()


def check_gradients(result, expected, shown, mistakes=None, *, what=None) -> None:
    """Check a list of gradients, one per input, against `expected`; `mistakes`: the list each
    typical mistake returns, by explanation; `what`: what the expected numbers are."""
    require(
        isinstance(result, list | tuple)
        and len(result) == len(expected)
        and all(_number(r) for r in result),
        f"{shown} returned {result!r}: it should return a list of {len(expected)} numbers "
        "(floats), one per input.",
    )
    if all(_near(r, e, 1e-5) for r, e in zip(result, expected, strict=True)):
        return
    for why, wrong in (mistakes or {}).items():
        if all(_near(r, w, 1e-5) for r, w in zip(result, wrong, strict=True)):
            raise CheckFailed(f"{shown} returned {list(result)}: {why}")
    raise CheckFailed(
        f"{shown} returned {list(result)}, but "
        f"{what or 'the chain rule through the recorded local derivatives gives'} "
        f"{list(expected)}."
    )


def check_descent(result, expected, shown, mistakes=None) -> None:
    """Check where gradient descent ended, one number per input, against `expected`."""
    check_gradients(result, expected, shown, mistakes, what="gradient descent ends at")


# The visible tests' examples, each student's own (`grader.variants.examples.lesson_11`): the
# right answers and the answers the usual slips give, computed for the student's numbers.


def backward_case(x: float, y: float) -> tuple[dict, dict]:
    """Exercise 3's visible graph at x, y: a = x * y, s = a * a (a parent twice), out = s + x
    (x reached twice), walked in the order [x, y, a, s, out]. The right .grad of each node, by
    name, written out (back from out: s gets 1, a gets 2a, x gets 1 + y 2a, y gets x 2a); and
    the .grad values of x, y, a, s, out each usual slip leaves, by slip: `replaced` (each share
    stored with =, so a keeps one a and x only the share through a), `forward` (the order
    walked from the leaves: only out's parents get theirs), `one_share` (a parent listed twice
    handed one share: a gets a), `unstarted` (no gradient of 1 at out: nothing moves)."""
    a = x * y
    right = {"x": 1 + y * 2 * a, "y": x * 2 * a, "a": 2 * a, "s": 1.0, "out": 1.0}
    slips = {
        "replaced": [a * y, a * x, a, 1.0, 1.0],
        "forward": [1.0, 0.0, 0.0, 1.0, 1.0],
        "one_share": [1 + a * y, a * x, a, 1.0, 1.0],
        "unstarted": [0.0, 0.0, 0.0, 0.0, 0.0],
    }
    return right, slips


def gradients_function(k: float):
    """Exercise 4's visible function: a * e**(k b) + tanh(a - b) + sin(a), the sine recorded as a
    constant (`constant_from`); written with a Value's operations, so it runs on any Values."""

    def f(a, b):
        grows = b.exp() if k == 1 else (k * b).exp()
        return a * grows + (a - b).tanh() + constant_from(a, math.sin)

    f.__qualname__ = "f"
    return f


def gradients_case(a: float, b: float, k: float) -> tuple[list, dict]:
    """The gradients of `gradients_function(k)` at (a, b), by the chain rule; and what the usual
    slips return: `finite_difference` (the constant's slope cos(a) taken in) and `zero`."""
    slope = 1.0 - math.tanh(a - b) ** 2
    right = [math.exp(k * b) + slope, a * k * math.exp(k * b) - slope]
    slips = {"finite_difference": [right[0] + math.cos(a), right[1]], "zero": [0.0, 0.0]}
    return right, slips


def descend_function(c: float):
    """Exercise 5's visible function: (a - c)**2 + tanh(a b) + b**2 + cos(b), the cosine recorded
    as a constant (`constant_from`); written with a Value's operations."""

    def f(a, b):
        return (a - c) ** 2 + (a * b).tanh() + b**2 + constant_from(b, math.cos)

    f.__qualname__ = "f"
    return f


def descend_case(c: float, xs, lr: float, steps: int) -> tuple[list, dict]:
    """Where `steps` steps of gradient descent on `descend_function(c)` from xs, at learning rate
    lr, end; and where the usual slips end: `piled_up` (each step's gradients added to the
    earlier steps', as .grad does on Values kept from step to step), `uphill`,
    `finite_difference` (the constant's slope -sin(b) taken in) and `one_short` (a step fewer)."""

    def slopes(a, b, constant=False):
        slope = 1.0 - math.tanh(a * b) ** 2
        return [2.0 * (a - c) + b * slope, a * slope + 2.0 * b - (math.sin(b) if constant else 0)]

    def run(steps=steps, sign=-1.0, constant=False, pile=False) -> list[float]:
        point, held = list(xs), [0.0, 0.0]
        for _ in range(steps):
            grads = slopes(*point, constant)
            held = [h + g for h, g in zip(held, grads, strict=True)] if pile else grads
            point = [p + sign * lr * g for p, g in zip(point, held, strict=True)]
        return point

    slips = {
        "piled_up": run(pile=True),
        "uphill": run(sign=1.0),
        "finite_difference": run(constant=True),
        "one_short": run(steps=steps - 1),
    }
    return run(), slips
