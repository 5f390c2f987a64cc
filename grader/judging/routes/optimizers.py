"""With or without a torch.optim optimizer, as the solution: code that does otherwise."""

import ast
import functools

from grader.judging.syntax import nodes, walk


def flag_one(statements: list[ast.AST]) -> str | None:
    """The optimizer the code makes where the exercise asks for the update by hand, or None."""
    made = made_optimizers(statements)
    if not made:
        return None
    return f"the exercise asks for the update without an optimizer, but the code uses {made[0]}"


def flag_without_one(statements: list[ast.AST]) -> str | None:
    """Why the code is no answer with an optimizer, or None."""
    if made_optimizers(statements):
        return None
    return "the exercise asks for a torch.optim optimizer, but the code makes none"


def made_optimizers(statements: list[ast.AST]) -> list[str]:
    """The torch.optim optimizers the code makes: `torch.optim.SGD(…)`, `optim.Adam(…)`, or a
    name imported from torch.optim."""
    names = set().union(*map(_optim_names_in, statements))
    calls = [n for n in nodes(statements) if isinstance(n, ast.Call)]
    return [ast.unparse(c.func) for c in calls if _makes_an_optimizer(c, names)]


@functools.lru_cache(maxsize=65536)  # trees are shared (syntax.parsed): each is walked once
def _optim_names_in(statement: ast.AST) -> frozenset[str]:
    """The statement's names for torch.optim and what it imports from it."""
    names = set()
    for node in walk(statement):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch.optim"):
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "torch":
            names |= {a.asname or a.name for a in node.names if a.name == "optim"}
        elif isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == "torch.optim" and a.asname}
    return frozenset(names)


def _makes_an_optimizer(call: ast.Call, names: set[str]) -> bool:
    """`torch.optim.SGD(…)`, `optim.Adam(…)`, or a call of a name in `names`."""
    func, path = call.func, []
    while isinstance(func, ast.Attribute):
        path.append(func.attr)
        func = func.value
    root = func.id if isinstance(func, ast.Name) else None
    return "optim" in path[1:] or root in names | {"optim"}
