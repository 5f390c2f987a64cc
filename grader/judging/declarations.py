"""Rules are data: what a lesson's probes declare at their top level (`BY_HAND`, `HOW`), read as
Python literals, never by running or re-reading the probes' code."""

import ast
import functools


@functools.lru_cache(maxsize=64)
def declared(probes_source: str, name: str) -> dict:
    """The literal the probes assign to `name`, or {} where they assign none."""
    for statement in ast.parse(probes_source).body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == name for target in statement.targets
        ):
            return ast.literal_eval(statement.value)
    return {}
