"""Probes: what a test cell asks of the student's code, reported as plain data.

Each lesson has a `probes.py` beside its solution, with one function per test cell, named after
the cell's grade id: `test_x(student, observe, draw)`. At grading time the probe runs right after
its test cell twice, on the same inputs drawn from the run's seed: in the submission's process,
and in a clean process that ran the solution (`grader.judging.reference`). Both report
observations — values, never verdicts — and the grading process compares them
(`grader.judging.verdict`). A submission can change what its own process reports, but not the
reference, nor the comparison.
"""

import functools
import math
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy
import torch

from grader.autograd_use import watch_autograd
from grader.function_oracle import (  # noqa: F401 -- DRAWN re-exported
    DRAWN,
    IN_PROCESS,
    FunctionOracle,
    with_drawn,
)
from grader.random_graphs import RandomGraph, random_graph
from grader.remote_functions import RemoteFunctions
from grader.submission_seeds import functions_key, inputs_seed

DEFAULT_RTOL, DEFAULT_ATOL = 1e-4, 1e-5


class ProbeError(Exception):
    """The submission's answer could not be observed (missing name, unreportable value)."""


class Student:
    """The notebook's names, read as attributes: `student.make_leaf`."""

    def __init__(self, namespace: dict):
        self._namespace = namespace

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._namespace:
            raise ProbeError(f"{name} is not defined")
        return self._namespace[name]


class Draw:
    """Inputs chosen at grading time: the same in the submission and in the reference. Drawn
    functions come from `functions` (`grader.remote_functions.RemoteFunctions`): evaluated here,
    or in grading, by the grading process; the same handles either way."""

    def __init__(self, seed: int, grade_id: str, functions=None):
        self._random = random.Random(f"{seed}/{grade_id}")
        self._functions = functions or RemoteFunctions.here(f"{seed}")
        self._grade_id, self._drawn = grade_id, 0

    def _next(self) -> tuple[str, int]:
        self._drawn += 1
        return self._grade_id, self._drawn - 1

    def integer(self, low: int, high: int) -> int:
        """A whole number from low to high, both included."""
        return self._random.randint(low, high)

    def number(self, low: float, high: float, digits: int = 3) -> float:
        """A number between low and high, rounded so that it reads well in messages."""
        return round(self._random.uniform(low, high), digits)

    def chance(self) -> float:
        """A number between 0 and 1."""
        return self._random.random()

    def choice(self, options):
        """One of the options."""
        return self._random.choice(list(options))

    def graph(
        self,
        *,
        leaves: int = 3,
        size: int = 3,
        steps: int = 6,
        hand_only: bool = False,
        runs: int = 1,
    ) -> RandomGraph:
        """A random graph with shared nodes and paths of different lengths (`random_graphs`);
        `hand_only`: one whose steps the grading process owns (`grader.hand_graphs`), answered
        only in the graph's `order`, `runs` passes in all."""
        if hand_only:
            return self._functions.graph(
                *self._next(), leaves=leaves, size=size, steps=steps, runs=runs
            )
        return random_graph(self._random, leaves=leaves, size=size, steps=steps)

    def function(self, rows: int = 0) -> Callable:
        """A smooth elementwise function f(t) with a shadow autograd does not see
        (`drawn_functions`): only differentiating what it computes gives its gradient. With
        `rows`, it takes at most that many values at a time."""
        return self._functions.draw(*self._next(), "elementwise", rows=rows)[0]

    def convex_function(self) -> Callable:
        """Like `function`, with a second derivative that stays positive and moderate."""
        return self._functions.draw(*self._next(), "convex")[0]

    def function_of_two(self) -> Callable:
        """Like `function`, of two tensors: f(x, y)."""
        return self._functions.draw(*self._next(), "of_two")[0]

    def mixing_function(self, size: int) -> tuple[Callable, int]:
        """Like `function`, of a 1-D tensor, with outputs that mix its inputs; and their number."""
        return self._functions.draw(*self._next(), "mixing", size=size)

    def program(self, inputs: int, nodes: int, runs: int):
        """Lesson 11's secrets of a drawn program (`grader.drawn_programs.Program`)."""
        return self._functions.program(*self._next(), inputs, nodes, runs)

    def tensor(self, *shape, low=-2.0, high=2.0, dtype=torch.float32, requires_grad=False):
        """A tensor of the shape with values between low and high."""
        count = math.prod(shape)
        values = [self._random.uniform(low, high) for _ in range(count)]
        made = torch.tensor(values, dtype=dtype).reshape(shape)
        return made.requires_grad_(requires_grad)


def as_data(value):
    """`value` as JSON data: numbers, strings, booleans, None, lists; tensors as shape+values."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, numpy.generic):  # a NumPy scalar, such as np.float64(6.0) or np.sin(x)
        plain = value.item()
        if type(plain) in (bool, int, float, str):
            return plain
    if isinstance(value, torch.Tensor):
        flat = value.detach().to("cpu").reshape(-1)
        if flat.is_complex() or flat.dtype == torch.bool:
            flat = flat.to(torch.float64)
        return {"shape": list(value.shape), "values": flat.tolist()}
    if type(value) in (list, tuple):
        return [as_data(item) for item in value]
    raise ProbeError(f"a {type(value).__name__} cannot be reported")


class Observations:
    """The `observe` callable handed to a probe; keeps what it was shown, in order."""

    def __init__(self):
        self.items: list[list] = []

    def __call__(
        self,
        label: str,
        value,
        *,
        rtol=DEFAULT_RTOL,
        atol=DEFAULT_ATOL,
        one_of=(),
        nodes: str | None = None,
        inputs_first: bool = False,
    ):
        """Record `value` under `label`. The judge compares it with the solution's value, numbers
        within rtol/atol; with `one_of`, it must instead be one of those strings. With `nodes`
        ("order" or "map"), `value` is a `node_listing`, judged as a listing of the graph's
        nodes (`grader.judging.node_listings`): for an order, each node's inputs listed before
        it where `inputs_first`, after it otherwise."""
        rule = {"rtol": rtol, "atol": atol}
        if one_of:
            rule["one_of"] = sorted(one_of)
        if nodes:
            rule = {"nodes": nodes, "inputs_first": inputs_first}
        self.items.append([label, as_data(value), rule])


def node_listing(found, root, inputs: Callable) -> list | str:
    """An answer that lists the nodes of a graph (a list or tuple of them, or a dict keyed by
    them) as data: [where the root is listed, entries, the dict's values]. Each entry is [its
    type's name, the first entry that is the same node, where each of its inputs is first listed
    (-1: nowhere)], `inputs(node)` giving a node's inputs in order; where not listed, -1. Only
    what the answer lists is read: the graph is not walked here."""
    if isinstance(found, dict):
        keys, values = list(found), [_reported(v) for v in found.values()]
    elif isinstance(found, list | tuple):
        keys, values = list(found), None
    else:
        return type(found).__name__
    first: dict[int, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(id(key), i)
    entries = [
        [type(key).__name__, first[id(key)], [first.get(id(n), -1) for n in inputs(key)]]
        for key in keys
    ]
    return [first.get(id(root), -1), entries, values]


def autograd_inputs(node) -> list:
    """The nodes a grad_fn node sends gradients to, one per entry of next_functions."""
    return [child for child, _ in getattr(node, "next_functions", ()) if child is not None]


def _reported(value):
    try:
        return as_data(value)
    except ProbeError:
        return f"a {type(value).__name__}"


def number(value):
    """A one-element tensor as the number it holds; anything else unchanged."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    return value


def by_hand(fn, *args):
    """What `fn(*args)` returns with autograd switched off: an answer that calls autograd
    raises, and the probe records that error instead of a value."""
    with watch_autograd(forbid=True):
        return fn(*args)


def raised_messages(*actions) -> set[str]:
    """The messages of the RuntimeErrors that `actions` raise: the texts torch really prints."""
    messages = set()
    for action in actions:
        try:
            action()
        except RuntimeError as error:
            messages.add(str(error))
    return messages


def load_probes(source: str) -> dict:
    """The probe functions defined by a lesson's probes.py source."""
    module: dict = {"__name__": "probes"}
    exec(compiled_probes(source), module)
    return {name: fn for name, fn in module.items() if name.startswith("test_") and callable(fn)}


@functools.lru_cache(maxsize=32)
def compiled_probes(source: str):
    """A probes.py source compiled, once per process and source: the sandbox template compiles
    every lesson's, so that no submission's fork compiles them again."""
    return compile(source, "probes.py", "exec")


@dataclass(frozen=True)
class Drawing:
    """What a probe draws from in grading: the seed of its inputs (all the submission's process
    knows), and the grading process's drawn functions."""

    seed: int
    functions: RemoteFunctions


def run_probe(probes: dict, grade_id: str, namespace: dict, seed: "int | Drawing") -> list:
    """Run one probe against the notebook's names; a failure ends its list with an error item.
    The probe draws from the submission's `seed`, its functions evaluated here from the seed's
    key, and what it drew comes first (`with_drawn`); in grading, from a `Drawing`, and the
    grading process adds what it drew."""
    observe = Observations()
    oracle = None
    if not isinstance(seed, Drawing):
        oracle = FunctionOracle(functions_key(seed), IN_PROCESS)
        seed = Drawing(inputs_seed(seed), RemoteFunctions(oracle.answer, IN_PROCESS))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probes[grade_id](Student(namespace), observe, Draw(seed.seed, grade_id, seed.functions))
    except BaseException as error:  # the student's code failed: that is an observation too
        observe.items.append(["error", f"{type(error).__name__}: {error}"[:500]])
    return observe.items if oracle is None else with_drawn(observe.items, oracle, grade_id)
