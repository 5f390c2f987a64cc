"""Reaching for the interpreter's or the grader's internals: frames, `gc`, `ctypes`, IPython's
shell, `grader` beyond `grader.checks` and `grader.variants` (the key cell's), function internals
such as `__defaults__`, computed attribute names, assignments on torch. No answer needs them,
and they are how a submission reads or changes what runs beside it, so a cell that reaches for
them earns its exercise nothing and is flagged for the instructor (the one reading that decides;
it cannot see every path, which is why no other rule rests on reading)."""

import ast
import functools
import importlib
import importlib.util
import re
import sys
import types

from grader.judging.syntax import root_name, walk

INTERNAL_MODULES = {
    "gc", "inspect", "ctypes", "_ctypes", "cffi", "builtins", "importlib", "dis", "marshal",
    "code", "codeop", "IPython", "ipykernel", "pyseccomp", "faulthandler", "tracemalloc",
    # a thread of its own runs with autograd on, whatever grad mode the caller set
    "threading", "_thread", "concurrent", "multiprocessing",
    # frames by another way: traceback.walk_stack, a debugger's view of a frame's locals
    "traceback", "pdb", "bdb",
    # code the reading never sees, run by another way: a pickle calls whatever it names
    "pickle", "_pickle", "copyreg", "shelve", "dill", "cloudpickle", "runpy", "pkgutil",
    "zipimport",
}  # fmt: skip
STUDENT_MODULES = {"grader.checks", "grader.variants"}  # what a lesson's own cells import
INTERNAL_CALLS = {"eval", "exec", "compile", "__import__", "globals", "locals", "vars"}
INTERNAL_ATTRIBUTES = {
    # functions, classes and modules from the inside
    "__globals__", "__code__", "__defaults__", "__kwdefaults__", "__closure__", "__builtins__",
    "__dict__", "__subclasses__", "__bases__", "__mro__", "__getattribute__", "__self__",
    "__func__", "__wrapped__", "__traceback__", "__loader__", "__spec__",
    # frames and code objects
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next",
    "gi_frame", "cr_frame", "ag_frame", "co_consts", "co_code", "co_names", "walk_stack",
    "walk_tb", "cell_contents", "curframe", "curframe_locals", "botframe",
    # the interpreter's and torch's own machinery
    "_getframe", "_current_frames", "settrace", "setprofile", "addaudithook", "meta_path",
    "path_hooks", "_C", "_execution_engine", "attrgetter", "methodcaller",
}  # fmt: skip
MODES = {"TorchFunctionMode", "TorchDispatchMode", "BaseTorchFunctionMode"}
# torch.library registers kernels that replace torch's own operators (a `detach` that returns
# zeros, say): no answer needs it, and it changes how torch computes for everything after it
TORCH_MACHINERY = {"library", "Library"}
SYS_ATTRIBUTES = {"modules", "displayhook", "excepthook", "meta_path"}
NAME_BUILTINS = {"getattr", "setattr", "delattr", "hasattr"}
MAGIC_METHODS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}  # what %magics become
# a str.format template reads attributes too: "{0.__closure__}".format(f)
TEMPLATE_ATTRIBUTE = re.compile(r"\{[^{}]*?\.\s*(\w+)")


def torch_names(bindings: dict[str, list[ast.AST]]) -> set[str]:
    """The notebook's names for torch or a part of it (`import torch as t`, `t = torch.nn`)."""
    return module_names(bindings, "torch")


def module_names(bindings: dict[str, list[ast.AST]], top: str) -> set[str]:
    """The notebook's names for module `top` or a part of it (`import sys as s`, `s = sys`)."""
    names = {top}
    for name, statements in bindings.items():
        for statement in statements:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                module = getattr(statement, "module", None) or ""
                imported = [module] + [a.name for a in statement.names]
                if any(m.split(".")[0] == top for m in imported):
                    names.add(name)
            elif isinstance(statement, ast.Assign) and _is_path_of(statement.value, top):
                names.add(name)
    return names


def _is_path_of(node: ast.AST, top: str) -> bool:
    """`torch` or `torch.a.b`: a name for the module itself or one of its parts, not a value."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == top


def grader_names(statements) -> dict[str, str]:
    """The names `statements` give the grader's modules and what they hold, with the dotted path
    each stands for: `import grader.checks` binds grader, `from grader import checks as c`
    binds c (grader.checks), `from grader.checks import sys` binds sys (grader.checks.sys)."""
    names = {}
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "grader":
                    names[alias.asname or "grader"] = alias.name if alias.asname else "grader"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "grader":
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def reaches(
    tree: ast.Module,
    torch_names: set[str],
    grader_paths: dict[str, str] | None = None,
    sys_names: frozenset[str] | set[str] = frozenset({"sys"}),
) -> str | None:
    """How the cell reaches for the interpreter's or the grader's internals, or None.
    `grader_paths`: the notebook's names for the grader's modules (`grader_names`); `sys_names`:
    its names for sys (`module_names`)."""
    called = {id(n.func) for n in walk(tree) if isinstance(n, ast.Call)}
    paths = {**(grader_paths or {}), **grader_names(walk(tree))}
    inner = {id(n.value) for n in walk(tree) if isinstance(n, ast.Attribute)}  # read whole
    for node in walk(tree):
        beyond = None if id(node) in inner else _beyond_student_modules(_grader_path(node, paths))
        if beyond:
            return f"reaches {beyond} through the grader's modules"
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "grader":
            for alias in node.names:
                if beyond := _beyond_student_modules(f"{node.module}.{alias.name}"):
                    return f"imports {beyond}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            modules = names if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.module in {"grader", "torch"}:
                modules = [f"{node.module}.{name}" for name in names]
            imported = {a.name for a in node.names} & (INTERNAL_ATTRIBUTES | MODES)
            from_sys = {a.name for a in node.names} & SYS_ATTRIBUTES
            if isinstance(node, ast.ImportFrom) and node.module == "sys" and from_sys:
                return f"uses sys.{sorted(from_sys)[0]}"
            if isinstance(node, ast.ImportFrom) and imported:
                return f"imports {sorted(imported)[0]}"
            if isinstance(node, ast.ImportFrom) and node.level:
                return "imports from a module beside the notebook, which no lesson has"
            for module in modules:
                top = module.split(".")[0]
                if top in INTERNAL_MODULES:
                    return f"imports {module}"
                if not _installed(top):
                    return (
                        f"imports {module}, which is neither Python's nor an installed package "
                        "(a module written while the notebook runs is code the reading never sees)"
                    )
                if top == "torch" and any(part.startswith("_") for part in module.split(".")):
                    return f"imports torch's private {module}"
                if top == "torch" and set(module.split(".")) & TORCH_MACHINERY:
                    return f"imports {module}, which replaces torch's own operators"
                if top == "grader" and module not in STUDENT_MODULES:
                    return f"imports {module}"
        elif isinstance(node, ast.Name) and node.id in NAME_BUILTINS and id(node) not in called:
            return f"passes {node.id} around as a value"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in INTERNAL_CALLS:
                return f"calls {name}()"
            if name in NAME_BUILTINS and _computed_on_torch(node, torch_names):
                return f"calls {name}() with a computed name on torch"
            if name in NAME_BUILTINS and _reads_sys(node, sys_names):
                return f"uses sys.{node.args[1].value}"
            if name in NAME_BUILTINS and len(node.args) >= 2 and not _written(node.args[1]):
                return f"calls {name}() with a name not written out"
            if name == "get_ipython" and not _runs_a_magic(tree, node):
                return "uses the notebook's shell (get_ipython())"
        elif isinstance(node, ast.Constant) and node.value in INTERNAL_ATTRIBUTES:
            return f"names {node.value} in a string"
        elif isinstance(node, ast.Constant) and (read := _template_reads(node.value)):
            return f"reads .{read} through a format template"
        elif (
            isinstance(node, ast.Attribute | ast.Name)
            and (getattr(node, "attr", None) or getattr(node, "id", None)) in MODES
        ):
            return "uses a torch function or dispatch mode, which intercepts every torch call"
        elif isinstance(node, ast.Attribute) and node.attr in INTERNAL_ATTRIBUTES:
            return f"uses .{node.attr}"
        elif isinstance(node, ast.Attribute) and node.attr in TORCH_MACHINERY:
            if root_name(node) in torch_names:
                return f"uses {ast.unparse(node)}, which replaces torch's own operators"
        elif isinstance(node, ast.Attribute) and _private_torch(node, torch_names):
            return f"uses torch's private {ast.unparse(node)}"
        elif isinstance(node, ast.Attribute) and node.attr in SYS_ATTRIBUTES:
            if _names_sys(node.value, sys_names):
                return f"uses sys.{node.attr}"
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            changed = [
                t for t in targets if isinstance(t, ast.Attribute) and root_name(t) in torch_names
            ]
            if changed:
                return "changes torch itself (assigns to one of its attributes)"
    return None


def _reads_sys(call: ast.Call, sys_names) -> bool:
    """getattr(sys, "modules") and the like: a written-out name, but one of sys's internals."""
    if len(call.args) < 2 or not _names_sys(call.args[0], sys_names):
        return False
    return _written(call.args[1]) and call.args[1].value in SYS_ATTRIBUTES


def _names_sys(node: ast.AST, sys_names) -> bool:
    """sys, a name for it, or a module's attribute sys (os.sys)."""
    return (isinstance(node, ast.Name) and node.id in sys_names) or (
        isinstance(node, ast.Attribute) and node.attr == "sys"
    )


def _grader_path(node: ast.AST, paths: dict[str, str]) -> str | None:
    """The dotted path a name or an attribute path stands for, where it starts from a name of
    the grader's modules (`paths`), or None."""
    if not isinstance(node, ast.Attribute | ast.Name):
        return None
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in paths:
        return None
    return ".".join([paths[node.id], *reversed(parts)])


@functools.lru_cache(maxsize=4096)
def _beyond_student_modules(path: str | None) -> str | None:
    """The first module along `path` (`grader.checks.sys.modules`) that is not one of the
    modules a lesson's own cells import (`STUDENT_MODULES` and theirs), or None. The path is
    followed through the modules along it, as they are in this process (no other object's
    attribute is read here: that could run its code): any other module, torch's or the
    grader's, is reached around an import the reading would see."""
    if not path or path.split(".")[0] != "grader":
        return None
    parts = path.split(".")
    held = sys.modules.get("grader")
    for length in range(2, len(parts) + 1):
        name = ".".join(parts[:length])
        found = held.__dict__.get(parts[length - 1])
        if found is None and _is_module(name):  # not imported here: the module itself
            if not _student_module(name):
                return name
            found = importlib.import_module(name)
        if not isinstance(found, types.ModuleType):
            return None  # a function, a class, a value of the module: what it offers
        if not _student_module(found.__name__):
            return name
        held = found
    return None


def _is_module(name: str) -> bool:
    """Whether the grading process finds a module `name` (importing its parents, not it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _student_module(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in STUDENT_MODULES)


@functools.lru_cache(maxsize=1024)
def _installed(top: str) -> bool:
    """Whether `top` is a module of Python's or of an installed package, as the grading process
    finds it (the lessons ship no module of their own)."""
    return top in sys.stdlib_module_names or top in sys.builtin_module_names or _is_module(top)


def _private_torch(node: ast.Attribute, torch_names: set[str]) -> bool:
    """`torch._functorch…`: a part of torch behind its public API (a path around its rules)."""
    private = node.attr.startswith("_") and not node.attr.startswith("__")
    return private and _is_path_of(node, "torch") and root_name(node) in torch_names


def _computed_on_torch(call: ast.Call, torch_names: set[str]) -> bool:
    """getattr(torch…, name) with the name not written out, or setattr/delattr on torch."""
    if len(call.args) < 2 or root_name(call.args[0]) not in torch_names:
        return False
    return call.func.id != "getattr" or not isinstance(call.args[1], ast.Constant)


def _template_reads(value) -> str | None:
    """The internal attribute a format template's field reads ("{0.__closure__}"), or None."""
    if not isinstance(value, str | bytes):
        return None
    text = value if isinstance(value, str) else value.decode("latin-1")
    for name in TEMPLATE_ATTRIBUTE.findall(text):
        if name in INTERNAL_ATTRIBUTES:
            return name
    return None


def _written(node: ast.AST) -> bool:
    """A name written out in the code (a string constant): one the reading can see."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _runs_a_magic(tree: ast.Module, call: ast.Call) -> bool:
    """Whether this get_ipython() is one IPython wrote for a %magic or !command."""
    for node in walk(tree):
        if isinstance(node, ast.Attribute) and node.value is call:
            return node.attr in MAGIC_METHODS
    return False
