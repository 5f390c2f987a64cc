"""Where a "using autograd" answer's results come from, read from its source.

Each value the function computes gets an origin: *data* (its inputs, and copies of them),
*gradient* (what autograd returns: a `.grad`, `torch.autograd.grad`, `torch.func.grad(f)(x)`, a
hook's argument) or *hand* (computed from the data without autograd). A gradient may be scaled
by data as given (`lr * w.grad`, `w.grad / k`), clipped, summed, cloned or stacked; any other
function of it is worked out by hand. What the rule refuses is a result autograd did not produce:

- a gradient combined with a value worked out by hand (`formula * x.grad`), so that autograd
  only supplies a factor;
- a returned value, an in-place update of an input, a `.grad` written, or a hook's result worked
  out by hand (`return formula`, `w -= lr * formula`, `w.grad = formula`);
- a hand-made value given to autograd as the gradient to start from (`y.backward(formula)`).

The origins are flow-insensitive: a name holds every origin any of its assignments gives it.
"""

import ast
import collections
import contextlib
import functools
from collections.abc import Iterator

GRADIENT, DATA, HAND = "gradient", "data", "hand"
MOVED = "moved"  # data moved by a gradient (x - lr * x.grad, optimizer.step()): a result, and data
NOTHING: frozenset = frozenset()
FROM_AUTOGRAD = {GRADIENT, MOVED}

# Reverse mode only: the grader checks "using autograd" by scaling the gradients reverse mode
# computes, which forward mode (jvp, jacfwd) never sees.
GRADIENT_CALLS = {"grad", "jacobian", "hessian", "vjp", "vhp", "hvp", "jacrev", "grad_and_value"}
AUTOGRAD_MODULES = ("torch.autograd", "torch.func", "functorch")
EMPTY_CALLS = {
    "ones_like", "zeros_like", "empty_like", "ones", "zeros", "empty", "new_ones", "new_zeros",
    "new_empty", "len", "range", "size", "numel", "nelement", "dim", "isinstance", "print",
    "is_tensor", "register_hook", "backward", "zero_grad", "step", "requires_grad",
}  # fmt: skip
FILLED_CALLS = {"full", "full_like", "new_full"}  # as empty as the value they are filled with
COPYING_CALLS = {
    "clone", "detach", "detach_", "requires_grad_", "tensor", "as_tensor", "from_numpy", "float",
    "double", "half", "int", "to", "cpu", "contiguous", "view", "view_as", "reshape",
    "reshape_as", "flatten", "squeeze", "unsqueeze", "expand", "expand_as", "item", "tolist",
    "numpy", "list", "tuple", "stack", "cat", "chunk", "split", "unbind", "zip", "enumerate",
    "reversed", "t", "transpose", "permute", "retain_grad", "copy", "deepcopy", "type",
    "ravel", "broadcast_to", "atleast_1d", "vmap", "dict", "values", "items", "parameters",
    "named_parameters", "buffers", "children", "modules", "get_parameter", "state_dict", "keys",
    "vstack", "hstack", "row_stack", "column_stack", "concat", "concatenate", "Tensor",
    "FloatTensor", "DoubleTensor", "scalar_tensor", "asarray", "array", "new_tensor", "repeat",
    "tile", "float64", "float32", "round", "map", "pop",
}  # fmt: skip
SHAPED_LIKE = {"type_as", "view_as", "reshape_as", "expand_as"}  # only the shape of the other
# What a gradient stays a gradient through, besides copies and arithmetic: sums, clipping,
# selection and linear maps. Any other function of a gradient is worked out by hand.
GRADIENT_KEEPING = {
    "sum", "mean", "neg", "abs", "sign", "clamp", "clip", "where", "maximum", "minimum", "max",
    "min", "norm", "matmul", "mm", "mv", "bmm", "einsum", "tensordot", "diagonal", "diag", "add",
    "sub", "mul", "div", "true_divide", "multiply", "divide", "index_select", "gather",
    "sum_to_size", "masked_fill", "nan_to_num", "clamp_", "clip_", "mul_", "div_", "add_",
    "sub_", "copy_", "zero_", "neg_", "append", "extend", "vector_norm", "sqrt", "rsqrt",
    "reciprocal", "pow", "square", "clamp_min", "clamp_max", "clamp_min_", "clamp_max_", "fmin",
    "fmax", "dot", "inner", "addcdiv", "addcmul", "reduce", "normalize",
}  # fmt: skip
BOOKKEEPING_CALLS = {"len", "int", "float", "abs", "min", "max", "round"}
EMPTY_ATTRIBUTES = {"shape", "dtype", "device", "ndim", "is_leaf", "requires_grad", "grad_fn"}
GROWING_METHODS = {"append", "extend", "insert", "update", "setdefault"}
NOT_WRITES = {"requires_grad_", "retain_grad", "detach_", "zero_"}
SEEDS = {"gradient", "grad_tensors", "grad_outputs"}
MODULE_LIKE = {"autograd", "torch", "Tensor"}  # torch.Tensor.backward(t, …) is t.backward(…)
ROUNDS = 4  # values computed from values computed from …, until nothing changes
DEPTH = 3  # helper functions called from helper functions


def returns_gradient(function: ast.AST, bindings: dict) -> bool:
    """Whether every value `function` returns holds a gradient (read from the solution)."""
    flow = Flow(function, bindings, autograd_names(bindings))
    returned = list(flow.returned())
    return bool(returned) and all(origin & FROM_AUTOGRAD for _, origin in returned)


def differentiated_data(function: ast.AST, bindings: dict) -> tuple[int, ...]:
    """The positions of the parameters whose values go into what the function differentiates
    (read from the solution: `x` and `xs`, not `lr` or `k`)."""
    flow = Flow(function, bindings, autograd_names(bindings))
    return tuple(i for i, name in enumerate(flow.parameters) if name in flow.root_names)


def hand_made(
    function: ast.AST, bindings: dict, must_return_gradient: bool, data: tuple[int, ...] = ()
) -> str | None:
    """Why the results of `function` (a def or lambda) are not autograd's, or None. `data`:
    the positions of parameters that are differentiated data, never bookkeeping."""
    flow = Flow(function, bindings, autograd_names(bindings))
    flow.differentiated |= {flow.parameters[i] for i in data if i < len(flow.parameters)}
    flow.check()
    if must_return_gradient:
        for node, origin in flow.returned():
            if HAND in origin and not origin & FROM_AUTOGRAD:
                flow.problems.append(f"returns {_shown(node)}, which no gradient went into")
    return flow.problems[0] if flow.problems else None


def defined(name: str, bindings: dict, seen: frozenset = frozenset()) -> ast.AST | None:
    """The function the notebook last binds to `name`: a def without decorators, a lambda, or
    what another name it is given names (`f = _impl`); None when it is none of these."""
    statements = bindings.get(name, [])
    last = statements[-1] if statements else None
    if isinstance(last, ast.FunctionDef):
        return None if last.decorator_list else last
    if isinstance(last, ast.Assign) and isinstance(last.value, ast.Lambda):
        return last.value
    if isinstance(last, ast.Assign) and isinstance(last.value, ast.Name) and name not in seen:
        return defined(last.value.id, bindings, seen | {name})
    return None


def autograd_names(bindings: dict) -> dict[str, str]:
    """The notebook's names for autograd's functions, each with the function it names
    (`from torch.autograd import grad as g`: g is grad; `bw = torch.autograd.backward`)."""
    names = {}
    for statements in bindings.values():
        for statement in statements:
            module = getattr(statement, "module", None) or ""
            if isinstance(statement, ast.ImportFrom) and module.startswith(AUTOGRAD_MODULES):
                for alias in statement.names:
                    if alias.name in GRADIENT_CALLS | {"backward"}:
                        names[alias.asname or alias.name] = alias.name
            elif isinstance(statement, ast.Assign) and is_autograd_path(statement.value):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        names[target.id] = statement.value.attr
    return names


def is_autograd_path(node: ast.AST) -> bool:
    """`torch.autograd.grad`, `torch.func.jacrev`, `autograd.functional.jacobian` and the like."""
    if not (isinstance(node, ast.Attribute) and node.attr in GRADIENT_CALLS | {"backward"}):
        return False
    parts = []
    while isinstance(node, ast.Attribute):
        node = node.value
        parts.append(node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", ""))
    return bool({"autograd", "func", "functional", "functorch"} & set(parts))


class Flow:
    """The origins of the values one function computes, and what it does with them."""

    def __init__(self, function, bindings, autograd, arguments=None, depth=0, outer=None):
        self.function, self.bindings, self.autograd = function, bindings, autograd
        self.depth, self.problems, self.checking = depth, [], False
        self.parameters = parameter_names(function)
        given = list(arguments or [])
        given += [frozenset({DATA})] * (len(self.parameters) - len(given))
        start = dict(outer or {})
        for inner in _own_nodes(function):  # what functions defined inside are given is data
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                start.update(dict.fromkeys(parameter_names(inner), frozenset({DATA})))
        start.update(zip(self.parameters, map(frozenset, given), strict=False))
        self.env = self._bound = start
        self.leaves = self._leaves()
        self.differentiated = self._differentiated()
        # Statements of the function's own body run once, in order: a name one of them binds
        # holds that value until the next binds it again; inside a loop or a branch, it holds
        # every value it may have. Each top statement keeps the names as they are before it.
        self._top = set(map(id, function.body)) if isinstance(function.body, list) else set()
        self._before: dict[int, dict] = {}
        for _ in range(ROUNDS):  # each round binds anew, in the order the code runs
            found, self._bound = self.env, {}
            self.env = collections.ChainMap(self._bound, found)  # this round's names first
            for node in _own_nodes(function):
                if id(node) in self._top:
                    self._before[id(node)] = dict(self.env)
                self._bind(node)
            self.env = {**start, **self._bound}
            if self.env == found:
                break
        self._everything = self.env

    @contextlib.contextmanager
    def _at(self, statement: ast.AST):
        """Read names as they are before the top statement `statement` runs."""
        self.env = {**self._everything, **self._before.get(id(statement), {})}
        try:
            yield
        finally:
            self.env = self._everything

    # -- what the function does ---------------------------------------------------------------

    def returned(self) -> Iterator[tuple[ast.AST, frozenset]]:
        """Each value the function returns (each item of a returned tuple or list), with its
        origin."""
        for statement, value in self._returns_at():
            items = value.elts if isinstance(value, ast.Tuple | ast.List) else [value]
            with self._at(statement):
                origins = [(item, self.origin(item)) for item in items]
            yield from origins

    def _returns_at(self) -> list[tuple[ast.AST | None, ast.AST]]:
        """Each returned value, with the top statement it is returned in."""
        if isinstance(self.function, ast.Lambda):
            return [(None, self.function.body)]
        return [(top, value) for top in self.function.body for value in _returns_in(top)]

    def check(self) -> None:
        """Record every way the function's results do not come from autograd."""
        self.checking, self._memo = True, {}
        for top in self.function.body if isinstance(self.function.body, list) else []:
            with self._at(top):
                self._check_nodes([top, *_descendants(top)])
        if not isinstance(self.function.body, list):
            self._check_nodes(list(_own_nodes(self.function)))
        self._check_hooks()

    def _check_nodes(self, nodes: list[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.expr):
                self.origin(node)  # records gradients mixed with values worked out by hand
            if isinstance(node, ast.AugAssign):
                self._written(node.target, self._augmented(node))
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    self._write_targets(target, node.value)
            elif isinstance(node, ast.Call):
                self._seeded(node)
                self._called_in_place(node)
                written = _setattr_target(node)
                if written is not None:
                    self._written(written, self.origin(node.args[2]))

    def _check_hooks(self) -> None:
        for hook, given in self._hooks():
            inner = Flow(hook, self.bindings, self.autograd, given, self.depth, self.env)
            inner.check()
            self.problems += inner.problems
            for value, origin in inner.returned():
                if HAND in origin and not origin & FROM_AUTOGRAD:
                    self.problems.append(f"has a hook return {_shown(value)}, not the gradient")

    def _write_targets(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            values = value.elts if _same_length(target, value) else [value] * len(target.elts)
            for item, item_value in zip(target.elts, values, strict=True):
                self._write_targets(item, item_value)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            self._written(target, self.origin(value))

    def _called_in_place(self, call: ast.Call) -> None:
        """`t.sub_(…)`, `torch.Tensor.sub_(t, …)` and `torch.mul(…, out=t)` write into t."""
        method = _called(call.func) or ""
        is_method = isinstance(call.func, ast.Attribute)
        on_module = is_method and _called(call.func.value) in MODULE_LIKE
        if method.endswith("_") and method not in NOT_WRITES and is_method:
            target = call.args[0] if on_module and call.args else call.func.value
            rest = call.args[1:] if on_module else call.args
            rest = [*rest, *(kw.value for kw in call.keywords)]
            self._written(target, self._in_place(method, target, rest))
        for keyword in call.keywords:
            if keyword.arg == "out":
                self._written(keyword.value, self.origin(call))

    def _written(self, target: ast.AST, origin: frozenset) -> None:
        """A write into an input (or a `.grad`) must not be worked out by hand."""
        is_grad = isinstance(target, ast.Attribute) and target.attr in {"grad", "data"}
        root = _root_name(target)
        if not (is_grad or (root and self.env.get(root, NOTHING) & {DATA, *FROM_AUTOGRAD})):
            return
        if HAND in origin and not origin & FROM_AUTOGRAD:
            self.problems.append(f"writes into {_shown(target)} a value no gradient went into")

    def _seeded(self, call: ast.Call) -> None:
        """The gradient autograd starts from must not be worked out by hand."""
        name = _called(call.func)
        args = _expanded(call.args)
        keywords = _expanded_keywords(call.keywords)
        seeds = [value for key, value in keywords if key in SEEDS]
        if isinstance(call.func, ast.Name):
            name = self.autograd.get(name, name) if self._autograd(call.func) else name
        unread = [a.value for a in args if isinstance(a, ast.Starred)]  # `*args`, `**kwargs`
        unread += [value for key, value in keywords if key is None]
        if name == "backward":  # tensor.backward(seed), torch.autograd.backward(tensor, seed)
            on_module = isinstance(call.func, ast.Name) or (
                isinstance(call.func, ast.Attribute) and _called(call.func.value) in MODULE_LIKE
            )
            seeds += unread + (args[1:2] if on_module else args[0:1])
        elif name == "grad" and self._autograd(call.func):
            seeds += unread + args[2:3]
        elif name in {"vjp", "vhp", "hvp"} and self._autograd(call.func):
            seeds += unread + args[2:3]  # torch.autograd.functional.vjp(f, x, v)
        if self._is_pullback(call.func):
            seeds += args  # torch.func.vjp(f, x) gives (out, pullback); pullback(v)
        for seed in seeds:
            if HAND in self.origin(seed):
                self.problems.append(f"starts autograd from {_shown(seed)}, worked out by hand")

    # -- origins ------------------------------------------------------------------------------

    @property
    def env(self):
        return self._env

    @env.setter
    def env(self, names) -> None:
        self._env, self._memo = names, {}  # origins change with the names they are read from

    def origin(self, node: ast.AST) -> frozenset:
        """Where the value of the expression `node` comes from (worked out once per node while
        the names stay as they are: nested calls cost linear time, not exponential)."""
        key = ("origin", id(node))
        if key not in self._memo:
            self._memo[key] = self._origin(node)
        return self._memo[key]

    def _origin(self, node: ast.AST) -> frozenset:
        if isinstance(node, ast.Name):
            return self.env.get(node.id, self._notebook_value(node.id))
        if isinstance(node, ast.Attribute):
            if node.attr == "grad" and self._holds_leaves(node.value):
                return frozenset({GRADIENT})
            return NOTHING if node.attr in EMPTY_ATTRIBUTES else self.origin(node.value)
        if isinstance(node, ast.Subscript):
            return self._item(node)
        if isinstance(node, ast.Starred | ast.NamedExpr | ast.UnaryOp):
            return self.origin(node.operand if isinstance(node, ast.UnaryOp) else node.value)
        if isinstance(node, ast.BinOp):
            if self._bookkeeping(node):
                return frozenset({DATA})
            additive = isinstance(node.op, ast.Add | ast.Sub)
            return self._combined([node.left, node.right], additive=additive)
        if isinstance(node, ast.Call):
            return self._called_origin(node)
        if isinstance(node, ast.Lambda):
            return self.origin(node.body)
        if isinstance(node, ast.Constant):
            return NOTHING
        return _union(self.origin(child) for child in _expressions(node))

    def _notebook_value(self, name: str) -> frozenset:
        """A name the notebook binds to a value (not a module, function or class) is data."""
        statements = self.bindings.get(name, [])
        values = [
            s for s in statements if isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign)
        ]
        is_function = defined(name, self.bindings) is not None
        return frozenset({DATA}) if values and not is_function else NOTHING

    def _item(self, node: ast.Subscript) -> frozenset:
        """`(a, b)[1]` is b; any other item holds what its container holds."""
        index, items = node.slice, getattr(node.value, "elts", None)
        constant = isinstance(index, ast.Constant) and isinstance(index.value, int)
        if items is not None and constant and -len(items) <= index.value < len(items):
            return self.origin(items[index.value])
        return self.origin(node.value)

    def _holds_leaves(self, node: ast.AST) -> bool:
        """Whether `node.grad` is a gradient autograd wrote: the `.grad` of an input, a copy of
        one, a leaf of the function's own, or a tensor it kept the gradient of."""
        is_leaf = isinstance(node, ast.Name | ast.Subscript) and _root_name(node) in self.leaves
        return is_leaf or HAND not in self.origin(node)

    def _called_origin(self, call: ast.Call) -> frozenset:
        func = call.func
        name = _called(func)
        inner = func.func if isinstance(func, ast.Call) else None  # torch.func.grad(f)(x)
        if self._autograd(func) or (inner is not None and self._autograd(inner)):
            return frozenset({GRADIENT})
        callee = NOTHING if isinstance(func, ast.Attribute) else self.origin(func)
        if GRADIENT in callee:
            return frozenset({GRADIENT})  # slope = torch.func.grad(f); slope(x)
        if name in EMPTY_CALLS:
            return NOTHING
        receiver = [func.value] if isinstance(func, ast.Attribute) else []
        arguments = [*call.args, *(kw.value for kw in call.keywords)]
        if name in FILLED_CALLS:
            return _union(self.origin(a) for a in arguments[1:])
        if name in SHAPED_LIKE and receiver:
            return self.origin(receiver[0])
        if name in COPYING_CALLS:
            return _union(self.origin(part) for part in [*receiver, *arguments])
        if name in GROWING_METHODS and receiver:
            return NOTHING  # list.append(...) returns None
        helper = self._helper(func)
        if helper is not None:
            return self._helper_origin(helper, call)
        if isinstance(func, ast.Name) and func.id in self.bindings and self.depth >= DEPTH:
            return frozenset({HAND})  # a notebook function too deep to follow
        operands = [*receiver, *arguments] + ([func] if callee else [])
        origin = self._combined(operands)
        given = [self.origin(operand) for operand in operands]
        only_gradients = all(o <= {GRADIENT} for o in given)
        if GRADIENT in origin and name not in GRADIENT_KEEPING and not only_gradients:
            return frozenset({HAND})  # torch.sigmoid(x + 0 * s.grad) is not a gradient
        return origin

    def _is_pullback(self, func: ast.AST) -> bool:
        """`torch.func.vjp(f, x)[1]`, or a name unpacked from such a call."""
        if isinstance(func, ast.Subscript):
            func = func.value
            return isinstance(func, ast.Call) and _called(func.func) == "vjp"
        return isinstance(func, ast.Name) and func.id in self._pullbacks

    @functools.cached_property
    def _pullbacks(self) -> set[str]:
        names = set()
        for node in _own_nodes(self.function):
            is_call = isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            if is_call and _called(node.value.func) == "vjp" and self._autograd(node.value.func):
                for target in node.targets:
                    if isinstance(target, ast.Tuple) and isinstance(target.elts[-1], ast.Name):
                        names.add(target.elts[-1].id)
        return names

    def _autograd(self, func: ast.AST) -> bool:
        """Whether `func` is one of autograd's functions: by its path, or a name the notebook
        gave one, not one of the function's own."""
        if isinstance(func, ast.Name):
            return func.id in self.autograd and func.id not in self.env
        return is_autograd_path(func)

    def _combined(self, operands: list[ast.AST], *, additive: bool = False) -> frozenset:
        """A value computed from `operands`: a gradient if one of them is, and then scaled only by
        data as given (data plus or minus a gradient is data moved by it); else worked out by
        hand, if any data went into it."""
        origins = [self.origin(operand) for operand in operands]
        if not any(GRADIENT in origin for origin in origins):
            return frozenset({HAND}) if any(origins) else NOTHING
        mixed = [o for o, origin in zip(operands, origins, strict=True) if HAND in origin]
        if mixed and self.checking:
            self.problems.append(
                f"combines autograd's gradient with {_shown(mixed[0])}, worked out by hand"
            )
        if mixed:
            return frozenset({GRADIENT, HAND})
        moves = additive and any(o and GRADIENT not in o for o in origins)
        return frozenset({MOVED}) if moves else frozenset({GRADIENT})

    def _augmented(self, node: ast.AugAssign) -> frozenset:
        """`x -= lr * x.grad`: the target, moved by the value."""
        additive = isinstance(node.op, ast.Add | ast.Sub)
        return self._combined([node.target, node.value], additive=additive)

    def _in_place(self, method: str, target: ast.AST, rest: list[ast.AST]) -> frozenset:
        """What `target.method(*rest)` leaves in target: a copy, or the target combined."""
        if method in {"copy_", "set_"}:
            return _union(self.origin(value) for value in rest[:1])
        return self._combined([target, *rest], additive=method in {"add_", "sub_"})

    def _bookkeeping(self, node: ast.AST) -> bool:
        """Arithmetic on constants and on parameters that are not differentiated (`lr / k`)."""
        key = ("bookkeeping", id(node))
        if key not in self._memo:
            self._memo[key] = self._bookkeeping_of(node)
        return self._memo[key]

    def _bookkeeping_of(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return (
                node.id in self.parameters
                and self.env.get(node.id, NOTHING) <= {DATA}
                and node.id not in self.differentiated
            )
        if isinstance(node, ast.UnaryOp):
            return self._bookkeeping(node.operand)
        if isinstance(node, ast.BinOp):
            return self._bookkeeping(node.left) and self._bookkeeping(node.right)
        if isinstance(node, ast.Call) and _called(node.func) in BOOKKEEPING_CALLS:
            return isinstance(node.func, ast.Name) and all(map(self._bookkeeping, node.args))
        if isinstance(node, ast.Call) and _called(node.func) in {"ones", "ones_like"}:
            return not node.keywords or all(kw.arg != "requires_grad" for kw in node.keywords)
        return False

    # -- names --------------------------------------------------------------------------------

    def _bind(self, node: ast.AST) -> None:
        """Give the names a statement binds the origin of the value it binds them to."""
        self._binding_once = id(node) in self._top and isinstance(node, ast.Assign | ast.AnnAssign)
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._assign_value(target, node.value)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            self._assign_value(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            self._assign(node.target, self._augmented(node))
        elif isinstance(node, ast.For | ast.comprehension):
            self._assign(node.target, self.origin(node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._assign(node.optional_vars, self.origin(node.context_expr))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            returns = _returns(node)
            self._bound[node.name] = _union(self.origin(value) for value in returns)
        elif isinstance(node, ast.Call):
            self._bind_call(node)
            for hook in node.args[:1] if (_called(node.func) or "").startswith("register_") else []:
                if isinstance(hook, ast.Attribute) and hook.attr in GROWING_METHODS:
                    self._assign(hook.value, frozenset({GRADIENT}))  # h.register_hook(kept.append)

    def _bind_call(self, call: ast.Call) -> None:
        if self._is_optimizer(call):
            given = call.args[:1] + [kw.value for kw in call.keywords if kw.arg == "params"]
            for name in {n.id for a in given for n in ast.walk(a) if isinstance(n, ast.Name)}:
                self._bound[name] = self._bound.get(name, self._start(name)) | {MOVED}  # step()
                self._memo = {}
        elif isinstance(call.func, ast.Attribute):
            method, receiver = call.func.attr, call.func.value
            if _called(receiver) in MODULE_LIKE and call.args:
                receiver = call.args[0]
            rest = call.args[1:] if receiver is not call.func.value else call.args
            rest = [*rest, *(kw.value for kw in call.keywords)]
            if method in GROWING_METHODS:
                self._assign(receiver, _union(self.origin(value) for value in rest))
            elif method.endswith("_") and method not in NOT_WRITES:
                self._assign(receiver, self._in_place(method, receiver, rest))

    def _is_module(self, name: str | None) -> bool:
        statements = self.bindings.get(name, []) if name else []
        return name == "torch" or any(
            isinstance(s, ast.Import | ast.ImportFrom) for s in statements
        )

    def _start(self, name: str) -> frozenset:
        """What a parameter holds before the code binds it again (nothing for other names)."""
        return frozenset({DATA}) if name in self.parameters else NOTHING

    def _is_optimizer(self, call: ast.Call) -> bool:
        """`torch.optim.SGD(…)`, `optim.Adam(…)`, a name imported from torch.optim, or what a
        name is bound to whose `.step()` the function calls."""
        return makes_an_optimizer(call, self._optim_names) or self._stepped(call)

    @functools.cached_property
    def _optim_names(self) -> set[str]:
        return optim_names([s for statements in self.bindings.values() for s in statements])

    def _stepped(self, call: ast.Call) -> bool:
        """Whether the value of `call` is bound to a name whose `.step()` is called."""
        return id(call) in self._stepped_calls

    @functools.cached_property
    def _stepped_calls(self) -> set[int]:
        stepped = {
            _root_name(n.func.value)
            for n in _own_nodes(self.function)
            if isinstance(n, ast.Call) and _called(n.func) == "step"
            and isinstance(n.func, ast.Attribute)
        }  # fmt: skip
        return {
            id(n.value)
            for n in _own_nodes(self.function)
            if isinstance(n, ast.Assign) and any(_root_name(t) in stepped for t in n.targets)
        }

    def _assign_value(self, target: ast.AST, value: ast.AST) -> None:
        """`a, b = x, y` binds a to x and b to y; any other target takes the value's origin."""
        if isinstance(target, ast.Tuple | ast.List) and _same_length(target, value):
            for item, item_value in zip(target.elts, value.elts, strict=True):
                self._assign_value(item, item_value)
        else:
            self._assign(target, self.origin(value))

    def _assign(self, target: ast.AST, origin: frozenset) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for item in target.elts:
                self._assign(item, origin)
            return
        name = target.id if isinstance(target, ast.Name) else _root_name(target)
        if isinstance(target, ast.Attribute) and target.attr == "grad":
            return  # x.grad is read as a gradient whatever is written into it
        if isinstance(target, ast.Call) or self._is_module(name):
            return  # torch.exp(t).add_(…) changes a value of its own, not torch
        if name and self._binding_once and isinstance(target, ast.Name):
            self._bound[name] = origin  # a top statement binding it anew
        elif name:
            self._bound[name] = self._bound.get(name, self._start(name)) | origin
        self._memo = {}

    def _leaves(self) -> set[str]:
        """Names autograd differentiates with respect to, and the names they are made from."""
        leaves = set()
        for node in _own_nodes(self.function):
            if isinstance(node, ast.Attribute) and node.attr == "retain_grad":
                leaves.add(_root_name(node.value))
            elif isinstance(node, ast.Call) and self._autograd(node.func):
                leaves |= {n.id for a in node.args[1:2] for n in ast.walk(a) if _is_name(n)}
            if isinstance(node, ast.Call) and (
                _called(node.func) == "requires_grad_"
                or any(kw.arg == "requires_grad" for kw in node.keywords)
            ):
                leaves |= {n.id for n in ast.walk(node) if _is_name(n)}
            if isinstance(node, ast.Assign) and _makes_a_leaf(node):
                leaves |= {_root_name(t) for t in node.targets}
            if _collects_a_leaf(node):  # leaves.append(x.detach().requires_grad_())
                leaves.add(_root_name(node.func.value))
        for _ in range(ROUNDS):
            for node in _own_nodes(self.function):
                if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id in leaves for t in node.targets
                ):
                    leaves |= {n.id for n in ast.walk(node.value) if _is_name(n)}
        return leaves - {None}

    def _differentiated(self) -> set[str]:
        """The names that are themselves leaves autograd differentiates with respect to (not the
        inputs they were made from): `x` in `x = x.clone().requires_grad_()`."""
        names = set()
        for node in _own_nodes(self.function):
            if isinstance(node, ast.Assign) and _makes_a_leaf(node):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif (
                isinstance(node, ast.Call)
                and _called(node.func) in {"requires_grad_", "retain_grad"}
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
            ):
                names.add(node.func.value.id)
            elif isinstance(node, ast.Call) and self._autograd(node.func):
                names |= {n.id for a in node.args[1:2] for n in ast.walk(a) if _is_name(n)}
        return names

    @functools.cached_property
    def root_names(self) -> set[str]:
        """The names that go into what autograd differentiates (a backward's tensor, grad's
        outputs and inputs, an optimizer's parameters), and the names those are made from."""
        names = set()
        for node in _own_nodes(self.function):
            if isinstance(node, ast.Call) and _called(node.func) == "backward":
                parts = [node.func.value] if isinstance(node.func, ast.Attribute) else []
                names |= {n.id for p in parts + node.args[:1] for n in ast.walk(p) if _is_name(n)}
            elif isinstance(node, ast.Call) and (
                self._autograd(node.func) or self._is_optimizer(node)
            ):
                names |= {n.id for a in node.args[:2] for n in ast.walk(a) if _is_name(n)}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Call):  # vmap(grad(f))(x)
                names |= {n.id for a in node.args for n in ast.walk(a) if _is_name(n)}
        for _ in range(ROUNDS):
            for node in _own_nodes(self.function):
                targets, value = bound_by(node)
                if value is None or _uses_gradients(value):
                    continue  # x -= lr * x.grad moves x; lr is not differentiated
                if {n.id for t in targets for n in ast.walk(t) if _is_name(n)} & names:
                    names |= _value_names(value)
        return names

    def _hooks(self) -> list[tuple[ast.AST, list]]:
        """The functions the code registers as hooks, each with what its parameters are given:
        `functools.partial`'s arguments first, then the gradient."""
        hooks = []
        for node in _own_nodes(self.function):
            if isinstance(node, ast.Call) and (_called(node.func) or "").startswith("register_"):
                given = node.args[:1] + [kw.value for kw in node.keywords if kw.arg == "hook"]
                for argument in given:
                    bound = []
                    if isinstance(argument, ast.Call) and _called(argument.func) == "partial":
                        argument, bound = argument.args[0], argument.args[1:]
                    hook = self._function(argument)
                    if hook is None and not _collects(argument):
                        self.problems.append("registers a hook that is not a def or a lambda")
                    elif hook is None:
                        continue  # print, or kept.append: the gradient itself is kept
                    else:
                        origins = [self.origin(value) for value in bound] + [{GRADIENT}]
                        defaults = hook.args.defaults
                        rest = parameter_names(hook)[len(origins) :]
                        origins += [
                            self.origin(defaults[i - len(rest) + len(defaults)])
                            if i >= len(rest) - len(defaults)
                            else frozenset({DATA})
                            for i in range(len(rest))
                        ]
                        hooks.append((hook, origins))
        return hooks

    def _function(self, node: ast.AST) -> ast.AST | None:
        """The lambda, or the def (in the function or the notebook) that `node` names."""
        if isinstance(node, ast.Lambda):
            return node
        if not isinstance(node, ast.Name):
            return None
        local = [
            n for n in ast.walk(self.function)
            if isinstance(n, ast.FunctionDef) and n.name == node.id
        ]  # fmt: skip
        return local[0] if local else defined(node.id, self.bindings)

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


SHAPING = {"split", "chunk", "range", "len", "reshape", "view", "repeat", "arange", "linspace"}


def _value_names(node: ast.AST) -> set[str]:
    """The names whose values go into `node`'s value: in `x.split(k)` or `range(n)`, x, but
    not the sizes k and n, which only shape it."""
    names, pending = set(), [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Name):
            names.add(current.id)
        elif isinstance(current, ast.Call) and _called(current.func) in SHAPING:
            pending += [current.func.value] if isinstance(current.func, ast.Attribute) else []
        else:
            pending += ast.iter_child_nodes(current)
    return names


def _uses_gradients(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "grad" for n in ast.walk(node))


def optim_names(statements: list[ast.AST]) -> set[str]:
    """The code's names for torch.optim and what it imports from it."""
    return set().union(*map(_optim_names_in, statements))


@functools.lru_cache(maxsize=65536)  # trees are shared (syntax.parsed): each is walked once
def _optim_names_in(statement: ast.AST) -> frozenset[str]:
    names = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch.optim"):
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "torch":
            names |= {a.asname or a.name for a in node.names if a.name == "optim"}
        elif isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == "torch.optim" and a.asname}
    return frozenset(names)


def makes_an_optimizer(call: ast.Call, names: set[str]) -> bool:
    """`torch.optim.SGD(…)`, `optim.Adam(…)`, or a call of a name in `names` (`optim_names`)."""
    func, path = call.func, []
    while isinstance(func, ast.Attribute):
        path.append(func.attr)
        func = func.value
    root = func.id if isinstance(func, ast.Name) else None
    return "optim" in path[1:] or root in names | {"optim"}


def bound_by(node: ast.AST) -> tuple[list, ast.AST | None]:
    """(targets, value) of a statement that binds names from a value; else ([], None)."""
    if isinstance(node, ast.Assign):
        return node.targets, node.value
    if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr):
        return [node.target], node.value
    if isinstance(node, ast.For | ast.comprehension):
        return [node.target], node.iter
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars], node.context_expr
    return [], None


def _collects(hook: ast.AST) -> bool:
    """`print` or `kept.append`: a hook that keeps or shows the gradient and returns nothing."""
    if isinstance(hook, ast.Name):
        return hook.id == "print"
    return isinstance(hook, ast.Attribute) and hook.attr in GROWING_METHODS


def _makes_a_leaf(node: ast.Assign) -> bool:
    """`h = ….requires_grad_()`, `t = torch.tensor(…, requires_grad=True)`, `t.requires_grad =
    True`: the names assigned are leaves of the function's own."""
    if any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets):
        return True
    return _holds_a_new_leaf(node.value)


def _collects_a_leaf(node: ast.AST) -> bool:
    """`leaves.append(…requires_grad_())`: a container the function keeps its leaves in."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    appends = node.func.attr in {"append", "extend", "insert"}
    return appends and any(_holds_a_new_leaf(argument) for argument in node.args)


def _holds_a_new_leaf(expression: ast.AST) -> bool:
    """Whether the expression makes a tensor require gradients (`requires_grad_()`,
    `requires_grad=True`)."""
    return any(
        isinstance(n, ast.Call)
        and (
            _called(n.func) == "requires_grad_"
            or any(kw.arg == "requires_grad" for kw in n.keywords)
        )
        for n in ast.walk(expression)
    )


def _setattr_target(call: ast.Call) -> ast.Attribute | None:
    """`setattr(t, "grad", v)` written as the attribute it sets, `t.grad`."""
    if not (_called(call.func) == "setattr" and isinstance(call.func, ast.Name)):
        return None
    if len(call.args) != 3:
        return None
    name = call.args[1].value if isinstance(call.args[1], ast.Constant) else "grad"  # computed
    return ast.Attribute(value=call.args[0], attr=str(name), ctx=ast.Store())


def parameter_names(function: ast.AST) -> list[str]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a]
    return [a.arg for a in every]


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function, and of the functions defined inside it (they share its names),
    in the order of the source, but not the default values of its own parameters."""
    pending = list(function.body) if isinstance(function.body, list) else [function.body]
    pending.reverse()
    while pending:
        node = pending.pop()
        yield node
        pending += reversed(list(ast.iter_child_nodes(node)))


def _descendants(node: ast.AST) -> list[ast.AST]:
    """The nodes inside `node`, in the order of the source."""
    found, pending = [], list(reversed(list(ast.iter_child_nodes(node))))
    while pending:
        child = pending.pop()
        found.append(child)
        pending += reversed(list(ast.iter_child_nodes(child)))
    return found


def _returns_in(statement: ast.AST) -> list[ast.AST]:
    """The values `return` statements inside `statement` return (not those of inner functions)."""
    found, pending = [], [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            found.append(node.value)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending += ast.iter_child_nodes(node)
    return found


def _returns(function: ast.AST) -> list[ast.AST]:
    """What the function returns (not what functions defined inside it return)."""
    if isinstance(function, ast.Lambda):
        return [function.body]
    return [value for statement in function.body for value in _returns_in(statement)]


def _expressions(node: ast.AST) -> list[ast.AST]:
    return [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)] + [
        child.value for child in ast.iter_child_nodes(node) if isinstance(child, ast.keyword)
    ]


def _expanded(args: list[ast.AST]) -> list[ast.AST]:
    """Positional arguments, a `*[a, b]` written out."""
    out = []
    for arg in args:
        starred = isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Tuple | ast.List)
        out += arg.value.elts if starred else [arg]
    return out


def _expanded_keywords(keywords: list[ast.keyword]) -> list[tuple[str | None, ast.AST]]:
    """Keyword arguments, a `**{"gradient": g}` written out."""
    out = []
    for keyword in keywords:
        if keyword.arg is None and isinstance(keyword.value, ast.Dict):
            for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                out.append((key.value if isinstance(key, ast.Constant) else None, value))
        else:
            out.append((keyword.arg, keyword.value))
    return out


def _same_length(target: ast.AST, value: ast.AST) -> bool:
    return (
        isinstance(target, ast.Tuple | ast.List)
        and isinstance(value, ast.Tuple | ast.List)
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in [*target.elts, *value.elts])
    )


def _args(call: ast.Call) -> list[ast.AST]:
    return [*call.args, *(kw.value for kw in call.keywords)]


def _called(func: ast.AST) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _is_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Name)


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _union(origins) -> frozenset:
    return frozenset().union(*origins)


def _shown(node: ast.AST) -> str:
    text = ast.unparse(node)
    return f"`{text}`" if len(text) <= 40 else f"`{text[:37]}...`"
