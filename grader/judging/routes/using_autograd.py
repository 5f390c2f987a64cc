"""Using autograd: code that never differentiates anything computed from its function's inputs."""

import ast

from grader.judging.routes.no_autograd import AUTOGRAD_ATTRIBUTES, AUTOGRAD_MODULES
from grader.judging.syntax import called_name, nodes

ROUNDS = 3  # values computed from values computed from the inputs


def flag(statements: list[ast.AST]) -> str | None:
    """Why the code does not look like it takes its result from autograd, or None."""
    if _differentiates_its_inputs(statements):
        return None
    return (
        "the exercise asks for this using autograd, but the code never differentiates anything "
        "computed from its inputs"
    )


def _differentiates_its_inputs(statements: list[ast.AST]) -> bool:
    """Whether some function of the code calls autograd on a value computed from its own
    parameters: a backward() on a throwaway leaf of its own does not count."""
    kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    functions = [n for n in nodes(statements) if isinstance(n, kinds)]
    names = AUTOGRAD_ATTRIBUTES | _autograd_aliases(statements)
    for function in functions:
        inside = list(ast.walk(function))  # walked ROUNDS + 2 times
        tainted = {a.arg for a in inside if isinstance(a, ast.arg)}
        for _ in range(ROUNDS):
            for node in inside:
                targets, value = _bound_by(node)
                if value is not None and _mentions(value, tainted):
                    tainted |= {
                        n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
                    }
        for call in inside:
            if isinstance(call, ast.Call) and any(
                _mentions(operand, tainted) for operand in _autograd_operands(call, names)
            ):
                return True
    return False


def _bound_by(node: ast.AST) -> tuple[list, ast.AST | None]:
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


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _autograd_aliases(statements: list[ast.AST]) -> set[str]:
    """Names the code gives autograd's functions: `from torch.autograd import grad as g`,
    `g = torch.autograd.grad`."""
    aliases = set()
    for node in nodes(statements):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(AUTOGRAD_MODULES):
            aliases |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Assign) and called_name(node.value) in AUTOGRAD_ATTRIBUTES:
            aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return aliases


def _autograd_operands(call: ast.Call, names: set[str]) -> list[ast.AST]:
    """What an autograd call differentiates: the tensor before `.backward`, the arguments of
    `torch.autograd.grad`, `torch.func.grad(f)(x)` and the like; nothing for another call."""
    func = call.func
    inner = func if isinstance(func, ast.Call) else None  # torch.func.grad(f)(x)
    named = called_name(inner.func if inner else func)
    if named not in names:
        return []
    operands = [*call.args, *(kw.value for kw in call.keywords)]
    if inner is not None:
        operands += inner.args
    if named == "backward" and isinstance(func, ast.Attribute):
        operands.append(func.value)
    return operands
