"""The answer's code as syntax, shared by the judge's readings: each cell parsed once (IPython's
%magics and !commands turned into the calls they run), and what its top-level statements bind."""

import ast
import functools

from IPython.core.inputtransformer2 import TransformerManager


@functools.lru_cache(maxsize=4096)  # lesson cells are the same in every submission
def parsed(source: str) -> ast.Module | None:
    """The cell as Python (IPython's %magics and !commands turned into calls, when it has them),
    or None. The tree is shared: nothing here changes it."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    try:
        return ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the cell fails when it runs; there is nothing to read


def bindings_of(trees: list[ast.Module]) -> dict[str, list[ast.AST]]:
    """Every statement that binds a name at the top of a cell, by name."""
    bound: dict[str, list[ast.AST]] = {}
    for tree in trees:
        for statement in tree.body:
            for name in bound_names(statement):
                bound.setdefault(name, []).append(statement)
    return bound


@functools.lru_cache(maxsize=65536)  # trees are shared (parsed): each statement is read once
def bound_names(statement: ast.AST) -> frozenset[str]:
    """The names a top-level statement binds (not those its functions or classes bind inside)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return frozenset({statement.name})
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return frozenset((a.asname or a.name).split(".")[0] for a in statement.names)
    bound, pending = set(), [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif not isinstance(node, ast.Lambda | ast.comprehension):
            pending += ast.iter_child_nodes(node)
    return frozenset(bound)


@functools.lru_cache(maxsize=65536)  # trees are shared (parsed), and each rule walks them again
def walk(node: ast.AST) -> tuple[ast.AST, ...]:
    """Every node below `node` and itself, in `ast.walk`'s order."""
    return tuple(ast.walk(node))


def nodes(statements: list[ast.AST]):
    """Every node of the statements."""
    for statement in statements:
        yield from walk(statement)


def attribute_names(statements: list[ast.AST]) -> set[str]:
    """The attribute names the statements use: `x.grad` gives "grad"."""
    return {n.attr for n in nodes(statements) if isinstance(n, ast.Attribute)}


def called_name(func: ast.AST) -> str | None:
    """The name a call's function goes by: `f` for `f(…)` and `a.f(…)`."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def root_name(node: ast.AST) -> str | None:
    """The name an attribute path, call or subscript starts from: `torch` in `torch.a(b)[0]`."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
