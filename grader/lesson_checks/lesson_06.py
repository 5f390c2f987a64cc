"""Lesson 6's visible checks: `grads_by_hand`, `consumer_counts`, `topological_order`,
`manual_backward` and `gradient_at`.

Each `check_*` function takes the student's function (or what it returned) and an example, and
compares the result with the values it is given. Exercise 2's test cell writes its example out;
exercises 3 to 6 check graphs, whose nodes only exist once the graph is built, so their visible
examples are built here, in `check_*_on_examples`: the student's own example graph
(`grader.variants.examples.lesson_06`), with its values and those of the usual slips worked out
here, and fixed graphs of the lesson's sections with the values the cells used to show. The
hidden tests stay in the test cells.
"""

import torch

from grader.autograd_use import watch_autograd
from grader.checks import CheckFailed, call, call_shown, check_tensor, require
from grader.function_oracle import IN_PROCESS, FunctionOracle
from grader.hand_graphs import hand_graph_truth
from grader.remote_functions import RemoteFunctions
from grader.variants.examples.lesson_06 import COMBINE, MAKE_B, MAKE_Y, REDUCE, USE_Y
from grader.variants.families import times

# Exercise 2 · Two paths, by hand

ONE_PATH_BY_HAND = (
    "follows only the path through a * b. a also reaches h directly (the + {ka}): add both "
    "paths, dh/da = b + {k}."
)
NO_OUTER = "misses the outer factor d out/dh = {outer} (the derivative of {out})."


def _as_number(value):
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if hasattr(value, "item") and not isinstance(value, torch.Tensor):
        value = value.item()
    return value


def _near(value, wanted):
    return abs(value - wanted) <= 1e-4 * max(1.0, abs(wanted))


def check_grads_by_hand(result, a, b, task) -> None:
    """Check grads_by_hand(a, b)'s result against autograd's for the student's `task` (out =
    c h^2 with h = a b + k a: the task's `a` is k, its `b` is c), explaining the usual slips."""
    k, c = task.a, task.b
    want_a, want_b = task.derivative(a, b)
    h = a * b + k * a
    one_path = [2 * c * h * b]
    no_outer = [b + k, c * h * (b + k)]  # the outer factor 2ch, or its 2, left out
    said = {
        "ka": times(k, "a"),
        "k": k,
        "outer": times(2 * c, "h"),
        "out": "h**2" if c == 1 else f"{c} * h**2",
    }
    shown = f"grads_by_hand({a}, {b})"
    require(
        isinstance(result, list | tuple) and len(result) == 2,
        f"{shown} returned {result!r}; it should return a pair of numbers (d out/da, d out/db).",
    )
    da, db = (_as_number(v) for v in result)
    require(
        all(isinstance(v, int | float) and not isinstance(v, bool) for v in (da, db)),
        f"{shown} returned {result!r}; both entries should be numbers.",
    )
    if not (_near(da, want_a) and _near(db, want_b)):
        require(
            not (_near(da, want_b) and _near(db, want_a)),
            f"{shown} = ({da:.6g}, {db:.6g}): the two entries are swapped; return "
            "(d out/da, d out/db).",
        )
        mistakes = [(w, ONE_PATH_BY_HAND) for w in one_path] + [(w, NO_OUTER) for w in no_outer]
        for wrong, why in mistakes:
            require(not _near(da, wrong), f"{shown}: d out/da = {da:.6g} {why.format(**said)}")
    require(
        _near(da, want_a),
        f"{shown}: d out/da is {da:.6g}, but autograd says {want_a:.6g}. Multiply "
        "d out/dh by dh/da (chain rule).",
    )
    require(
        _near(db, want_b),
        f"{shown}: d out/db is {db:.6g}, but autograd says {want_b:.6g}. Multiply "
        "d out/dh by dh/db (chain rule).",
    )


# Exercise 3 · Count the consumers

_COUNTING = {
    "distinct": (
        "counts distinct consumers, but a node such as y * y lists the same input twice and "
        "sends it two gradients: count every entry of next_functions, not every distinct "
        "consumer."
    ),
    "once": (
        "counts each node once, the first time the walk reaches it. Keep the nodes already "
        "visited only to decide whether to walk on from a node, and count every entry of "
        "next_functions, also one that points at a node visited before."
    ),
    "paths": (
        "counts the paths from the output to each node: the walk went on from a shared node "
        "once per path, so everything below it was counted again. Walk on from each node only "
        "the first time you reach it (keep the nodes already visited), and count every entry of "
        "next_functions."
    ),
}


def check_consumer_counts(
    consumer_counts, output, where, right, *, distinct=None, once=None, paths=None
) -> None:
    """Check consumer_counts(output) against `right` (node: count); `distinct`, `once` and
    `paths` give the counts each typical mistake gives where they differ from `right`."""
    given = {"distinct": distinct, "once": once, "paths": paths}
    mistakes = {kind: {**right, **g} for kind, g in given.items() if g is not None}
    counts = call(consumer_counts, output, name="consumer_counts")
    require(
        isinstance(counts, dict),
        f"consumer_counts({where}) returned a {type(counts).__name__}; it should return a dict "
        "that maps each node to a number.",
    )
    require(
        output.grad_fn in counts,
        f"consumer_counts({where}) has no entry for output.grad_fn: include it, with 0 "
        "(no node sends it a gradient).",
    )
    missing = [type(n).__name__ for n in right if n not in counts]
    require(
        not missing,
        f"consumer_counts({where}) has no entry for {', '.join(missing)}: include every node "
        "reachable through next_functions, the AccumulateGrad nodes too.",
    )
    require(
        len(counts) == len(right),
        f"consumer_counts({where}) has {len(counts)} entries, but the graph has "
        f"{len(right)} nodes: only nodes reachable from output.grad_fn belong in it.",
    )
    wrong = [n for n, want in right.items() if not (counts[n] == want and type(counts[n]) is int)]
    if not wrong:
        return
    for kind, mistaken in mistakes.items():
        require(
            any(counts[n] != mistaken[n] for n in right),
            f"consumer_counts({where}) {_COUNTING[kind]}",
        )
    node = wrong[0]
    require(
        False,
        f"consumer_counts({where}) gives {type(node).__name__} {counts[node]!r}, but it appears "
        f"{right[node]} times in the next_functions of the other nodes. Count every entry of "
        "next_functions that points to it.",
    )


# Exercise 4 · A topological order


def check_topological_order(topological_order, output, where, consumers) -> None:
    """Check topological_order(output, counts): `consumers` maps each node of the graph to the
    nodes that list it in next_functions, once per entry; counts are their numbers."""
    counts = {node: len(feeding) for node, feeding in consumers.items()}
    shown = f"topological_order({where}, counts)"
    order = call_shown(topological_order, output, counts, name="topological_order", shown=shown)
    require(
        isinstance(order, list | tuple),
        f"{shown} returned a {type(order).__name__}; it should return a list of nodes.",
    )
    strangers = [n for n in order if n not in consumers]
    require(
        not strangers,
        f"{shown} contains {strangers[:1]!r}, which is not a node of the graph: list the "
        "grad_fn nodes reachable from output.grad_fn through next_functions, not tensors or None.",
    )
    placed = set()
    for node in order:
        require(
            node not in placed,
            f"{type(node).__name__} appears more than once in {shown}: list each node once "
            "(remember the nodes already placed).",
        )
        placed.add(node)
    missing = [n for n in consumers if n not in placed]
    names = ", ".join(sorted(type(n).__name__ for n in missing))
    require(
        not missing or not all(hasattr(n, "variable") for n in missing),
        f"{shown} misses {names}: list every node reachable through next_functions, the "
        "AccumulateGrad nodes included.",
    )
    for node in missing:
        listed, distinct = len(consumers[node]), len(set(consumers[node]))
        require(
            listed == distinct,
            f"{shown} misses {type(node).__name__}, which is listed {listed} times in "
            f"next_functions but by {distinct} distinct node(s) (a node such as y * y lists "
            f"its input twice): counts[node] is {listed}, so count down once per entry of "
            "next_functions, not once per distinct consumer.",
        )
    require(
        not missing,
        f"{shown} misses {names}: list every node reachable through next_functions. Start "
        "from output.grad_fn; each time you place a node, count down for each entry of its "
        "next_functions, and place a node when its count reaches 0.",
    )
    position = {node: i for i, node in enumerate(order)}
    for node, feeding in consumers.items():
        late = [c for c in feeding if position[c] > position[node]]
        if late:
            raise CheckFailed(
                f"{shown} puts {type(node).__name__} at position {position[node]}, before "
                f"{type(late[0]).__name__} at position {position[late[0]]}, which sends it a "
                "gradient: a node must come after all of its consumers. Place a node only once "
                "every node that lists it in next_functions has been placed: counts[node] "
                "entries in all."
            )


# Exercise 5 · Your own backward()

ONE_PATH = (
    "a shared node got the gradient of one path only. Where several gradients reach the same "
    "node (and the same output of it), add them; do not keep just the last one."
)
TOO_EARLY = (
    "a node ran before all its consumers had sent it their gradients. Call the nodes in the "
    "order you are given, each once: every node in it comes after all of its consumers."
)
_PER_PATH = (
    "the AccumulateGrad node of a leaf was called {calls} times: manual_backward followed "
    "every path separately and called nodes once per path. The numbers may come out right, "
    "but the engine runs each node once, on everything it received (sections 6 and 8)."
)
_PER_OUTPUT = (
    "a node with several outputs (such as UnbindBackward0 or SplitBackward0, made by unbind, "
    "split or chunk) takes one gradient per output, in output order, and the entries of "
    "next_functions say which output each gradient is for (section 7)."
)
_ENGINE = (
    "manual_backward called backward() or torch.autograd.grad, so PyTorch's engine did the "
    "walk, whereas the exercise asks for the walk by hand (section 8)."
)
REPLACED = "manual_backward replaced what .grad held; backward() adds to it (section 4)."


def run_manual_backward(manual_backward, output, order, where) -> None:
    """Call manual_backward(output, order); fail if it errs or lets autograd do the walk."""
    shown = f"manual_backward({where}, order)"
    with watch_autograd() as calls:
        try:
            call_shown(manual_backward, output, order, name="manual_backward", shown=shown)
        except CheckFailed as failure:
            if "TypeError: expected" in str(failure) and "arguments, got" in str(failure):
                raise CheckFailed(f"{shown} is wrong: {_PER_OUTPUT}") from None
            raise
    require(not calls, _ENGINE)


def run_counted(manual_backward, leaves, output, order, where) -> None:
    """manual_backward(output, order); check that each leaf got a .grad, its node called once."""
    calls = [0] * len(leaves)
    for i, leaf in enumerate(leaves):
        leaf.register_post_accumulate_grad_hook(lambda _, i=i: calls.__setitem__(i, calls[i] + 1))
    run_manual_backward(manual_backward, output, order, where)
    for i, leaf in enumerate(leaves):
        require(
            leaf.grad is not None,
            f"after manual_backward({where}, order), leaf {i}'s .grad is None: nothing was "
            "delivered to it. A leaf's .grad is filled only when its AccumulateGrad node is "
            "called on the gradient that reached it (sections 4 and 8).",
        )
    require(
        max(calls) <= 1,
        f"manual_backward({where}, order): " + _PER_PATH.format(calls=max(calls)),
    )


def check_manual_backward(
    manual_backward, leaf, output, order, where, right, *, name="x", one_path=None, too_early=None
) -> None:
    """Check the leaf's .grad after manual_backward(output, order) against `right`; `one_path`
    and `too_early` are what each typical mistake gives."""
    run_counted(manual_backward, [leaf], output, order, where)
    given = {ONE_PATH: one_path, TOO_EARLY: too_early}
    check_tensor(
        leaf.grad,
        right,
        f"{name}.grad after manual_backward({where}, order)",
        atol=1e-5,
        mistakes={why: wrong for why, wrong in given.items() if wrong is not None},
    )


def check_manual_backward_adds(manual_backward, x, output, order, where, right, replaced) -> None:
    """Check x.grad, which held ones before manual_backward(output, order), against `right`;
    `replaced` is what replacing .grad instead of adding to it gives."""
    run_manual_backward(manual_backward, output, order, where)
    check_tensor(
        x.grad,
        right,
        f"x.grad, which held ones before manual_backward({where}, order)",
        atol=1e-5,
        mistakes={REPLACED: replaced},
    )


# Exercise 6 · The gradient that reaches one node

_SOME_PATHS = (
    "{shown} is the gradient along some of the paths only: {count} gradients reach the node. "
    "Add them all: take the nodes in the order you are given and return what the node has "
    "received when its turn comes."
)
SENDS_ON = (
    "that is what tensor's node sends on to its inputs. Return the gradient that reaches the "
    "node, before calling it."
)
OTHER_OUTPUT = (
    "that is the gradient of another output of tensor's node. The node made several tensors; "
    "tensor.output_nr says which of its outputs tensor is: return what reached that output."
)
ALL_OUTPUTS = (
    "that is the sum of the gradients of all the outputs of tensor's node. Keep them apart, "
    "per output index, and return the one of tensor's output, tensor.output_nr."
)


def call_gradient_at(gradient_at, output, tensor, order, shown):
    """gradient_at(output, tensor, order), checked to walk the graph itself and return
    something."""
    with watch_autograd() as calls:
        got = call_shown(gradient_at, output, tensor, order, name="gradient_at", shown=shown)
    require(
        not calls,
        "gradient_at called backward() or torch.autograd.grad, so PyTorch's engine did the "
        "walk, whereas the exercise asks for the walk by hand, as in manual_backward (section 8).",
    )
    require(
        got is not None,
        f"{shown} returned None: return the sum of the gradients that reached "
        "tensor.grad_fn, once all of its consumers have run.",
    )
    return got


def check_some_paths(got, want, partial_sums, count, shown) -> None:
    """Fail if `got` is one of the partial sums of the `count` gradients that reach the node."""
    if isinstance(got, torch.Tensor) and got.shape == want.shape:
        for some in partial_sums:
            require(
                not torch.allclose(got, some, atol=1e-5) or torch.allclose(got, want, atol=1e-5),
                _SOME_PATHS.format(shown=shown, count=count),
            )


def check_gradient_at(
    gradient_at,
    output,
    tensor,
    order,
    shown,
    right,
    *,
    count,
    partial_sums,
    sends_on=None,
    other_output=None,
    all_outputs=None,
) -> None:
    """Check gradient_at(output, tensor, order) against `right`, the sum of the `count`
    gradients that reach the node; the other arguments are what typical mistakes give."""
    got = call_gradient_at(gradient_at, output, tensor, order, shown)
    check_some_paths(got, right, partial_sums, count, shown)
    given = {SENDS_ON: sends_on, OTHER_OUTPUT: other_output, ALL_OUTPUTS: all_outputs}
    mistakes = {why: wrong for why, wrong in given.items() if wrong is not None}
    check_tensor(got, right, shown, atol=1e-5, mistakes=mistakes)


# The visible examples of exercises 3 to 6: each test cell calls one function below, which builds
# the example graphs afresh and checks the student's function on them with their values, worked
# out by hand in the comments. Nothing hidden is here: these are the examples the cells show.


def _section_1(grad=None):
    """Section 1's graph: out = (y * y * 3).mean() with y = x + 2, x = ones(2, 2)."""
    x = torch.ones(2, 2, requires_grad=True)
    if grad is not None:
        x.grad = grad
    y = x + 2
    yy = y * y
    z = yy * 3
    out = z.mean()
    accumulate = y.grad_fn.next_functions[0][0]  # x's AccumulateGrad node
    order = [out.grad_fn, z.grad_fn, yy.grad_fn, y.grad_fn, accumulate]
    return x, y, yy, z, out, accumulate, order


def two_uses_graph(examples):
    """Exercises 3 and 4's graph of one's own (`examples`: a TwoUses, or the Task that reads
    one): out = (left <combine> right).<reduce>() with y made from x = ones(2, 2); and each of
    its nodes with the nodes that list it in next_functions, once per entry, as it was built
    (y's node is listed once or twice by each of its two consumers)."""
    x = torch.ones(2, 2, requires_grad=True)
    y = MAKE_Y[examples.make_y][1](x)
    (_, left_times, left_op), (_, right_times, right_op) = (
        USE_Y[examples.left],
        USE_Y[examples.right],
    )
    left, right = left_op(y), right_op(y)
    combined = COMBINE[examples.combine][1](left, right)
    out = REDUCE[examples.reduce][1](combined)
    consumers = {
        out.grad_fn: [],
        combined.grad_fn: [out.grad_fn],
        left.grad_fn: [combined.grad_fn],
        right.grad_fn: [combined.grad_fn],
        y.grad_fn: [left.grad_fn] * left_times + [right.grad_fn] * right_times,
        y.grad_fn.next_functions[0][0]: [y.grad_fn],  # x's AccumulateGrad node
    }
    return out, consumers


def consumer_count_slips(consumers: dict) -> tuple[dict, dict]:
    """The right consumer counts of a graph (`consumers`: each node with the nodes that list
    it, as two_uses_graph gives them), and, where they differ from them, the counts each usual
    slip gives (check_consumer_counts's `distinct`, `once`, `paths`)."""
    paths: dict = {}

    def path_count(node):  # the paths from the output to `node`
        if node not in paths:
            paths[node] = sum(path_count(c) for c in consumers[node]) or 1
        return paths[node]

    right = {node: len(feeding) for node, feeding in consumers.items()}
    slips = {
        "distinct": {node: len(set(feeding)) for node, feeding in consumers.items()},
        "once": {node: min(1, len(feeding)) for node, feeding in consumers.items()},
        "paths": {node: path_count(node) if f else 0 for node, f in consumers.items()},
    }
    slips = {kind: {n: v for n, v in got.items() if v != right[n]} for kind, got in slips.items()}
    return right, {kind: got for kind, got in slips.items() if got}


def diamond_graph(examples):
    """Exercises 5 and 6's graph of one's own (`examples`: a Diamond, or the Task that reads
    one): a = k * x, b made from a, out = a * b, and the order of its nodes."""
    x = torch.tensor(float(examples.at), requires_grad=True)
    a = examples.k * x
    b = MAKE_B[examples.make_b][1](a)
    out = a * b
    order = [out.grad_fn, b.grad_fn, a.grad_fn, a.grad_fn.next_functions[0][0]]
    return x, a, out, order


def _a_times_a_plus_1():
    """out = a * (a + 1) with a = 3x, at x = 2."""
    x = torch.tensor(2.0, requires_grad=True)
    a = 3 * x
    b = a + 1
    out = a * b
    order = [out.grad_fn, b.grad_fn, a.grad_fn, a.grad_fn.next_functions[0][0]]
    return x, a, b, out, order


def check_consumer_counts_on_examples(consumer_counts, examples) -> None:
    """Check consumer_counts on the student's own graph (`examples`, as two_uses_graph takes
    it) and on section 1's out."""
    # y's node is listed once or twice by each of its two consumers (twice by a node such as
    # y * y), so it receives 3 or 4 gradients from 2 distinct consumers. Counting distinct
    # consumers gives it 2, counting each node once gives it 1, and counting paths from the
    # output gives x's AccumulateGrad node 3 or 4.
    out, consumers = two_uses_graph(examples)
    right, slips = consumer_count_slips(consumers)
    check_consumer_counts(consumer_counts, out, examples.where, right, **slips)
    # Section 1's out = (y * y * 3).mean(): y * y lists y's node twice.
    _, y, yy, z, out, accumulate, _ = _section_1()
    check_consumer_counts(
        consumer_counts,
        out,
        "section 1's out",
        {out.grad_fn: 0, z.grad_fn: 1, yy.grad_fn: 1, y.grad_fn: 2, accumulate: 1},
        distinct={y.grad_fn: 1},
        paths={accumulate: 2},
    )


def check_topological_order_on_examples(topological_order, examples) -> None:
    """Check topological_order on section 1's out, the student's own graph (`examples`, as
    two_uses_graph takes it) and out = a * (a + 1)."""
    # Each node with the nodes that list it in next_functions, read off by hand (a node that
    # lists it twice appears twice).
    _, y, yy, z, out, accumulate, _ = _section_1()
    check_topological_order(
        topological_order,
        out,
        "section 1's out",
        {
            out.grad_fn: [],
            z.grad_fn: [out.grad_fn],
            yy.grad_fn: [z.grad_fn],
            y.grad_fn: [yy.grad_fn, yy.grad_fn],
            accumulate: [y.grad_fn],
        },
    )
    # The student's own graph: its nodes' consumers, as it was built.
    out, consumers = two_uses_graph(examples)
    check_topological_order(topological_order, out, examples.where, consumers)
    _, a, b, out, _ = _a_times_a_plus_1()
    check_topological_order(
        topological_order,
        out,
        "out = a * (a + 1)",
        {
            out.grad_fn: [],
            b.grad_fn: [out.grad_fn],
            a.grad_fn: [out.grad_fn, b.grad_fn],
            a.grad_fn.next_functions[0][0]: [a.grad_fn],
        },
    )


def _drawn_graph(runs: int):
    """A graph drawn as the tests draw theirs (`grader.hand_graphs`), its steps answered here,
    and the same graph with its steps differentiable: the gradients a walk must give."""
    oracle = FunctionOracle("an example drawn graph", IN_PROCESS)
    graph = RemoteFunctions(oracle.answer, IN_PROCESS).graph(
        "example", 0, leaves=3, size=3, steps=6, runs=runs
    )
    return graph, hand_graph_truth(oracle.graphs[0])


def check_manual_backward_on_examples(manual_backward, examples) -> None:
    """Check manual_backward on the student's own diamond (`examples`, as diamond_graph takes
    it), section 1's out (with and without a .grad already held), graphs made by unbind and
    chunk, and a graph drawn as the tests draw theirs."""
    # a = k * x, b made from a, out = a * b: a's node receives b from out's node (`direct`) and
    # a * db/da from b's node (`through_b`), so backward() gives x.grad = k * (the sum).
    # Keeping one path only (the last to arrive, through b) gives k * through_b; running a's
    # node before both its consumers have sent theirs gives k * direct. Today's class-wide
    # example, out = a * (a + 1) with a = 3x at x = 2: 39, 18 and 21.
    x, _, out, order = diamond_graph(examples)
    check_manual_backward(
        manual_backward,
        x,
        out,
        order,
        examples.where,
        torch.tensor(float(examples.x_grad)),
        one_path=torch.tensor(float(examples.k * examples.through_b)),
        too_early=torch.tensor(float(examples.k * examples.direct)),
    )
    # Section 1's out = mean(3 (x + 2)**2) at x = ones(2, 2): backward() gives 4.5 everywhere;
    # y * y sends y's node two gradients, and one of them alone gives 2.25.
    x, _, _, _, out, _, order = _section_1()
    check_manual_backward(
        manual_backward,
        x,
        out,
        order,
        "section 1's out",
        torch.full((2, 2), 4.5),
        one_path=torch.full((2, 2), 2.25),
    )
    # The same, with x.grad holding ones before: backward() adds, so x.grad becomes 5.5.
    x, _, _, _, out, _, order = _section_1(grad=torch.ones(2, 2))
    check_manual_backward_adds(
        manual_backward,
        x,
        out,
        order,
        "section 1's out",
        torch.full((2, 2), 5.5),
        replaced=torch.full((2, 2), 4.5),
    )
    # p, q = v.unbind() at v = (2, 3), out = p * q: one node, UnbindBackward0, made both p and
    # q; backward() gives v.grad = (q, p) = (3, 2).
    v = torch.tensor([2.0, 3.0], requires_grad=True)
    p, q = v.unbind()
    out = p * q
    order = [out.grad_fn, p.grad_fn, p.grad_fn.next_functions[0][0]]
    check_manual_backward(
        manual_backward,
        v,
        out,
        order,
        "out = p * q with p, q = v.unbind()",
        torch.tensor([3.0, 2.0]),
        name="v",
    )
    # a, b = v.chunk(2) at v = (0, 1, 2, 3), out = (a * 2 + b * 3).sum(): backward() gives
    # v.grad = (2, 2, 3, 3).
    v = torch.arange(4.0, requires_grad=True)
    a, b = v.chunk(2)
    a2, b3 = a * 2, b * 3
    out = (a2 + b3).sum()
    plus = out.grad_fn.next_functions[0][0]
    split = a.grad_fn  # SplitBackward0, the node that made both a and b
    order = [out.grad_fn, plus, b3.grad_fn, a2.grad_fn, split, split.next_functions[0][0]]
    check_manual_backward(
        manual_backward,
        v,
        out,
        order,
        "out = (a * 2 + b * 3).sum() with a, b = v.chunk(2)",
        torch.tensor([2.0, 2.0, 3.0, 3.0]),
        name="v",
    )
    # A drawn graph: its own nodes (_DrawnStepBackward) answer only in the order handed over.
    graph, truth = _drawn_graph(runs=1)
    truth.output.backward()
    run_manual_backward(manual_backward, graph.output, list(graph.order), "a drawn graph")
    for i, (leaf, true) in enumerate(zip(graph.leaves, truth.leaves, strict=True)):
        check_tensor(
            leaf.grad,
            true.grad,
            f"x{i}.grad after manual_backward(a drawn graph, order)",
            atol=1e-4,
        )


def check_gradient_at_on_examples(gradient_at, examples) -> None:
    """Check gradient_at on the student's own diamond (`examples`, as diamond_graph takes it),
    section 1's out and out = p * q * q with p, q = v.unbind()."""
    # a = k * x, b made from a, out = a * b: out's node sends a the gradient b (`direct`), b's
    # node sends it a * db/da (`through_b`), and gradient_at(out, a, order) is their sum; a's
    # node would send k times it on to x. Today's class-wide example, out = a * (a + 1) with
    # a = 3x at x = 2 (a = 6, b = 7): 7 + 6 = 13, and 39 sent on.
    _, a, out, order = diamond_graph(examples)
    check_gradient_at(
        gradient_at,
        out,
        a,
        order,
        f"gradient_at(out, a, order) for {examples.where}",
        torch.tensor(float(examples.at_a)),
        count=2,
        partial_sums=[
            torch.tensor(float(examples.direct)),
            torch.tensor(float(examples.through_b)),
        ],
        sends_on=torch.tensor(float(examples.x_grad)),
    )
    # Section 1's out = mean(3 y**2) with y = x + 2 = 3: y * y sends y's node two gradients of
    # 2.25, and gradient_at(out, y, order) is 4.5 everywhere.
    _, y, _, _, out, _, order = _section_1()
    check_gradient_at(
        gradient_at,
        out,
        y,
        order,
        "gradient_at(out, y, order) for section 1's out",
        torch.full((2, 2), 4.5),
        count=2,
        partial_sums=[torch.full((2, 2), 2.25)],
    )
    # p, q = v.unbind() at v = (2, 3), out = p * q * q: q is output 1 of UnbindBackward0 and
    # receives p * q from each of its two uses, 6 + 6 = 12; p, output 0, receives q * q = 9.
    v = torch.tensor([2.0, 3.0], requires_grad=True)
    p, q = v.unbind()
    pq = p * q
    out = pq * q
    order = [out.grad_fn, pq.grad_fn, q.grad_fn, q.grad_fn.next_functions[0][0]]
    check_gradient_at(
        gradient_at,
        out,
        q,
        order,
        "gradient_at(out, q, order) for out = p * q * q with p, q = v.unbind()",
        torch.tensor(12.0),
        count=2,
        partial_sums=[torch.tensor(6.0)],
        other_output=torch.tensor(9.0),
        all_outputs=torch.tensor(21.0),
    )
    # A drawn graph: its own nodes (_DrawnStepBackward) answer only in the order handed over.
    graph, truth = _drawn_graph(runs=1)
    (want,) = torch.autograd.grad(truth.output, truth.intermediates[0])
    shown = "gradient_at(output, h0, order) for a drawn graph"
    got = call_gradient_at(
        gradient_at, graph.output, graph.intermediates[0], list(graph.order), shown
    )
    check_tensor(got, want, shown, atol=1e-4)
