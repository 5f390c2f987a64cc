"""Without torch's engine, for a backward pass run by hand: code that starts the engine.

A walk calls `grad_fn` nodes, reads `next_functions` and fills `.grad` itself: none of that is
flagged. `backward()`, `torch.autograd` (its `grad`, `backward`, `GradientEdge`),
`retain_grad()` and `torch.func` are the engine run for the answer.
"""

import ast

from grader.judging.syntax import attribute_names, nodes, root_name

ENGINE_ATTRIBUTES = {"backward", "autograd", "retain_grad", "GradientEdge", "vjp", "jacrev"}
ENGINE_MODULES = ("torch.autograd", "torch.func", "functorch")


def flag(statements: list[ast.AST]) -> str | None:
    """How the code starts torch's engine where the exercise asks for the walk by hand, or None."""
    uses = sorted(engine_uses(statements))
    return uses and f"starts torch's engine ({uses[0]}) where the exercise asks for a walk by hand"


def engine_uses(statements: list[ast.AST]) -> set[str]:
    """How the code reaches torch's engine: attributes, names and imports."""
    uses = {f".{a}" for a in attribute_names(statements) & ENGINE_ATTRIBUTES}
    for node in nodes(statements):
        if isinstance(node, ast.Constant) and node.value in ENGINE_ATTRIBUTES:
            uses.add(repr(node.value))  # getattr(torch, "autograd")
        if isinstance(node, ast.Name) and node.id in {"autograd", "functorch", "GradientEdge"}:
            uses.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr == "func" and root_name(node) == "torch":
            uses.add("torch.func")
        elif isinstance(node, ast.Import):
            uses.update(a.name for a in node.names if a.name.startswith(ENGINE_MODULES))
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [f"{node.module}.{a.name}" for a in node.names]
            uses.update(m for m in modules if m.startswith(ENGINE_MODULES))
    return uses
