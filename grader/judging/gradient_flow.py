"""Where a "using autograd" answer's results come from, read from its source.

Each value the function computes gets an origin: *data* (its inputs, and copies of them),
*gradient* (what autograd returns: a `.grad`, `torch.autograd.grad`, `torch.func.grad(f)(x)`, a
hook's argument) or *hand* (computed from the data without autograd). A gradient may be scaled
by data as given (`lr * w.grad`, `w.grad / k`), clipped, cloned or stacked. What the rule refuses
is a result that autograd did not produce:

- a gradient combined with a value worked out by hand (`formula * x.grad`), so that autograd
  only supplies a factor;
- a returned value, an in-place update of an input, a `.grad` written, or a hook's result that
  holds no gradient (`return formula`, `w -= lr * formula`, `w.grad = formula`);
- a hand-made value given to autograd as the gradient to start from (`y.backward(formula)`).

Returns are held to it where the solution returns a gradient (the lesson says what to return).
The origins are flow-insensitive: a name holds every origin any of its assignments gives it.
"""

import ast
from collections.abc import Iterator

GRADIENT, DATA, HAND = "gradient", "data", "hand"
NOTHING: frozenset = frozenset()

GRADIENT_CALLS = {"grad", "jacobian", "hessian", "vjp", "jvp", "vhp", "hvp", "jacrev", "jacfwd"}
EMPTY_CALLS = {
    "ones_like", "zeros_like", "empty_like", "ones", "zeros", "empty", "len", "range", "size",
    "numel", "dim", "isinstance", "type", "print", "is_tensor",
}  # fmt: skip
COPYING_CALLS = {
    "clone", "detach", "detach_", "requires_grad_", "tensor", "as_tensor", "from_numpy", "float",
    "double", "half", "int", "to", "cpu", "contiguous", "view", "view_as", "reshape",
    "reshape_as", "flatten", "squeeze", "unsqueeze", "expand", "expand_as", "item", "tolist",
    "numpy", "list", "tuple", "stack", "cat", "chunk", "split", "unbind", "zip", "enumerate",
    "reversed", "t", "transpose", "permute", "retain_grad", "copy", "deepcopy",
}  # fmt: skip
BOOKKEEPING_CALLS = {"len", "int", "float", "abs", "min", "max", "round"}
EMPTY_ATTRIBUTES = {"shape", "dtype", "device", "ndim", "is_leaf", "requires_grad", "grad_fn"}
GROWING_METHODS = {"append", "extend", "insert", "add"}
NOT_WRITES = {"requires_grad_", "retain_grad", "detach_", "zero_"}
SEEDS = {"gradient", "grad_tensors", "grad_outputs"}
ROUNDS = 4  # values computed from values computed from …, until nothing changes
DEPTH = 3  # helper functions called from helper functions


def returns_gradient(function: ast.AST, bindings: dict) -> bool:
    """Whether every value `function` returns holds a gradient (read from the solution)."""
    flow = Flow(function, bindings, autograd_names(bindings))
    returned = list(flow.returned())
    return bool(returned) and all(GRADIENT in origin for _, origin in returned)


def hand_made(function: ast.AST, bindings: dict, must_return_gradient: bool) -> str | None:
    """Why the results of `function` (a def or lambda) are not autograd's, or None."""
    flow = Flow(function, bindings, autograd_names(bindings))
    flow.check()
    if must_return_gradient:
        for node, origin in flow.returned():
            if GRADIENT not in origin and origin:
                flow.problems.append(f"returns {_shown(node)}, which no gradient went into")
    return flow.problems[0] if flow.problems else None


def autograd_names(bindings: dict) -> set[str]:
    """The notebook's names for autograd's functions (`from torch.autograd import grad as g`)."""
    names = set(GRADIENT_CALLS)
    for statements in bindings.values():
        for statement in statements:
            if isinstance(statement, ast.ImportFrom) and "autograd" in (statement.module or ""):
                names |= {a.asname or a.name for a in statement.names}
            if isinstance(statement, ast.ImportFrom) and (statement.module or "") == "torch.func":
                names |= {a.asname or a.name for a in statement.names}
    return names


class Flow:
    """The origins of the values one function computes, and what it does with them."""

    def __init__(self, function, bindings, autograd, arguments=None, depth=0):
        self.function, self.bindings, self.autograd, self.depth = (
            function,
            bindings,
            autograd,
            depth,
        )
        self.problems: list[str] = []
        self.checking = False
        parameters = _parameters(function)
        given = arguments or [frozenset({DATA})] * len(parameters)
        self.env = {
            name: frozenset(origin) for name, origin in zip(parameters, given, strict=False)
        }
        for name in parameters[len(given) :]:
            self.env[name] = frozenset({DATA})
        for hook in self._hooks():
            for name in _parameters(hook):
                self.env[name] = frozenset({GRADIENT})
        self.leaves = self._leaves()
        for _ in range(ROUNDS):
            before = dict(self.env)
            for node in ast.walk(function):
                self._bind(node)
            if before == self.env:
                break

    # -- what the function does ---------------------------------------------------------------

    def returned(self) -> Iterator[tuple[ast.AST, frozenset]]:
        """Each value the function returns (each item of a returned tuple or list), with its
        origin."""
        values = (
            [self.function.body]
            if isinstance(self.function, ast.Lambda)
            else [node.value for node in _own_nodes(self.function) if isinstance(node, ast.Return)]
        )
        for value in filter(None, values):
            items = value.elts if isinstance(value, ast.Tuple | ast.List) else [value]
            for item in items:
                yield item, self.origin(item)

    def check(self) -> None:
        """Record every way the function's results do not come from autograd."""
        self.checking = True
        for node in ast.walk(self.function):
            if isinstance(node, ast.expr):
                self.origin(node)  # records gradients mixed with values worked out by hand
            if isinstance(node, ast.AugAssign):
                self._written(node.target, self._combined([node.target, node.value]))
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute | ast.Subscript):
                        self._written(target, self.origin(node.value))
            elif isinstance(node, ast.Call):
                self._seeded(node)
                method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
                if method.endswith("_") and method not in NOT_WRITES:
                    self._written(node.func.value, self._combined([node.func.value, *_args(node)]))
        for hook in self._hooks():
            for value in _returns(hook):
                origin = self.origin(value)
                if origin and GRADIENT not in origin:
                    self.problems.append(f"has a hook return {_shown(value)}, not the gradient")

    def _written(self, target: ast.AST, origin: frozenset) -> None:
        """A write into an input (or its `.grad`) must hold a gradient, unless it is a constant."""
        is_grad = isinstance(target, ast.Attribute) and target.attr in {"grad", "data"}
        root = _root_name(target)
        if not (is_grad or (root and self.env.get(root, NOTHING) & {DATA, GRADIENT})):
            return
        if origin and GRADIENT not in origin:
            self.problems.append(f"writes into {_shown(target)} a value no gradient went into")

    def _seeded(self, call: ast.Call) -> None:
        """The gradient autograd starts from must not be worked out by hand."""
        name = _called(call.func)
        seeds = [kw.value for kw in call.keywords if kw.arg in SEEDS]
        if name == "backward":  # tensor.backward(seed), torch.autograd.backward(tensor, seed)
            on_tensor = isinstance(call.func, ast.Attribute) and _called(call.func.value) not in {
                "autograd",
                "torch",
            }
            seeds += call.args[0:1] if on_tensor else call.args[1:2]
        if name == "grad" and len(call.args) > 2:
            seeds.append(call.args[2])
        for seed in seeds:
            if HAND in self.origin(seed):
                self.problems.append(f"starts autograd from {_shown(seed)}, worked out by hand")

    # -- origins ------------------------------------------------------------------------------

    def origin(self, node: ast.AST) -> frozenset:
        """Where the value of the expression `node` comes from."""
        if isinstance(node, ast.Name):
            return self.env.get(node.id, NOTHING)
        if isinstance(node, ast.Attribute):
            if node.attr == "grad":
                return frozenset({GRADIENT})
            return NOTHING if node.attr in EMPTY_ATTRIBUTES else self.origin(node.value)
        if isinstance(node, ast.Subscript | ast.Starred | ast.NamedExpr):
            return self.origin(node.value)
        if isinstance(node, ast.UnaryOp):
            return self.origin(node.operand)
        if isinstance(node, ast.BinOp):
            if self._bookkeeping(node):
                return frozenset({DATA})
            return self._combined([node.left, node.right])
        if isinstance(node, ast.Call):
            return self._called_origin(node)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return _union(self.origin(item) for item in node.elts)
        if isinstance(node, ast.Dict):
            return _union(self.origin(item) for item in node.values if item is not None)
        if isinstance(node, ast.IfExp):
            return self.origin(node.body) | self.origin(node.orelse)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            return self.origin(node.elt)
        return NOTHING  # constants, comparisons, functions, strings

    def _called_origin(self, call: ast.Call) -> frozenset:
        func = call.func
        name = _called(func)
        inner = _called(func.func) if isinstance(func, ast.Call) else None  # torch.func.grad(f)(x)
        if name in self.autograd or inner in self.autograd:
            return frozenset({GRADIENT})
        if isinstance(func, ast.Name) and GRADIENT in self.env.get(func.id, NOTHING):
            return frozenset({GRADIENT})  # slope = torch.func.grad(f); slope(x)
        if name in EMPTY_CALLS:
            return NOTHING
        receiver = [func.value] if isinstance(func, ast.Attribute) else []
        if name in COPYING_CALLS:
            return _union(self.origin(part) for part in [*receiver, *_args(call)])
        helper = self._helper(func)
        if helper is not None:
            return self._helper_origin(helper, call)
        return self._combined([*receiver, *_args(call)])

    def _combined(self, operands: list[ast.AST]) -> frozenset:
        """A value computed from `operands`: a gradient if one of them is, and then scaled only by
        data as given; else worked out by hand, if any data went into it."""
        origins = [self.origin(operand) for operand in operands]
        if not any(GRADIENT in origin for origin in origins):
            return frozenset({HAND}) if any(origins) else NOTHING
        for operand, origin in zip(operands, origins, strict=True):
            if HAND in origin and GRADIENT not in origin and self.checking:
                self.problems.append(
                    f"combines autograd's gradient with {_shown(operand)}, worked out by hand"
                )
        mixed = any(HAND in origin for origin in origins)
        return frozenset({GRADIENT, HAND}) if mixed else frozenset({GRADIENT})

    def _bookkeeping(self, node: ast.AST) -> bool:
        """Arithmetic on constants and on inputs that are not differentiated (`lr / k`)."""
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return self.env.get(node.id, NOTHING) <= {DATA} and node.id not in self.leaves
        if isinstance(node, ast.UnaryOp):
            return self._bookkeeping(node.operand)
        if isinstance(node, ast.BinOp):
            return self._bookkeeping(node.left) and self._bookkeeping(node.right)
        if isinstance(node, ast.Call) and _called(node.func) in BOOKKEEPING_CALLS:
            return isinstance(node.func, ast.Name) and all(map(self._bookkeeping, node.args))
        return False

    # -- names --------------------------------------------------------------------------------

    def _bind(self, node: ast.AST) -> None:
        """Give the names a statement binds the origin of the value it binds them to."""
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._assign(target, self.origin(node.value))
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            self._assign(node.target, self.origin(node.value))
        elif isinstance(node, ast.AugAssign):
            self._assign(node.target, self._combined([node.target, node.value]))
        elif isinstance(node, ast.For | ast.comprehension):
            self._assign(node.target, self.origin(node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._assign(node.optional_vars, self.origin(node.context_expr))
        elif isinstance(node, ast.Call) and self._is_optimizer(node.func):
            for name in {n.id for a in _args(node) for n in ast.walk(a) if isinstance(n, ast.Name)}:
                self.env[name] = self.env.get(name, NOTHING) | {GRADIENT}  # its step() updates them
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, node.func.value
            if method in GROWING_METHODS or (method.endswith("_") and method not in NOT_WRITES):
                self._assign(receiver, self._combined([receiver, *_args(node)]))

    def _is_optimizer(self, func: ast.AST) -> bool:
        """`torch.optim.SGD`, `optim.Adam`, or a name imported from torch.optim."""
        while isinstance(func, ast.Attribute):
            if func.attr == "optim":
                return True
            func = func.value
        if not isinstance(func, ast.Name):
            return False
        imports = [s for s in self.bindings.get(func.id, []) if isinstance(s, ast.ImportFrom)]
        return any((s.module or "").startswith("torch.optim") for s in imports)

    def _assign(self, target: ast.AST, origin: frozenset) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for item in target.elts:
                self._assign(item, origin)
            return
        name = target.id if isinstance(target, ast.Name) else _root_name(target)
        if isinstance(target, ast.Attribute) and target.attr == "grad":
            return  # x.grad is read as a gradient whatever is written into it
        if name:
            self.env[name] = self.env.get(name, NOTHING) | origin

    def _leaves(self) -> set[str]:
        """Names autograd differentiates with respect to, and the names they are made from."""
        leaves = set()
        for node in ast.walk(self.function):
            if isinstance(node, ast.Attribute) and node.attr in {"grad", "retain_grad"}:
                leaves.add(_root_name(node.value))
            elif isinstance(node, ast.Call) and _called(node.func) in self.autograd:
                leaves |= {_root_name(a) for a in node.args[1:2]}
                leaves |= {
                    n.id for a in node.args[1:2] for n in ast.walk(a) if isinstance(n, ast.Name)
                }
            if isinstance(node, ast.Call) and (
                _called(node.func) == "requires_grad_"
                or any(kw.arg == "requires_grad" for kw in node.keywords)
            ):
                leaves |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for _ in range(ROUNDS):
            for node in ast.walk(self.function):
                if isinstance(node, ast.Assign) and any(
                    _root_name(t) in leaves for t in node.targets
                ):
                    leaves |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        return leaves - {None}

    def _hooks(self) -> list[ast.AST]:
        """The functions the code registers as hooks: their argument is a gradient."""
        hooks = []
        for node in ast.walk(self.function):
            if isinstance(node, ast.Call) and (_called(node.func) or "").startswith("register_"):
                for argument in node.args[:1]:
                    if isinstance(argument, ast.Lambda):
                        hooks.append(argument)
                    elif isinstance(argument, ast.Name):
                        hooks += [
                            n for n in ast.walk(self.function)
                            if isinstance(n, ast.FunctionDef) and n.name == argument.id
                        ]  # fmt: skip
        return hooks

    def _helper(self, func: ast.AST) -> ast.AST | None:
        """The notebook's own function that `func` names, if it is one."""
        if not isinstance(func, ast.Name) or func.id in self.env or self.depth >= DEPTH:
            return None
        return defined(func.id, self.bindings)

    def _helper_origin(self, helper: ast.AST, call: ast.Call) -> frozenset:
        """What a helper returns, followed into it with the origins of what it is given."""
        arguments = [self.origin(argument) for argument in call.args]
        inner = Flow(helper, self.bindings, self.autograd, arguments, self.depth + 1)
        if self.checking:
            inner.check()
            self.problems += inner.problems
        return _union(origin for _, origin in inner.returned())


def defined(name: str, bindings: dict) -> ast.AST | None:
    """The function (a def, or a lambda given a name) that the notebook last binds to `name`."""
    for statement in reversed(bindings.get(name, [])):
        if isinstance(statement, ast.FunctionDef):
            return statement
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Lambda):
            return statement.value
    return None


def _parameters(function: ast.AST) -> list[str]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a]
    return [a.arg for a in every]


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function, not those of the functions defined inside it."""
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending += ast.iter_child_nodes(node)


def _returns(function: ast.AST) -> list[ast.AST]:
    if isinstance(function, ast.Lambda):
        return [function.body]
    return [n.value for n in _own_nodes(function) if isinstance(n, ast.Return) and n.value]


def _args(call: ast.Call) -> list[ast.AST]:
    return [*call.args, *(kw.value for kw in call.keywords)]


def _called(func: ast.AST) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _union(origins) -> frozenset:
    return frozenset().union(*origins)


def _shown(node: ast.AST) -> str:
    text = ast.unparse(node)
    return f"`{text}`" if len(text) <= 40 else f"`{text[:37]}...`"
