"""The tree shows the trust boundary: the sandbox's two sides share only the wire."""

import ast
from pathlib import Path

import grader

SANDBOX = Path(grader.__file__).parent / "sandbox"
FORBIDDEN = ("grader.grading", "grader.judging", "grader.commands")


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, as absolute dotted names (`from a import b` gives a and a.b)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_sandbox_imports_nothing_of_grading_judging_or_the_commands():
    """No module under grader/sandbox imports the packages that use it."""
    found = {
        (str(path.relative_to(SANDBOX)), name)
        for path in SANDBOX.rglob("*.py")
        for name in _imports(path)
        if any(_under(name, package) for package in FORBIDDEN)
    }
    assert found == set()


def test_inside_and_outside_share_only_the_wire():
    """Modules under inside/ import nothing from outside/, and the other way round."""
    found = set()
    for side in ("inside", "outside"):
        allowed = (f"grader.sandbox.{side}", "grader.sandbox.wire")
        for path in (SANDBOX / side).rglob("*.py"):
            for name in _imports(path):
                crosses = _under(name, "grader.sandbox") and name != "grader.sandbox"
                if crosses and not any(_under(name, package) for package in allowed):
                    found.add((side, path.name, name))
    assert found == set()


def test_every_sandbox_module_says_where_it_runs():
    """Each module under inside/ and outside/ opens its docstring with the process it runs in."""
    unsaid = [
        str(path.relative_to(SANDBOX))
        for side, opening in (("inside", "Runs inside the sandbox"), ("outside", "Runs in the "))
        for path in (SANDBOX / side).glob("*.py")
        if not (ast.get_docstring(ast.parse(path.read_text())) or "").startswith(opening)
    ]
    assert unsaid == []
