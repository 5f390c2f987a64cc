"""Your own engine, in plain Python: code that reaches for torch where the exercise asks for it."""

import ast

from grader.judging.syntax import nodes

MODULES = ("torch", "functorch")


def flag(statements: list[ast.AST]) -> str | None:
    """How the code reaches torch, where the exercise asks for an engine of its own, or None."""
    uses = sorted(torch_uses(statements))
    return uses and f"uses torch ({uses[0]}) where the exercise asks for an engine of your own"


def torch_uses(statements: list[ast.AST]) -> set[str]:
    """The names and imports by which the code reaches torch (aliases come with their imports,
    which the statements an answer uses include)."""
    uses = set()
    for node in nodes(statements):
        if isinstance(node, ast.Name) and node.id in MODULES:
            uses.add(node.id)
        elif isinstance(node, ast.Import):
            uses.update(a.name for a in node.names if a.name.split(".")[0] in MODULES)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in MODULES:
            uses.add(node.module)
    return uses
