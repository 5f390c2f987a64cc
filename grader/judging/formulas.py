"""Formulas: the small expression language a by-hand answer is read into, and its evaluation.

A formula is a tree of tuples, built by `grader.judging.formula_reading` from the answer's source
and evaluated here by the grader itself, never by the student's code:

    ("number", text)               a literal, exact as written (0.1 is one tenth)
    ("argument", i)                the function's i-th parameter
    ("negative", a)                -a
    ("operation", op, a, b)        a op b, op one of + - * / **
    ("function", name, (a, ...))   an elementary function (FUNCTIONS)
    ("choice", test, a, b)         a where test holds, else b
    ("compare", op, a, b)          a op b, op one of < <= > >= == !=
    ("logic", op, (a, ...))        and / or;  ("not", a)
    ("count", i, axis, flat)       parameter i's element count (axis None) or size along axis
    ("flat", a)                    a, its shape flattened (for counts)

Tensors are elementwise: a formula is evaluated once per element, so a piecewise formula only
evaluates the piece it takes. Arithmetic is mpmath's, at `DIGITS` significant digits: a correct
formula agrees with the reference to nearly all of them, which no finite difference of bounded
size can (its truncation error does not shrink with the precision).
"""

import math

import mpmath

DIGITS = 1000
LARGEST_NUMBER = mpmath.mpf(10) ** 300
LARGEST = 200  # nodes of a formula, with its names and helpers written out; a derivative needs tens


def _sigmoid(x):
    return 1 / (1 + mpmath.exp(-x))


def _sign(x):
    return mpmath.mpf(mpmath.sign(x))


FUNCTIONS = {
    "exp": mpmath.exp, "exp2": lambda x: mpmath.power(2, x), "expm1": mpmath.expm1,
    "log": mpmath.log, "log2": lambda x: mpmath.log(x, 2), "log10": mpmath.log10,
    "log1p": mpmath.log1p, "sqrt": mpmath.sqrt,
    "cbrt": lambda x: mpmath.sign(x) * mpmath.cbrt(abs(x)),
    "rsqrt": lambda x: 1 / mpmath.sqrt(x),
    "sin": mpmath.sin, "cos": mpmath.cos, "tan": mpmath.tan, "asin": mpmath.asin,
    "acos": mpmath.acos, "atan": mpmath.atan, "atan2": mpmath.atan2, "sinh": mpmath.sinh,
    "cosh": mpmath.cosh, "tanh": mpmath.tanh, "asinh": mpmath.asinh, "acosh": mpmath.acosh,
    "atanh": mpmath.atanh, "abs": abs, "sigmoid": _sigmoid, "sign": _sign,
    "square": lambda x: x * x, "reciprocal": lambda x: 1 / x, "pow": mpmath.power,
    "hypot": mpmath.hypot, "maximum": max, "minimum": min,
}  # fmt: skip
ARITIES = {"atan2": 2, "pow": 2, "hypot": 2, "maximum": 2, "minimum": 2}
CONSTANTS = {"+pi": lambda: +mpmath.pi, "+e": lambda: +mpmath.e, "2*pi": lambda: 2 * mpmath.pi}
OPERATIONS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "**": mpmath.power,
}  # fmt: skip
COMPARISONS = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}  # fmt: skip


class Undefined(ArithmeticError):
    """The formula has no real value at the point (a division by zero, log of a negative)."""


def size(formula, limit: int) -> int:
    """How many nodes the formula has, written out as a tree; counting stops past `limit`, so a
    formula that shares its parts is measured in time bounded by the limit."""
    count, pending = 0, [formula]
    while pending and count <= limit:
        node = pending.pop()
        count += 1
        pending += _parts(node)
    return count


def _parts(node) -> list:
    """The formulas a node is made of."""
    if node[0] in ("function", "logic"):
        return list(node[2])
    return [part for part in node[1:] if isinstance(part, tuple)]


def value(formula, point: tuple, shapes: tuple):
    """The formula at one element of the point (each parameter a number); `shapes` gives each
    parameter's shape for counts. Raises Undefined where it has no real value."""
    with mpmath.workdps(DIGITS):
        return _value(formula, point, shapes)


def _value(node, point, shapes):
    kind = node[0]
    if kind == "number":
        return _real(_number(node[1]))
    if kind == "argument":
        return point[node[1]]
    if kind == "flat":
        return _value(node[1], point, shapes)
    if kind == "count":
        shape = shapes[node[1]]
        if node[2] is None:
            return mpmath.mpf(math.prod(shape))
        shape = (math.prod(shape),) if node[3] else shape
        if not -len(shape) <= node[2] < len(shape):
            raise Undefined(f"a size along dimension {node[2]} of a {len(shape)}-d tensor")
        return mpmath.mpf(shape[node[2]])
    if kind == "choice":
        taken = node[2] if _truth(_value(node[1], point, shapes)) else node[3]
        return _value(taken, point, shapes)
    if kind == "logic":
        results = (_truth(_value(part, point, shapes)) for part in node[2])
        return all(results) if node[1] == "and" else any(results)
    if kind == "not":
        return not _truth(_value(node[1], point, shapes))
    if kind == "compare":
        a, b = _value(node[2], point, shapes), _value(node[3], point, shapes)
        return COMPARISONS[node[1]](a, b)
    if kind == "negative":
        return _real(-_value(node[1], point, shapes))
    arguments = [
        _value(part, point, shapes) for part in (node[2:] if kind == "operation" else node[2])
    ]
    try:
        if kind == "operation":
            return _real(OPERATIONS[node[1]](*arguments))
        return _real(FUNCTIONS[node[1]](*arguments))
    except (ZeroDivisionError, ValueError, OverflowError) as error:
        raise Undefined(str(error) or type(error).__name__) from None


def _number(text: str):
    """A literal as written, or one of the constants pi, e, 2*pi."""
    if text in CONSTANTS:
        return CONSTANTS[text]()
    return mpmath.mpf(text)


def _truth(result) -> bool:
    if isinstance(result, bool):
        return result
    return result != 0


def _real(result):
    """The result, if it is a finite real number."""
    if isinstance(result, bool):
        result = mpmath.mpf(result)
    if not isinstance(result, mpmath.mpf) or not mpmath.isfinite(result):
        raise Undefined("not a finite real number")
    if abs(result) > LARGEST_NUMBER:  # no derivative here is that large; exp of it would hang
        raise Undefined("a number past 1e300")
    return result


def agrees(got, wanted) -> bool:
    """Whether two values agree to all but the last few of the digits they are computed with."""
    with mpmath.workdps(DIGITS):
        return abs(got - wanted) <= mpmath.mpf(10) ** (30 - DIGITS) * max(1, abs(wanted))
