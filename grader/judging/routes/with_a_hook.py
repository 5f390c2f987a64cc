"""With a hook: code that registers none."""

import ast

from grader.judging.syntax import attribute_names

HOOK_ATTRIBUTES = {"register_hook", "register_full_backward_hook", "register_backward_hook"}


def flag(statements: list[ast.AST]) -> str | None:
    """Why the code is no answer with a hook, or None."""
    if attribute_names(statements) & HOOK_ATTRIBUTES:
        return None
    return "the exercise asks for a hook, but the code registers none"
