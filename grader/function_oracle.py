"""Runs in the grading process: the drawn functions of one submission's run, evaluated here.

A probe in the submission's process asks for a drawn function and gets a handle
(`grader.remote_functions`); every value and derivative it, or the answer it is handed, asks of
that function is computed here, outside the sandbox, by torch on the function's own terms, and
only tensors go back. So no formula, coefficient or shadow of a drawn function is ever in the
submission's memory, and no count of how often it ran is kept there.

An application is a *spec*, a JSON tree over the function (`["f", handle]`): `["vjp", spec, n]`
(the spec's first n arguments, then one cotangent per output: the gradients, one per input),
`["jvp", spec, n]` (the first n arguments, then one tangent per input: the output tangents) and
`["vmap", spec, dims]` (each argument batched along its dim, or null). These compose as torch.func
composes them, so backward, double backward, forward mode, Hessians and vmap all reach here.
Every spec returns a list of tensors.

Lesson 6's hand graphs keep their steps here (`grader.hand_graphs`): each step's vector-Jacobian
product is answered only in the order the exercise hands over, once per pass, the passes counted.
Lesson 11's drawn programs keep their secrets here too (`grader.drawn_programs`): the number each
input feeds as a constant, and nodes of a drawn function of one number, each asked once per run,
and the runs counted here.

Whatever the submission sends is untrusted: each ask is checked for kind, size and depth, and a
bad one gets an error (the message a student reads), never an exception in the grading process.
A draw's settings (a function's row limit, a graph's or a program's number of runs) come from the
probe's ask, which the submission's process sends and could rewrite: the oracle answers it and
keeps a ledger of what each test drew with which settings (`drawn`), and the judge compares that
ledger with the one the reference's own run kept (`grader.judging.verdict`), so a draw asked with
other settings than the test's costs the test its points.
"""

import base64
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch

from grader.drawn_functions import KINDS, FunctionDraws
from grader.drawn_programs import Program
from grader.hand_graphs import HandGraph

DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.int32,
        torch.int64,
    )
}
MAX_HANDLES = 256  # functions and programs drawn in one run
MAX_TENSORS = 32  # in one application
MAX_ELEMENTS = 1 << 18  # in one tensor
MAX_TOTAL = 1 << 20  # in the tensors of one application: an ask stays within the output budget
MAX_DEPTH = 6  # of a spec: a Hessian-vector product of a vmap is 4 deep


class Refused(Exception):
    """An ask the oracle does not answer: its message is what the student reads."""


class FunctionOracle:
    """One submission's drawn functions, from the key the grading process drew for it. Tensors
    come and go as `crossing` carries them: as JSON over the submission's pipes (`WIRE`), or
    handed over in this process (`IN_PROCESS`: the reference, a student's own notebook)."""

    def __init__(self, key: str, crossing: "Crossing | None" = None):
        self.crossing = crossing or WIRE
        self.draws = FunctionDraws(key)
        self.functions: list = []
        self.rows: list[int] = []  # each function's limit of values per call (0: none)
        self.programs: list[Program] = []
        self.graphs: list[HandGraph] = []
        self.drawn_once: set[tuple[str, int]] = set()  # programs and graphs: drawn by their test
        self.ledger: dict[str, list] = {}  # by test: [index, settings] of each draw answered

    def answer(self, ask: dict) -> dict:
        """The answer to one ask: its fields, or {"error": what the student reads}."""
        try:
            op = ask.get("op")
            if op == "draw":
                return self._draw(ask)
            if op == "apply":
                return {"tensors": [self.crossing.send(t) for t in self._apply(ask)]}
            if op == "program":
                return self._program(ask)
            if op == "run":
                return {"constants": self._the_program(ask).run(_numbers(ask.get("xs")))}
            if op == "graph":
                return self._graph(ask)
            if op == "step":
                return {"tensors": [self.crossing.send(self._step(ask))]}
            if op == "node":
                at = _numbers([ask.get("at")])[0]
                value, slope = self._the_program(ask).node(_integer(ask.get("node")), at)
                return {"value": value, "slope": slope}
            raise Refused("no such ask")
        except Refused as refused:
            return {"error": str(refused)[:500], "type": "TypeError"}
        except Exception as error:  # what torch says of the inputs it was sent, as it says it
            return {"error": str(error)[:500], "type": type(error).__name__}

    def drawn(self, test: str) -> list:
        """What `test` drew here, as [index, settings] pairs in the order they were asked."""
        return list(self.ledger.get(test, []))

    def _record(self, ask: dict, *names: str) -> None:
        settings = {name: ask.get(name) for name in ("op", *names)}
        self.ledger.setdefault(ask["test"], []).append(
            [ask["index"], json.dumps(settings, sort_keys=True)]
        )

    def _count(self) -> None:
        if len(self.functions) + len(self.programs) + len(self.graphs) >= MAX_HANDLES:
            raise Refused(f"no more than {MAX_HANDLES} drawn functions in one run")

    def _draw(self, ask: dict) -> dict:
        self._count()
        kind, test = ask.get("family"), ask.get("test")
        if kind not in KINDS or not isinstance(test, str) or len(test) > 200:
            raise Refused("no such drawn function")
        size, rows = _integer(ask.get("size", 0)), _integer(ask.get("rows", 0))
        if size > 64:
            raise Refused("no such drawn function")
        function, outputs = self.draws.draw(test, _integer(ask.get("index")), kind, size, rows)
        self.functions.append(function)
        self.rows.append(rows)
        self._record(ask, "family", "size", "rows")
        return {"handle": len(self.functions) - 1, "outputs": outputs}

    def _program(self, ask: dict) -> dict:
        self._count()
        test, index = ask.get("test"), _integer(ask.get("index"))
        inputs, nodes, runs = (_integer(ask.get(name)) for name in ("inputs", "nodes", "runs"))
        if not isinstance(test, str) or len(test) > 200 or max(inputs, nodes, runs) > 64:
            raise Refused("no such drawn program")
        self._once(test, index, "program")
        self.programs.append(self.draws.program(test, index, inputs, nodes, runs))
        self._record(ask, "inputs", "nodes", "runs")
        return {"handle": len(self.programs) - 1}

    def _once(self, test: str, index: int, what: str) -> None:
        """Its runs are counted once, for the whole run: a second draw is refused."""
        if (test, index) in self.drawn_once:
            raise Refused(f"a drawn {what} is drawn once, by the test that hands it over")
        self.drawn_once.add((test, index))

    def _graph(self, ask: dict) -> dict:
        self._count()
        test, index = ask.get("test"), _integer(ask.get("index"))
        leaves, size, steps, runs = (
            _integer(ask.get(name)) for name in ("leaves", "size", "steps", "runs")
        )
        if not isinstance(test, str) or len(test) > 200 or not 1 <= leaves <= steps <= 16:
            raise Refused("no such drawn graph")
        if not 1 <= size <= 8 or not 1 <= runs <= 16:
            raise Refused("no such drawn graph")
        self._once(test, index, "graph")
        graph = self.draws.hand_graph(test, index, leaves, size, steps, runs)
        self.graphs.append(graph)
        self._record(ask, "leaves", "size", "steps", "runs")
        values = [self.crossing.send(value) for value in graph.values]
        return {
            "handle": len(self.graphs) - 1,
            "seed": graph.seed,
            "values": values,
            "order": graph.order,
        }

    def _step(self, ask: dict) -> torch.Tensor:
        handle = _integer(ask.get("handle"))
        if handle >= len(self.graphs):
            raise Refused("no such drawn graph")
        grad = self.crossing.take(ask.get("grad"))
        return self.graphs[handle].backward(_integer(ask.get("step")), grad)

    def _the_program(self, ask: dict) -> Program:
        handle = _integer(ask.get("handle"))
        if handle >= len(self.programs):
            raise Refused("no such drawn program")
        return self.programs[handle]

    def _apply(self, ask: dict) -> list[torch.Tensor]:
        tensors = ask.get("tensors")
        if not isinstance(tensors, list) or len(tensors) > MAX_TENSORS:
            raise Refused(f"a drawn function takes at most {MAX_TENSORS} tensors")
        function = self.build(ask.get("spec"), MAX_DEPTH)
        inputs = [self.crossing.take(t) for t in tensors]
        if sum(t.numel() for t in inputs) > MAX_TOTAL:
            raise Refused(f"a drawn function takes at most {MAX_TOTAL} values in one call")
        limit = self.rows[_innermost(ask["spec"])]
        _within(limit, inputs)  # a batch (vmap) counts whole, as one call
        with torch.enable_grad():
            out = function(*inputs)
        _within(limit, out)  # nested batches of two inputs multiply: the values made count
        return [t.detach() for t in out]

    def build(self, spec, depth: int):
        """The torch function a spec names, returning a tuple of tensors."""
        if not isinstance(spec, list) or not spec or depth <= 0:
            raise Refused("no such application of a drawn function")
        kind = spec[0]
        if kind == "f" and len(spec) == 2:
            handle = _integer(spec[1])
            if handle >= len(self.functions):
                raise Refused("no such drawn function")
            return partial(_of_one_shape, self.functions[handle])
        if len(spec) != 3:
            raise Refused("no such application of a drawn function")
        inner = self.build(spec[1], depth - 1)
        if kind == "vjp":
            return _vjp(inner, _integer(spec[2]))
        if kind == "jvp":
            return _jvp(inner, _integer(spec[2]))
        if kind == "vmap" and isinstance(spec[2], list):
            dims = tuple(None if d is None else _integer(d) for d in spec[2])
            return lambda *args: tuple(torch.func.vmap(inner, in_dims=dims)(*args))
        raise Refused("no such application of a drawn function")


def _within(limit: int, tensors) -> None:
    """Refuse a call of a function that takes at most `limit` values (0: any) at a time, where
    one of `tensors` (what it was given, or made) holds more."""
    largest = max((t.numel() for t in tensors), default=0)
    if limit and largest > limit:
        raise ValueError(
            f"this function takes at most {limit} values at a time, but it was given "
            f"{largest}: call it on one chunk at a time"
        )


def _innermost(spec) -> int:
    """The handle of the function a (checked) spec applies."""
    while spec[0] != "f":
        spec = spec[1]
    return spec[1]


def _of_one_shape(function, *inputs) -> tuple:
    """The function's value, on inputs of one shape: broadcast ones would let a few values sent
    ask for a product of their sizes here."""
    if len({tuple(given.shape) for given in inputs}) > 1:
        shapes = ", ".join(str(tuple(given.shape)) for given in inputs)
        raise Refused(f"this function takes tensors of one shape, not {shapes}")
    return (function(*inputs),)


def _vjp(inner, n: int):
    def vjp(*args):
        if torch._C._are_functorch_transforms_active() or not _all_float(args):
            _, pull = torch.func.vjp(inner, *args[:n])
            return tuple(pull(tuple(args[n:])))
        # Outside a transform, torch.autograd.grad gives the same numbers at less cost.
        nested = any(a.requires_grad for a in args)  # an outer vjp differentiates this one
        xs = [a if a.requires_grad else a.detach().requires_grad_() for a in args[:n]]
        return _grads(inner(*xs), xs, args[n:], nested)

    return vjp


def _grads(outputs, inputs, cotangents, nested: bool) -> tuple:
    return torch.autograd.grad(
        outputs, inputs, cotangents, create_graph=nested, allow_unused=True, materialize_grads=True
    )


def _all_float(tensors) -> bool:
    return all(t.is_floating_point() for t in tensors)


def _jvp(inner, n: int):
    """Jacobian-vector products from two reverse passes (J t is the vjp, at t, of the linear
    u -> J^T u): no forward-mode level is entered, so it runs inside a caller's own (the
    reference evaluates its drawn functions in the solution's process)."""

    def jvp(*args):
        if torch._C._are_functorch_transforms_active() or not _all_float(args):
            out, pull = torch.func.vjp(inner, *args[:n])
            _, pull_back = torch.func.vjp(lambda *u: pull(u), *(torch.zeros_like(o) for o in out))
            return tuple(pull_back(tuple(args[n:])))
        nested = any(a.requires_grad for a in args)
        xs = [a if a.requires_grad else a.detach().requires_grad_() for a in args[:n]]
        out = inner(*xs)
        us = [torch.zeros_like(o, requires_grad=True) for o in out]
        return _grads(_grads(out, xs, us, True), us, args[n:], nested)

    return jvp


def encode(tensor: torch.Tensor) -> dict:
    """A plain CPU tensor as JSON: its dtype, shape and bytes (base64), exactly."""
    source = tensor.detach().to("cpu").reshape(-1)
    flat = torch.empty(source.numel(), dtype=source.dtype).copy_(source)  # strides of 1, always
    data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    name = str(flat.dtype).removeprefix("torch.")
    return {"dtype": name, "shape": list(tensor.shape), "data": base64.b64encode(data).decode()}


def decode(encoded) -> torch.Tensor:
    """The tensor `encode` wrote, or Refused for anything else (a complex or oversized one)."""
    if not isinstance(encoded, dict) or not isinstance(encoded.get("data"), str):
        raise Refused("a drawn function takes real tensors")
    dtype, shape = encoded.get("dtype"), encoded.get("shape")
    dtype, count = _kind_and_count(dtype, shape)
    data = base64.b64decode(encoded["data"], validate=True)
    if len(data) != count * dtype.itemsize:
        raise Refused("a tensor's values do not match its shape")
    if not count:
        return torch.zeros(shape, dtype=dtype)
    made = torch.empty(shape, dtype=dtype)  # its own storage, not a view: changed in place freely
    made.view(-1).copy_(torch.frombuffer(bytearray(data), dtype=dtype))
    return made


def _kind_and_count(name, shape) -> tuple[torch.dtype, int]:
    """The dtype named `name` and the number of values of `shape`, or Refused for a tensor no
    drawn function takes (a complex, boolean or oversized one)."""
    dtype = DTYPES.get(name)
    if dtype is None:
        name = str(name)[:40]
        if "complex" in name:
            raise Refused("this function takes real tensors, not complex ones")
        raise Refused(f"this function takes tensors of numbers, not of {name}")
    if not isinstance(shape, list) or len(shape) > 16 or not all(_is_size(s) for s in shape):
        raise Refused("a drawn function takes tensors of a plain shape")
    count = math.prod(shape)
    if count > MAX_ELEMENTS:
        raise Refused(f"a drawn function takes at most {MAX_ELEMENTS} values per tensor")
    return dtype, count


def handed_over(tensor: torch.Tensor) -> torch.Tensor:
    """A tensor as `decode(encode(tensor))` gives it, without the JSON: the same values, dtype
    and shape, on the CPU, in storage of its own, and a plain tensor (a subclass's own code never
    runs on the other side, as `encode`'s bytes carry none)."""
    source = tensor.detach().to("cpu").reshape(-1)  # as `encode`: the same errors
    made = torch.empty(list(tensor.shape), dtype=source.dtype)
    made.view(-1).copy_(source)  # what copy_ returns may be the subclass: kept out
    return made


def taken(tensor) -> torch.Tensor:
    """A tensor `handed_over` made, or Refused for what `decode` refuses."""
    if type(tensor) is not torch.Tensor:  # `handed_over` makes plain ones only
        raise Refused("a drawn function takes real tensors")
    _kind_and_count(str(tensor.dtype).removeprefix("torch."), list(tensor.shape))
    return tensor


@dataclass(frozen=True)
class Crossing:
    """How tensors cross between the drawn functions' handles and their oracle: `send` on one
    side, `take` on the other (which refuses what no drawn function takes)."""

    send: Callable[[torch.Tensor], object]
    take: Callable[[object], torch.Tensor]


WIRE = Crossing(encode, decode)  # to and from the submission's process, as JSON
IN_PROCESS = Crossing(handed_over, taken)  # both sides in one process: copied, never encoded


def _is_size(value) -> bool:
    return type(value) is int and 0 <= value <= MAX_ELEMENTS


def _integer(value) -> int:
    if type(value) is not int or not 0 <= value < 1 << 31:
        raise Refused("a drawn function was asked with a number out of range")
    return value


def _numbers(values) -> list[float]:
    if not isinstance(values, list) or len(values) > 64:
        raise Refused("a drawn program takes a list of numbers")
    if not all(type(v) in (int, float) and math.isfinite(v) for v in values):
        raise Refused("a drawn program takes finite numbers")
    return [float(v) for v in values]


DRAWN = "the settings the test drew its functions with"  # the oracle's ledger, first of all


def with_drawn(items, oracle: FunctionOracle, grade_id: str):
    """A probe's observations with what the oracle answered its draws first: the judge compares
    the settings with those of the reference's draws (`grader.judging.verdict`)."""
    if not isinstance(items, list):  # a report that is no list of observations stays as it is
        return items
    return [[DRAWN, oracle.drawn(grade_id), {"drawn": True}], *items]
