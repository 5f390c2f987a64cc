"""How many times an answer calls a function it is given, or autograd, read from its source.

Runs in the grading process. A probe counts the calls in the submission's process too, with a
counter the submission could reach; this reading is the evidence it cannot change. A function's
calls of a callee come to one of:

- NEVER, ONCE, SEVERAL (a fixed number above one, along one path through the code);
- IN_A_LOOP: in a `for` or `while` loop, a comprehension or a recursion, as often as it runs;
- None: the source cannot say (the callee is handed to code it cannot read, such as `map`).

Branches count as their busiest arm; a helper of the notebook (or of the function) counts with
everything it calls, wherever it is called. The judge holds an answer to what the solution does:
one call where the solution makes one, calls in a loop where the solution loops.
"""

import ast
import functools
from typing import NamedTuple

from grader.judging import gradient_flow

NEVER, ONCE, SEVERAL, IN_A_LOOP = 0, 1, 2, 3
AUTOGRAD = "autograd"  # backward(), torch.autograd.grad, a torch.func transform applied
DEPTH = 4  # helpers called from helpers
COMPUTING = {"backward", "grad", "jacobian", "hessian", "vjp", "vhp", "hvp"}
TRANSFORMS = {"grad", "jacrev", "grad_and_value", "jacobian", "hessian", "vjp"}
LOOPS = ast.For | ast.AsyncFor | ast.While
TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))  # try/except* since Python 3.11
COMPREHENSIONS = ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
FUNCTIONS = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
SHOWN = {NEVER: "never", ONCE: "once", SEVERAL: "more than once", IN_A_LOOP: "in a loop"}


class Paths(NamedTuple):
    """The most calls along the paths that go on past a statement, and along those that end in
    it (`return`, `raise`, `break`, `continue`); None where there are no such paths."""

    going: int | None
    ended: int | None


class Unreadable(Exception):
    """The callee goes where the reading cannot follow it."""


def calls(function: ast.AST, callee: str | int, bindings: dict) -> int | None:
    """How `function` (a def or lambda) calls `callee`: AUTOGRAD, or the position of one of its
    parameters. None when the source cannot say."""
    names = gradient_flow.parameter_names(function)
    if isinstance(callee, int) and callee >= len(names):
        return None
    target = callee if callee == AUTOGRAD else names[callee]
    reading = _Reading(bindings, gradient_flow.autograd_names(bindings))
    try:
        return reading.function(function, target, ())
    except (Unreadable, RecursionError):
        return None


def problem(expected: int, found: int | None, what: str) -> str | None:
    """Why calling `what` `found` times breaks the solution's `expected`, or None."""
    if found is None or found == expected:
        return None
    if expected == ONCE and found in (SEVERAL, IN_A_LOOP):
        return f"the exercise asks for one call of {what}, but the code calls it {SHOWN[found]}"
    if expected == IN_A_LOOP and found in (ONCE, SEVERAL):
        return (
            f"the exercise asks for a call of {what} for each part, but the code calls it "
            f"{SHOWN[found]}, whatever the number of parts: call it inside the loop"
        )
    return None


class _Reading:
    def __init__(self, bindings: dict, autograd: dict[str, str]):
        self.bindings = bindings
        self.autograd = autograd

    def function(self, function: ast.AST, callee: str, stack: tuple, outer=None) -> int:
        """The calls of `callee` a call of `function` makes; `stack`: the functions being read;
        `outer`: the functions the enclosing function defines, which this one sees too."""
        if function in stack:
            return IN_A_LOOP  # a recursion repeats whatever it calls
        if len(stack) > DEPTH:
            raise Unreadable
        stack = (*stack, function)
        local = {**(outer or {}), **_local_functions(function)}
        if isinstance(function, ast.Lambda):
            return self.expression(function.body, callee, local, stack)
        return _most(self.block(function.body, callee, local, stack))

    def block(self, statements: list, callee: str, local: dict, stack: tuple) -> Paths:
        paths = Paths(NEVER, None)
        for statement in statements:
            paths = _then(paths, self.statement(statement, callee, local, stack))
            if paths.going is None:
                break  # what follows never runs
        return paths

    def statement(self, node: ast.AST, callee: str, local: dict, stack: tuple) -> Paths:
        """The calls along the paths through `node` that go on after it, and that end in it."""
        if isinstance(node, FUNCTIONS | ast.ClassDef):
            decorators = [self.expression(d, callee, local, stack) for d in node.decorator_list]
            return Paths(_sum(decorators), None)  # a def runs nothing until it is called
        if isinstance(node, ast.If):
            test = self.expression(node.test, callee, local, stack)
            arms = [self.block(arm, callee, local, stack) for arm in (node.body, node.orelse)]
            return _then(Paths(test, None), _either(arms))
        if isinstance(node, LOOPS):
            head = node.iter if isinstance(node, ast.For | ast.AsyncFor) else node.test
            once = self.expression(head, callee, local, stack)
            body = _most(self.block(node.body, callee, local, stack))
            rest = self.block(node.orelse, callee, local, stack)
            return _then(Paths(_add(once, _looped(body)), None), rest)
        if isinstance(node, TRIES):  # the body, or a handler instead of what it left undone
            tried = _then(
                self.block(node.body, callee, local, stack),
                self.block(node.orelse, callee, local, stack),
            )
            handlers = [self.block(h.body, callee, local, stack) for h in node.handlers]
            return _then(
                _either([tried, *handlers]), self.block(node.finalbody, callee, local, stack)
            )
        if isinstance(node, ast.With | ast.AsyncWith):
            heads = [self.expression(i.context_expr, callee, local, stack) for i in node.items]
            return _then(Paths(_sum(heads), None), self.block(node.body, callee, local, stack))
        if isinstance(node, ast.Match):
            subject = self.expression(node.subject, callee, local, stack)
            arms = [self.block(case.body, callee, local, stack) for case in node.cases]
            return _then(Paths(subject, None), _either([*arms, Paths(NEVER, None)]))
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            if isinstance(node.value, ast.Lambda):
                return Paths(NEVER, None)  # a named lambda: followed where it is called
            parts = [node.value] if node.value else []
        else:
            parts = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        amount = _sum(self.expression(part, callee, local, stack) for part in parts)
        if isinstance(node, ast.Return | ast.Raise | ast.Break | ast.Continue):
            return Paths(None, amount)
        return Paths(amount, None)

    def expression(self, node: ast.AST, callee: str, local: dict, stack: tuple) -> int:
        if isinstance(node, COMPREHENSIONS):
            parts = [node.elt] if hasattr(node, "elt") else [node.key, node.value]
            first = self.expression(node.generators[0].iter, callee, local, stack)
            inner = [g.iter for g in node.generators[1:]]
            inner += [condition for g in node.generators for condition in g.ifs]
            each = _sum(self.expression(p, callee, local, stack) for p in parts + inner)
            return _add(first, _looped(each))
        if isinstance(node, ast.IfExp):
            test = self.expression(node.test, callee, local, stack)
            arms = [self.expression(arm, callee, local, stack) for arm in (node.body, node.orelse)]
            return _add(test, max(arms))
        if isinstance(node, ast.Lambda | ast.Name):
            self._handed_on(node, callee, local, stack)
            return NEVER
        if not isinstance(node, ast.Call):
            parts = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
            return _sum(self.expression(part, callee, local, stack) for part in parts)
        total, parent, func = self.call(node, callee, local, stack), node, node.func
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if isinstance(func, ast.Call) and self._is_autograd(func.func):  # transform(f)(x)
            parent = func
            arguments += [*func.args, *(k.value for k in func.keywords)]
        elif not isinstance(func, ast.Name | ast.Lambda):
            arguments.append(func)  # t.backward: t; make()(x): make()
        for argument in arguments:
            total = _add(total, self._argument(argument, parent, callee, local, stack))
        return total

    def _handed_on(self, node: ast.AST, callee: str, local: dict, stack: tuple) -> None:
        """A function handed on as a value (`map(f, xs)`, `map(step, chunks)`) runs as often as
        the code it goes to decides: unreadable, when it calls the callee."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id == callee:
                raise Unreadable
            node = local.get(node.id) or gradient_flow.defined(node.id, self.bindings)
        if isinstance(node, FUNCTIONS) and self.function(node, callee, stack, local) != NEVER:
            raise Unreadable

    def _argument(self, child, parent, callee, local, stack) -> int:
        """A part of an expression; a function handed to autograd (`torch.func.grad(lambda …)`,
        `jacobian(f, x)`) runs once, where autograd is called."""
        handed = isinstance(parent, ast.Call) and self._is_autograd(parent.func)
        if isinstance(child, ast.Name) and child.id == callee:
            if handed:
                return ONCE
            if isinstance(parent, ast.Call) and self._helper(parent.func, local):
                return NEVER  # read inside the helper, under its name there
        function = local.get(child.id) if isinstance(child, ast.Name) else child
        if handed and isinstance(function, FUNCTIONS):
            return self.function(function, callee, stack, local)
        return self.expression(child, callee, local, stack)

    def call(self, node: ast.Call, callee: str, local: dict, stack: tuple) -> int:
        """The calls this call itself makes (its arguments are read apart)."""
        func = node.func
        if isinstance(func, ast.Name) and func.id == callee:
            return ONCE
        if callee == AUTOGRAD and self._computes_gradients(func):
            return ONCE
        if isinstance(func, ast.Call):
            return NEVER  # make()(x): what make() returns is not read
        helper = self._helper(func, local)
        if helper is None:
            return NEVER
        if callee != AUTOGRAD:  # the callee handed to a helper, under its own name there
            names, given = gradient_flow.parameter_names(helper), _handed(node, callee)
            if given:
                inner = [names[i] for i in given if isinstance(i, int) and i < len(names)]
                inner += [i for i in given if isinstance(i, str) and i in names]
                if len(inner) != len(given):
                    raise Unreadable
                return _sum(self.function(helper, name, stack, local) for name in inner)
            if callee in gradient_flow.parameter_names(helper) or _rebinds(helper, callee):
                return NEVER  # the name means something else in there
        return self.function(helper, callee, stack, local)

    def _helper(self, func: ast.AST, local: dict) -> ast.AST | None:
        if isinstance(func, ast.Lambda):
            return func
        if not isinstance(func, ast.Name):
            return None
        return local.get(func.id) or gradient_flow.defined(func.id, self.bindings)

    def _is_autograd(self, func: ast.AST) -> bool:
        if isinstance(func, ast.Name):
            return func.id in self.autograd
        return gradient_flow.is_autograd_path(func)

    def _computes_gradients(self, func: ast.AST) -> bool:
        """`t.backward()`, `torch.autograd.grad(…)`, `torch.func.grad(f)(x)`, `g(x)` for a g
        the notebook imported as an autograd function that computes."""
        if isinstance(func, ast.Attribute) and func.attr == "backward":
            return True
        if isinstance(func, ast.Call):  # a transform, applied
            return self._is_autograd(func.func) and _name(func.func) in TRANSFORMS
        if self._is_autograd(func):
            return self.autograd.get(_name(func), _name(func)) in COMPUTING
        return False


def _local_functions(function: ast.AST) -> dict[str, ast.AST]:
    """The functions defined inside `function`, and lambdas it names, by name."""
    found = {}
    for node in ast.walk(function):
        if node is function:
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
            found.update({t.id: node.value for t in node.targets if isinstance(t, ast.Name)})
    return found


def _handed(call: ast.Call, callee: str) -> list[int | str]:
    """Where the call passes `callee` on: positions and keyword names."""
    at = [i for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id == callee]
    return at + [
        k.arg for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id == callee
    ]


@functools.lru_cache(maxsize=1024)
def _rebinds(function: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(function)
    )


def _name(func: ast.AST) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _then(first: Paths, second: Paths) -> Paths:
    """`first`, then `second` on the paths `first` goes on along."""
    if first.going is None:
        return first
    going = None if second.going is None else _add(first.going, second.going)
    ended = None if second.ended is None else _add(first.going, second.ended)
    return Paths(going, _max(first.ended, ended))


def _either(arms: list[Paths]) -> Paths:
    """One of the arms: the busiest of those that go on, and of those that end."""
    going, ended = None, None
    for arm in arms:
        going, ended = _max(going, arm.going), _max(ended, arm.ended)
    return Paths(going, ended)


def _most(paths: Paths) -> int:
    return _max(paths.going, paths.ended) or NEVER


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _add(a: int, b: int) -> int:
    if IN_A_LOOP in (a, b):
        return IN_A_LOOP
    return min(a + b, SEVERAL)


def _sum(amounts) -> int:
    total = NEVER
    for amount in amounts:
        total = _add(total, amount)
    return total


def _looped(amount: int) -> int:
    return IN_A_LOOP if amount else NEVER
