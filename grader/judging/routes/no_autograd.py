"""By hand, for work that is no formula of its inputs: code that refers to autograd."""

import ast

from grader.judging.syntax import attribute_names, nodes, root_name

AUTOGRAD_ATTRIBUTES = {
    "backward", "autograd", "grad", "jacobian", "hessian", "vjp", "jvp", "jacrev", "jacfwd",
    "grad_and_value", "linearize", "make_dual", "hvp", "vhp",
}  # fmt: skip
AUTOGRAD_MODULES = ("torch.autograd", "torch.func", "functorch")
GRAD_MODES = {"enable_grad", "set_grad_enabled"}
GRAPH_ATTRIBUTES = {"grad_fn", "next_functions"}  # autograd's own backward nodes, called by hand


def flag(statements: list[ast.AST]) -> str | None:
    """How the code refers to autograd where the exercise asks for the result by hand, or None."""
    uses = sorted(autograd_uses(statements))
    return uses and f"uses autograd ({uses[0]}) where the exercise asks for the result by hand"


def autograd_uses(statements: list[ast.AST]) -> set[str]:
    """How the code refers to autograd: attributes, names and imports."""
    named = AUTOGRAD_ATTRIBUTES | GRAD_MODES | GRAPH_ATTRIBUTES
    uses = {f".{a}" for a in attribute_names(statements) & named}
    for node in nodes(statements):
        if isinstance(node, ast.Constant) and node.value in named:  # getattr(torch, "autograd")
            uses.add(repr(node.value))
        if isinstance(node, ast.Name) and node.id in {"autograd", "functorch"} | GRAD_MODES:
            uses.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr == "func" and root_name(node) == "torch":
            uses.add("torch.func")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            # `import torch.func` binds `torch` alone (its uses show as attributes), so a cell
            # that uses torch for other work does not reach autograd through it
            modules = [a.name for a in node.names if a.asname or "." not in a.name]
            modules = modules if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                modules = [f"{node.module}.{a.name}" for a in node.names]
            uses.update(m for m in modules if m.startswith(AUTOGRAD_MODULES))
    return uses
