"""Differentiated as written: code that puts a gradient of its own in autograd's place (a
torch.autograd.Function, a hook) or cuts the graph (detach, .data, no_grad)."""

import ast

from grader.judging.syntax import attribute_names, called_name, nodes

CUTTING = {"detach", "detach_", "data", "no_grad", "inference_mode", "set_grad_enabled"}
GRAD_MODE_CUTS = {"no_grad", "inference_mode", "set_grad_enabled"}  # called by a bare name
HOOKING = {
    "register_hook", "register_prehook", "register_full_backward_hook", "register_backward_hook",
    "register_full_backward_pre_hook", "register_post_accumulate_grad_hook",
    "saved_tensors_hooks", "save_on_cpu", "register_autograd", "custom_op",
    "register_multi_grad_hook",
}  # fmt: skip
FUNCTION_CLASSES = {"Function", "InplaceFunction", "NestedIOFunction", "once_differentiable"}


def flag(statements: list[ast.AST]) -> str | None:
    """How the code writes a gradient of its own, or None."""
    own = _writes_a_gradient(statements)
    return (
        own
        and f"the exercise asks for torch operations differentiated as written, but the code {own}"
    )


def _writes_a_gradient(statements: list[ast.AST]) -> str | None:
    for node in nodes(statements):
        if isinstance(node, ast.ClassDef):
            methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            bases = {called_name(b) for b in node.bases}
            if methods & {"backward", "vjp", "jvp", "setup_context"} or bases & FUNCTION_CLASSES:
                return f"defines a backward of its own (class {node.name})"
    named = attribute_names(statements)
    named |= {n.value for n in nodes(statements) if isinstance(n, ast.Constant)} & HOOKING
    named |= {a.name for n in nodes(statements) if isinstance(n, ast.ImportFrom) for a in n.names}
    calls = {n.id for n in nodes(statements) if isinstance(n, ast.Name)} & GRAD_MODE_CUTS
    hooks = sorted(named & (HOOKING | FUNCTION_CLASSES))
    if hooks:
        return f"writes a gradient of its own ({hooks[0]})"
    cuts = sorted((named & CUTTING) | calls)
    return f"cuts the graph ({cuts[0]})" if cuts else None
