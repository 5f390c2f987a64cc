"""A by-hand answer read as a formula (grader.judging.formulas), from its source alone.

The function may bind local names to formulas, call helpers of the notebook that are formulas
themselves, repeat a step with `for _ in range(3)`, and branch with `if`/`else`, conditional
expressions or `where`; the elementary functions come from math, NumPy or torch, as functions or
tensor methods, and wrappers such as `float`, `torch.tensor` or `.item()` change nothing. Anything
else (a call the language does not know, a loop over data, autograd) makes it no formula, and the
answer is told what a formula may contain. The reading is linear in the code it reads: every
formula is capped at `formulas.LARGEST` nodes as it is built.
"""

import ast
from dataclasses import dataclass

from grader.judging.formulas import ARITIES, FUNCTIONS, LARGEST, size

HELP = (
    "a formula may use numbers, the parameters, names bound to formulas, + - * / **, "
    "elementary functions (exp, log, sqrt, sin, cos, tanh, … from math, numpy or torch, or as "
    "methods such as x.exp()), and if/else, comparisons or where for pieces"
)
MODULES = {"math", "numpy", "torch", "torch.special", "torch.nn", "torch.nn.functional"}
SPELLINGS = {
    **{name: name for name in FUNCTIONS},
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2", "arcsinh": "asinh",
    "arccosh": "acosh", "arctanh": "atanh", "absolute": "abs", "fabs": "abs", "power": "pow",
    "float_power": "pow", "expit": "sigmoid", "fmax": "maximum", "fmin": "minimum",
    "max": "maximum", "min": "minimum",
}  # fmt: skip
CONSTANTS = {"pi": "+pi", "e": "+e", "tau": "2*pi"}  # evaluated at the formula's precision
WRAPPERS = {
    "float", "tensor", "as_tensor", "asarray", "array", "scalar_tensor", "float64", "float32",
    "double", "float_", "item", "clone", "detach", "to", "cpu", "numpy", "contiguous", "data",
}  # fmt: skip
FLATTENING = {"flatten", "ravel", "reshape", "view"}
COUNTING = {"numel", "nelement", "size"}
LIKE = {"ones_like": "1", "zeros_like": "0", "full_like": None}
ARITHMETIC = {
    "add": "+", "sub": "-", "subtract": "-", "mul": "*", "multiply": "*", "div": "/",
    "divide": "/", "true_divide": "/",
}  # fmt: skip
NEGATION = {"neg", "negative"}
CALLABLE = {*SPELLINGS, *WRAPPERS, *LIKE, *COUNTING, *ARITHMETIC, *NEGATION, "where", "prod"}
DEPTH = 8  # helpers calling helpers
STEPS = 5000  # expressions read, branches and loops written out
BUILTINS = {"abs", "pow", "max", "min", "float", "len"}
NOT_FORMULAS = ("module", "callable", "helper", "method", "shape")
LOOPS = 20  # iterations of a `for _ in range(n)` written out


class NotAFormula(Exception):
    """The answer is not a formula; the message says what in it is not."""


@dataclass(frozen=True)
class Formula:
    """What a function returns, as formulas of its parameters."""

    names: tuple[str, ...]  # of its parameters, as the answer calls them
    results: tuple  # one formula per value returned
    one: bool  # it returns one value, not a tuple or list

    @property
    def parameters(self) -> int:
        """How many parameters the function takes."""
        return len(self.names)


def read(name: str, statements: list[ast.stmt]) -> Formula:
    """The function `name`, bound by the last of the notebook-level `statements`, as a formula."""
    scope = {}
    for statement in statements:
        for bound in _binds(statement):
            scope[bound] = statement
    reader = _Reader(scope)
    try:
        target = reader.global_name(name, ast.Name(id=name))
        if target[0] != "helper":
            raise NotAFormula(f"{name} is not a function defined with def or lambda")
        parameters = _parameters(target[1])
        result = reader.call(target[1], [("argument", i) for i in range(len(parameters))], {})
    except RecursionError:
        raise NotAFormula("its expressions nest too deeply: name their parts") from None
    if result[0] == "tuple":
        return Formula(tuple(parameters), result[1], one=False)
    return Formula(tuple(parameters), (result,), one=True)


def _binds(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in statement.names]
    targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
    return [n.id for t in targets if t for n in ast.walk(t) if isinstance(n, ast.Name)]


def _parameters(function) -> list[str]:
    arguments = function.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        raise NotAFormula("its parameters are more than plain names")
    return [a.arg for a in arguments.posonlyargs + arguments.args]


def _line(node: ast.AST) -> str:
    return f"line {node.lineno}: " if hasattr(node, "lineno") else ""


class _Reader:
    """Reads expressions and statements into formulas; globals are looked up in `scope`."""

    def __init__(self, scope: dict[str, ast.stmt]):
        self.scope = scope
        self.calling: list[ast.AST] = []  # helpers being written out, against recursion
        self.resolving: set[str] = set()
        self.steps = 0  # expressions read: the reading stops at STEPS, however the code nests

    # Names

    def global_name(self, name: str, node: ast.AST):
        """What a notebook-level name holds: a module, a function, a helper or a formula."""
        statement = self.scope.get(name)
        if statement is None and name in BUILTINS:
            return ("callable", name)
        if statement is None and "*" in self.scope:  # from math import *
            return self._member(("module", self.scope["*"].module or ""), name, node)
        if statement is None:
            raise NotAFormula(f"{_line(node)}{name} is not defined before the test")
        if name in self.resolving:
            raise NotAFormula(f"{_line(node)}{name} is defined by itself")
        self.resolving.add(name)
        try:
            return self._bound(name, statement)
        finally:
            self.resolving.discard(name)

    def _bound(self, name: str, statement: ast.stmt):
        if isinstance(statement, ast.FunctionDef):
            if statement.decorator_list:
                raise NotAFormula(f"{_line(statement)}{name} has a decorator")
            return ("helper", statement)
        if isinstance(statement, ast.Import):
            alias = next(a for a in statement.names if (a.asname or a.name).split(".")[0] == name)
            return _module(alias.name if alias.asname else alias.name.split(".")[0], statement)
        if isinstance(statement, ast.ImportFrom):
            alias = next(a for a in statement.names if (a.asname or a.name) == name)
            return self._member(("module", statement.module or ""), alias.name, statement)
        value = getattr(statement, "value", None)
        simple = isinstance(statement, ast.Assign | ast.AnnAssign) and _one_target(statement)
        if simple and isinstance(value, ast.Lambda):
            return ("helper", value)
        if simple and value is not None:
            return self.expression(value, {})
        raise NotAFormula(f"{_line(statement)}{name} is bound by a statement a formula cannot use")

    def _member(self, module, name: str, node: ast.AST):
        path = f"{module[1]}.{name}"
        if path in MODULES:
            return ("module", path)
        if module[1] not in MODULES:
            raise NotAFormula(
                f"{_line(node)}{module[1] or 'that module'} is not math, numpy or torch"
            )
        if name in CONSTANTS:
            return ("number", CONSTANTS[name])
        if name in CALLABLE:
            return ("callable", name)
        raise NotAFormula(f"{_line(node)}{path} is not in a formula")

    # Statements

    def call(self, function, arguments: list, keywords: dict, enclosing: dict | None = None):
        """What calling a helper (def or lambda) with these formulas returns, written out; a
        helper defined in a function sees that function's names (`enclosing`)."""
        if len(self.calling) >= DEPTH or function in self.calling:
            raise NotAFormula(f"{_line(function)}helpers call each other too deeply")
        parameters = _parameters(function)
        defaults = function.args.defaults
        env = dict(enclosing or {})
        for i, parameter in enumerate(parameters):
            if i < len(arguments):
                env[parameter] = arguments[i]
            elif parameter in keywords:
                env[parameter] = keywords[parameter]
            elif i >= len(parameters) - len(defaults):
                env[parameter] = self.expression(defaults[i - len(parameters) + len(defaults)], {})
            else:
                raise NotAFormula(f"{_line(function)}a helper is called without {parameter}")
        self.calling.append(function)
        try:
            if isinstance(function, ast.Lambda):
                return self.expression(function.body, env)
            returned = self.block(function.body, env)
            if returned is None:
                raise NotAFormula(f"{_line(function)}it can end without returning a value")
            return returned
        finally:
            self.calling.pop()

    def block(self, statements: list[ast.stmt], env: dict):
        """The value the statements return, or None if they end without returning."""
        for index, statement in enumerate(statements):
            rest = statements[index + 1 :]
            if isinstance(statement, ast.Return):
                if statement.value is None:
                    raise NotAFormula(f"{_line(statement)}it returns nothing")
                return self.expression(statement.value, env)
            if isinstance(statement, ast.If):
                test = self.expression(statement.test, env)
                taken = self.block(statement.body + rest, dict(env))
                other = self.block(statement.orelse + rest, dict(env))
                if taken is None or other is None:
                    return None
                return _choice(test, taken, other, statement)
            self.statement(statement, env)
        return None

    def statement(self, statement: ast.stmt, env: dict) -> None:
        """Bind what the statement binds in env."""
        if isinstance(statement, ast.Pass) or _is_docstring(statement):
            return
        if isinstance(statement, ast.FunctionDef) and not statement.decorator_list:
            env[statement.name] = ("helper", statement, env)
            return
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            lam = isinstance(statement.value, ast.Lambda)
            value = (
                ("helper", statement.value, env) if lam else self.expression(statement.value, env)
            )
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                self._assign(target, value, env)
            return
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            now = self.name(statement.target, env)
            env[statement.target.id] = self._operation(
                statement.op, now, self.expression(statement.value, env), statement
            )
            return
        if isinstance(statement, ast.Import | ast.ImportFrom):
            for name in _binds(statement):
                env[name] = self._bound(name, statement)
            return
        if isinstance(statement, ast.For) and not statement.orelse:
            self._loop(statement, env)
            return
        raise NotAFormula(f"{_line(statement)}{_describe(statement)} is not part of a formula")

    def _assign(self, target: ast.AST, value, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List) and value[0] == "tuple":
            if len(target.elts) != len(value[1]):
                raise NotAFormula(
                    f"{_line(target)}unpacks {len(value[1])} values into {len(target.elts)} names"
                )
            for part, item in zip(target.elts, value[1], strict=True):
                self._assign(part, item, env)
        else:
            raise NotAFormula(f"{_line(target)}only names can be assigned in a formula")

    def _loop(self, loop: ast.For, env: dict) -> None:
        """`for i in range(…)`, a fixed number of times: its body written out that often."""
        call = loop.iter
        bounds = (
            [self.expression(a, env) for a in call.args]
            if isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "range"
            else []
        )
        if (
            not bounds
            or any(b[0] != "number" for b in bounds)
            or not isinstance(loop.target, ast.Name)
        ):
            raise NotAFormula(
                f"{_line(loop)}a loop that is not `for i in range(n)` with n a number"
            )
        try:
            steps = range(*(int(b[1]) for b in bounds))
        except ValueError:
            raise NotAFormula(f"{_line(loop)}a range of numbers that are not whole") from None
        if len(steps) > LOOPS:
            raise NotAFormula(f"{_line(loop)}a loop of more than {LOOPS} steps")
        for step in steps:
            env[loop.target.id] = ("number", str(step))
            for statement in loop.body:
                if isinstance(statement, ast.Return | ast.If | ast.Break | ast.Continue):
                    raise NotAFormula(f"{_line(statement)}a loop that returns or branches")
                self.statement(statement, env)

    # Expressions

    def name(self, node: ast.Name, env: dict):
        if node.id in env:
            return env[node.id]
        return self.global_name(node.id, node)

    def expression(self, node: ast.AST, env: dict):
        """The formula (or module, callable, tuple) an expression stands for."""
        self.steps += 1
        if self.steps > STEPS:
            raise NotAFormula(f"{_line(node)}more code than a formula needs")
        found = self._expression(node, env)
        parts = found[1] if found[0] == "tuple" else () if found[0] in NOT_FORMULAS else (found,)
        if sum(size(part, LARGEST + 1) for part in parts) > LARGEST:
            raise NotAFormula(f"{_line(node)}a formula of more than {LARGEST} parts")
        return found

    def _expression(self, node: ast.AST, env: dict):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return ("number", str(int(node.value)))
            if isinstance(node.value, int | float):
                return ("number", repr(node.value))
            raise NotAFormula(
                f"{_line(node)}{type(node.value).__name__} {node.value!r} is not a real number"
            )
        if isinstance(node, ast.Name):
            return self.name(node, env)
        if isinstance(node, ast.Attribute):
            return self._attribute(self.expression(node.value, env), node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, env)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.BinOp):
            left, right = self.expression(node.left, env), self.expression(node.right, env)
            return self._operation(node.op, left, right, node)
        if isinstance(node, ast.UnaryOp):
            operand = _formula(self.expression(node.operand, env), node)
            if isinstance(node.op, ast.USub):
                return ("negative", operand)
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.Not):
                return ("not", operand)
        if isinstance(node, ast.IfExp):
            test = _formula(self.expression(node.test, env), node)
            return _choice(
                test, self.expression(node.body, env), self.expression(node.orelse, env), node
            )
        if isinstance(node, ast.Compare):
            return self._compare(node, env)
        if isinstance(node, ast.BoolOp):
            parts = tuple(_formula(self.expression(v, env), node) for v in node.values)
            return ("logic", "and" if isinstance(node.op, ast.And) else "or", parts)
        if isinstance(node, ast.Tuple | ast.List) and not any(
            isinstance(e, ast.Starred) for e in node.elts
        ):
            return ("tuple", tuple(_formula(self.expression(e, env), e) for e in node.elts))
        raise NotAFormula(f"{_line(node)}{_describe(node)} is not part of a formula")

    def _operation(self, op: ast.operator, left, right, node):
        symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}.get(
            type(op)
        )
        if symbol is None:
            raise NotAFormula(f"{_line(node)}the operator {type(op).__name__} is not + - * / **")
        return ("operation", symbol, _formula(left, node), _formula(right, node))

    def _compare(self, node: ast.Compare, env: dict):
        symbols = {
            ast.Lt: "<",
            ast.LtE: "<=",
            ast.Gt: ">",
            ast.GtE: ">=",
            ast.Eq: "==",
            ast.NotEq: "!=",
        }
        values = [_formula(self.expression(v, env), node) for v in [node.left, *node.comparators]]
        parts = []
        for op, left, right in zip(node.ops, values, values[1:], strict=False):
            if type(op) not in symbols:
                raise NotAFormula(
                    f"{_line(node)}the comparison {type(op).__name__} is not < <= > >= == !="
                )
            parts.append(("compare", symbols[type(op)], left, right))
        return parts[0] if len(parts) == 1 else ("logic", "and", tuple(parts))

    def _attribute(self, base, node: ast.Attribute):
        if base[0] == "module":
            return self._member(base, node.attr, node)
        formula = _formula(base, node)
        if node.attr == "shape":
            return ("shape", _counted(formula, node))
        if node.attr == "data":
            return formula
        if node.attr in {"T", "mT", "real"}:
            raise NotAFormula(f"{_line(node)}.{node.attr} is not part of a formula")
        return ("method", node.attr, formula)

    def _subscript(self, node: ast.Subscript, env: dict):
        base = self.expression(node.value, env)
        index = self.expression(node.slice, env)
        if base[0] == "shape" and _whole(index) is not None:
            return _count(base[1], _whole(index))
        raise NotAFormula(
            f"{_line(node)}indexing is not part of a formula (formulas work elementwise)"
        )

    def _call(self, node: ast.Call, env: dict):
        function = self.expression(node.func, env)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise NotAFormula(f"{_line(node)}a call with * or ** arguments")
        arguments = [self.expression(a, env) for a in node.args]
        if function[0] == "helper":
            keywords = {k.arg: self.expression(k.value, env) for k in node.keywords}
            return self.call(function[1], arguments, keywords, *function[2:])
        if function[0] == "method":
            return self._method(function[1], function[2], arguments, node)
        if function[0] == "callable":
            return self._function(function[1], arguments, node)
        raise NotAFormula(f"{_line(node)}{_describe(node.func)} cannot be called in a formula")

    def _method(self, name: str, base, arguments: list, node):
        if name in WRAPPERS and name not in {"tensor", "array"}:
            return base
        if name in FLATTENING:
            return ("flat", base)
        if name in COUNTING:
            counted = _counted(base, node)
            if name == "size" and not arguments:
                return ("shape", counted)
            return _count(counted, _whole(arguments[0]) if arguments else None)
        return self._function(name, [base, *arguments], node)

    def _function(self, name: str, arguments: list, node):
        formulas = [_formula(a, node) if a[0] != "shape" else a for a in arguments]
        if name in WRAPPERS:
            return _formula(arguments[0], node) if len(arguments) == 1 else self._wrong(name, node)
        if name in LIKE:
            fill = LIKE[name]
            if fill is None:
                return formulas[1] if len(formulas) == 2 else self._wrong(name, node)
            return ("number", fill) if len(formulas) == 1 else self._wrong(name, node)
        if name in {"numel", "size", "len"} and len(formulas) == 1:
            return _count(_counted(formulas[0], node), 0 if name == "len" else None)
        if name == "prod" and len(arguments) == 1 and arguments[0][0] == "shape":
            return _count(arguments[0][1], None)
        if name in ARITHMETIC and len(formulas) == 2:
            return ("operation", ARITHMETIC[name], *formulas)
        if name in NEGATION and len(formulas) == 1:
            return ("negative", formulas[0])
        if name == "where" and len(formulas) == 3:
            return ("choice", *formulas)
        if name == "log" and len(formulas) == 2:  # math.log(x, base)
            logs = [("function", "log", (f,)) for f in formulas]
            return ("operation", "/", *logs)
        canonical = SPELLINGS.get(name)
        if canonical is None:
            raise NotAFormula(f"{_line(node)}{name}() is not an elementary function")
        if len(formulas) != ARITIES.get(canonical, 1):
            return self._wrong(name, node)
        if canonical == "pow":
            return ("operation", "**", *formulas)
        return ("function", canonical, tuple(formulas))

    def _wrong(self, name: str, node):
        raise NotAFormula(f"{_line(node)}{name}() with arguments a formula cannot read")


def _module(path: str, node: ast.AST):
    if path not in MODULES:
        raise NotAFormula(f"{_line(node)}{path} is not math, numpy or torch")
    return ("module", path)


def _formula(found, node: ast.AST):
    """`found`, if it is a formula (not a module, a function or a tuple)."""
    if found[0] in NOT_FORMULAS or found[0] == "tuple":
        raise NotAFormula(f"{_line(node)}{_describe(node)} is not a number or tensor")
    return found


def _counted(formula, node: ast.AST):
    """A parameter, or its flattening: what a count can be asked of."""
    inner = formula[1] if formula[0] == "flat" else formula
    if inner[0] != "argument":
        raise NotAFormula(f"{_line(node)}sizes can be asked of parameters only")
    return ("flat", inner) if formula[0] == "flat" else inner


def _count(counted, axis: int | None):
    """The count of a parameter's elements (axis None) or its size along an axis."""
    flat = counted[0] == "flat"
    return ("count", (counted[1] if flat else counted)[1], axis, flat)


def _whole(formula) -> int | None:
    if formula[0] == "negative" and formula[1][0] == "number":
        whole = _whole(formula[1])
        return None if whole is None else -whole
    if formula[0] == "number" and formula[1].lstrip("-").isdigit():
        return int(formula[1])
    return None


def _choice(test, taken, other, node: ast.AST):
    if taken[0] == "tuple" or other[0] == "tuple":
        if taken[0] != other[0] or len(taken[1]) != len(other[1]):
            raise NotAFormula(f"{_line(node)}its branches return different numbers of values")
        return (
            "tuple",
            tuple(_choice(test, a, b, node) for a, b in zip(taken[1], other[1], strict=True)),
        )
    return ("choice", _formula(test, node), _formula(taken, node), _formula(other, node))


def _one_target(statement) -> bool:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return len(targets) == 1 and isinstance(targets[0], ast.Name)


def _is_docstring(statement: ast.stmt) -> bool:
    """A string or `...` standing alone."""
    value = getattr(statement, "value", None)
    return (
        isinstance(statement, ast.Expr)
        and isinstance(value, ast.Constant)
        and (isinstance(value.value, str) or value.value is ...)
    )


def _describe(node: ast.AST) -> str:
    try:
        text = ast.unparse(node).splitlines()[0]
    except Exception:  # noqa: BLE001 - a description only
        text = type(node).__name__
    return f"`{text[:60]}`"
