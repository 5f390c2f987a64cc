"""How an answer was worked out, read from its source in the grading process.

Runs outside the submission's process: whatever the submission changes while it runs, it cannot
change its source as submitted. An exercise that says "by hand", "using autograd" or "with a
hook" is probed with `probing.by_hand`, `probing.autograd_called` or `probing.hooks_registered`
on a function of the student's (`student.NAME`); those in-process checks are a second signal,
which an answer can measure or get around (a copy of `torch.autograd.grad` taken before the
check). Here the rules the probes declare (`HOW`) are decided from the answer's code, with every
name of the notebook it refers to, read for what it calls:

- "by hand", for a derivative: not read here; the answer is a formula the grader evaluates
  (`grader.judging.by_hand`). For other by-hand work (summing a gradient to a shape, a finite
  difference) the code referring to autograd is only flagged for the instructor;
- "using autograd": it refers to one; "with a hook": it registers one.

An answer cell that reaches for the interpreter's or the grader's internals (frames, `gc`,
`ctypes`, IPython's shell, `grader` beyond `grader.checks`, function internals such as
`__defaults__`, computed attribute names or assignments on torch) earns nothing for its exercise
and is flagged for the instructor. A "using autograd" answer must also take its result from
autograd (`gradient_flow`). What a static reading cannot promise: that the computation an answer
differentiates is the exercise's (a leaf times a formula typed by hand has that formula as its
gradient), nor that it sees all the code (a cell magic's body, a module written at run time).
"""

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass

from grader.cells import autograded_tests, grade_id, is_answer, is_lesson_code
from grader.judging import call_counts, declarations, gradient_flow
from grader.judging.syntax import bindings_of, bound_names, parsed

BY_HAND, USING_AUTOGRAD, WITH_A_HOOK = "by hand", "using autograd", "with a hook"
WITH_AN_OPTIMIZER, WITHOUT_AN_OPTIMIZER = "with an optimizer", "without an optimizer"
WITH_OR_WITHOUT_AN_OPTIMIZER = "with or without an optimizer, as the solution"
AS_WRITTEN = "differentiated as written"  # no gradient of its own: no Function, hook, detach
AS_OFTEN_AS_ASKED = "as often as asked"  # calls of autograd, or of a function it is given
DECLARATION = "HOW"  # what the probes name their rules
HOW_RULES = {BY_HAND, USING_AUTOGRAD, WITH_A_HOOK, WITH_OR_WITHOUT_AN_OPTIMIZER, AS_WRITTEN}

AUTOGRAD_ATTRIBUTES = {
    "backward", "autograd", "grad", "jacobian", "hessian", "vjp", "jvp", "jacrev", "jacfwd",
    "grad_and_value", "linearize",
}  # fmt: skip
AUTOGRAD_MODULES = ("torch.autograd", "torch.func", "functorch")
GRAD_MODES = {"enable_grad", "set_grad_enabled"}
GRAPH_ATTRIBUTES = {"grad_fn", "next_functions"}  # autograd's own backward nodes, called by hand
CUTTING = {"detach", "detach_", "data", "no_grad", "inference_mode", "set_grad_enabled"}
GRAD_MODE_CUTS = {"no_grad", "inference_mode", "set_grad_enabled"}  # called by a bare name
HOOKING = {
    "register_hook", "register_prehook", "register_full_backward_hook", "register_backward_hook",
    "register_full_backward_pre_hook", "register_post_accumulate_grad_hook",
    "saved_tensors_hooks", "save_on_cpu", "register_autograd", "custom_op",
    "register_multi_grad_hook",
}  # fmt: skip
FUNCTION_CLASSES = {"Function", "InplaceFunction", "NestedIOFunction", "once_differentiable"}
HOOK_ATTRIBUTES = {"register_hook", "register_full_backward_hook", "register_backward_hook"}

INTERNAL_MODULES = {
    "gc", "inspect", "ctypes", "_ctypes", "cffi", "builtins", "importlib", "dis", "marshal",
    "code", "codeop", "IPython", "ipykernel", "pyseccomp", "faulthandler", "tracemalloc",
    # a thread of its own runs with autograd on, whatever grad mode the caller set
    "threading", "_thread", "concurrent", "multiprocessing",
    # frames by another way: traceback.walk_stack, a debugger's view of a frame's locals
    "traceback", "pdb", "bdb",
}  # fmt: skip
INTERNAL_CALLS = {"eval", "exec", "compile", "__import__", "globals", "locals", "vars"}
INTERNAL_ATTRIBUTES = {
    # functions, classes and modules from the inside
    "__globals__", "__code__", "__defaults__", "__kwdefaults__", "__closure__", "__builtins__",
    "__dict__", "__subclasses__", "__bases__", "__mro__", "__getattribute__", "__self__",
    "__func__", "__wrapped__", "__traceback__", "__loader__", "__spec__",
    # frames and code objects
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next",
    "gi_frame", "cr_frame", "ag_frame", "co_consts", "co_code", "co_names", "walk_stack",
    "walk_tb", "curframe", "curframe_locals", "botframe",
    # the interpreter's and torch's own machinery
    "_getframe", "_current_frames", "settrace", "setprofile", "addaudithook", "meta_path",
    "path_hooks", "_C", "_execution_engine", "attrgetter", "methodcaller",
}  # fmt: skip
SYS_ATTRIBUTES = {"modules", "displayhook", "excepthook", "meta_path"}
NAME_BUILTINS = {"getattr", "setattr", "delattr", "hasattr"}
MAGIC_METHODS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}  # what %magics become


@dataclass(frozen=True)
class Rule:
    """A test's rule on how the student's function `function` works its answer out."""

    test: str
    function: str
    how: str
    returns_gradient: bool = False  # the solution's function returns what autograd computed
    data: tuple[int, ...] = ()  # positions of the parameters the solution differentiates
    # (call_counts.AUTOGRAD or a parameter's position, how often the solution calls it)
    counts: tuple[tuple[str | int, int], ...] = ()


@dataclass(frozen=True)
class Reading:
    """What the source says: why a test earns nothing (by grade id), and what the instructor
    should look at (answer cell -> why)."""

    problems: dict[str, str]
    flags: dict[str, str]


def rules(probes_source: str, source_nb) -> tuple[Rule, ...]:
    """The "how" rules of a lesson, as its probes declare them (`HOW`: {test: {function: [rule,
    …]}}, each rule one of HOW_RULES, or {AS_OFTEN_AS_ASKED: [callee, …]} with callees "autograd"
    or a parameter's position), completed from the solution: whether it returns a gradient, what
    it differentiates, how often it calls each callee, and whether it builds an optimizer."""
    code = tuple(c.source for c in source_nb.cells if is_answer(c) or is_lesson_code(c))
    return _rules(probes_source, code)


@functools.lru_cache(maxsize=64)  # the same for every submission of a lesson
def _rules(probes_source: str, code: tuple[str, ...]) -> tuple[Rule, ...]:
    found = []
    for test, functions in declarations.declared(probes_source, DECLARATION).items():
        for function, declared in functions.items():
            for how in declared:
                if isinstance(how, dict):
                    callees = how[AS_OFTEN_AS_ASKED]
                    counts = tuple((c, 0) for c in callees)
                    found.append(Rule(test, function, AS_OFTEN_AS_ASKED, counts=counts))
                elif how in HOW_RULES:
                    found.append(Rule(test, function, how))
                else:
                    raise ValueError(f"probes' {DECLARATION}: {test}: unknown rule {how!r}")
    bindings = bindings_of(list(filter(None, map(parsed, code))))
    for index, rule in enumerate(found):
        solution = gradient_flow.defined(rule.function, bindings)
        if rule.how == WITH_OR_WITHOUT_AN_OPTIMIZER and bindings.get(rule.function):
            uses = _optimizers(_closure(bindings[rule.function], bindings))
            how = WITH_AN_OPTIMIZER if uses else WITHOUT_AN_OPTIMIZER  # as the solution does
            found[index] = rule = Rule(rule.test, rule.function, how)
        if rule.how == AS_OFTEN_AS_ASKED and solution:
            amounts = [(c, call_counts.calls(solution, c, bindings)) for c, _ in rule.counts]
            counts = tuple((c, amount) for c, amount in amounts if amount)  # None, NEVER: no rule
            found[index] = Rule(rule.test, rule.function, rule.how, counts=counts)
        if rule.how == USING_AUTOGRAD and solution:
            returns = gradient_flow.returns_gradient(solution, bindings)
            data = gradient_flow.differentiated_data(solution, bindings)
            found[index] = Rule(rule.test, rule.function, rule.how, returns, data)
    return tuple(dict.fromkeys(found))


def read(nb, rules_: tuple[Rule, ...], lesson_code: frozenset[str] = frozenset()) -> Reading:
    """Read the student's code (answer cells, cells they added, lesson cells they changed: every
    code cell not graded whose source is not among the instructor's `lesson_code`) with the
    lesson's own."""
    code = [i for i, c in enumerate(nb.cells) if (is_answer(c) or is_lesson_code(c))]
    mine = {i for i in code if is_answer(nb.cells[i]) or nb.cells[i].source not in lesson_code}
    trees = dict.fromkeys(range(len(nb.cells)))
    trees.update({i: parsed(nb.cells[i].source) for i in code if nb.cells[i].cell_type == "code"})
    bindings = bindings_of([trees[i] for i in code if trees[i]])
    answers = bindings_of([trees[i] for i in code if trees[i] and i in mine])
    torch_names = _torch_names(bindings)
    problems, flags = {}, {}
    names = {i: grade_id(nb.cells[i]) or f"cell {i + 1}" for i in mine if trees[i]}
    for index in sorted(names):
        reaches = _reaches_internals(trees[index], torch_names)
        if reaches:
            flags[names[index]] = reaches
    for test, cells in _exercises(nb, sorted(names), trees, bindings).items():
        reached = [flags[names[i]] for i in cells if names[i] in flags]
        if reached:
            problems[test] = (
                f"this answer {reached[0]}, which no answer needs: it earns nothing here, "
                "and your instructor will look at it"
            )
    for rule in rules_:
        if rule.test in problems or rule.function not in bindings:
            continue
        # the student's own definition, where there is one (a lesson cell may show another)
        own = answers.get(rule.function) or bindings[rule.function]
        reads = _code_closure if rule.how == AS_WRITTEN else _closure
        problem = _breaks(rule, reads(own, bindings))
        function = gradient_flow.defined(rule.function, {**bindings, rule.function: own})
        if not problem and rule.how == USING_AUTOGRAD and function is None:
            problem = (
                f"the exercise asks for this using autograd, but {rule.function} is not written "
                "as a plain function: define it with def (no decorator) or as a lambda"
            )
        elif not problem and rule.how == AS_OFTEN_AS_ASKED and function is not None:
            problem = _miscounted(function, bindings, rule)
        elif not problem and rule.how == USING_AUTOGRAD:
            made = _hand_made(function, bindings, rule)
            problem = made and (
                f"the exercise asks for this using autograd, but the code {made}: "
                "take the result from the gradient autograd computes for what the function "
                "computes"
            )
        if problem and rule.how == BY_HAND:  # not a formula: the reading can only flag it
            flags[rule.function] = problem
        elif problem:
            problems[rule.test] = problem
    return Reading(problems, flags)


def _exercises(nb, mine: list[int], trees: dict, bindings: dict) -> dict[str, list[int]]:
    """The student's cells each test's points answer for: the answer cell right before it, cells
    the student added or changed since the test before, and every cell that binds a name the
    answer uses. An answer cell of no test (a prediction) counts only where its names are used."""
    tests = autograded_tests(nb)
    statement_cells = {id(s): i for i in mine for s in trees[i].body}
    exercises, since = {}, []
    for index in range(len(nb.cells)):
        if index in mine:
            since.append(index)
        if index not in tests:
            continue
        answers = [i for i in since if is_answer(nb.cells[i])]
        own = answers[-1:]
        used = _closure([s for i in own for s in trees[i].body], bindings)
        cells = {i for i in since if i in own or not is_answer(nb.cells[i])}
        cells |= {statement_cells[id(s)] for s in used if id(s) in statement_cells}
        exercises[tests[index]] = sorted(cells)
        since = []
    return exercises


def _miscounted(function: ast.AST, bindings: dict, rule: Rule) -> str | None:
    """Why the function calls autograd, or a function it is given, more or less often than the
    solution does, or None."""
    names = gradient_flow.parameter_names(function)
    for callee, expected in rule.counts:
        if callee == call_counts.AUTOGRAD:
            what = "autograd (backward() or torch.autograd.grad)"
        else:
            what = names[callee] if callee < len(names) else f"parameter {callee + 1}"
        found = call_counts.calls(function, callee, bindings)
        problem = call_counts.problem(expected, found, what)
        if problem:
            return problem
    return None


def _hand_made(function: ast.AST, bindings: dict, rule: Rule) -> str | None:
    """What gradient_flow finds, or why it cannot read code nested this deep."""
    try:
        return gradient_flow.hand_made(function, bindings, rule.returns_gradient, rule.data)
    except (RecursionError, MemoryError):
        return "nests expressions too deeply to be read: split them into steps with names"


def _closure(start: list[ast.AST], bindings: dict[str, list[ast.AST]]) -> list[ast.AST]:
    """The statements `start`, and those that bind every notebook-level name they use."""
    statements, seen = list(start), set()
    pending = sorted({name for statement in start for name in _free_names(statement)})
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for statement in bindings.get(current, []):
            statements.append(statement)
            pending += sorted(_free_names(statement) - seen)
    return statements


@functools.lru_cache(maxsize=65536)  # trees are shared (syntax.parsed): each is read once
def _free_names(statement: ast.AST) -> frozenset[str]:
    """The names a statement loads that none of its functions binds for itself."""
    local = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.arg):
            local.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
    if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
        local -= bound_names(statement)  # the statement's own target is what it binds
    loaded = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
    return frozenset(loaded - local)


def _breaks(rule: Rule, statements: list[ast.AST]) -> str | None:
    """Why the code breaks the rule, or None."""
    uses = sorted(_autograd_uses(statements))
    if rule.how == BY_HAND and uses:  # a flag for the instructor: "<cell> uses autograd …"
        return f"uses autograd ({uses[0]}) where the exercise asks for the result by hand"
    if rule.how == USING_AUTOGRAD and not _differentiates_its_inputs(statements):
        return (
            "the exercise asks for this using autograd, but the code never differentiates "
            "anything computed from its inputs: get the result from backward() or "
            "torch.autograd.grad on what the function computes"
        )
    if rule.how == WITH_A_HOOK and not _attribute_names(statements) & HOOK_ATTRIBUTES:
        return "the exercise asks for a hook, but the code registers none: use register_hook"
    own_gradient = _writes_a_gradient(statements) if rule.how == AS_WRITTEN else None
    if own_gradient:
        return (
            "the exercise asks for torch operations that autograd differentiates as written, "
            f"but the code {own_gradient}: build the result from torch "
            "operations on the input alone, and let autograd work out its gradient"
        )
    optimizers = _optimizers(statements)
    if rule.how == WITH_AN_OPTIMIZER and not optimizers:
        return (
            "the exercise asks for a torch.optim optimizer, but the code makes none: build one "
            "(torch.optim.SGD(parameters, lr=lr)) and let its step() update the parameters"
        )
    if rule.how == WITHOUT_AN_OPTIMIZER and optimizers:
        return (
            f"the exercise asks for the update without an optimizer, but the code uses one "
            f"({optimizers[0]}): update the parameters yourself under torch.no_grad()"
        )
    return None


def _writes_a_gradient(statements: list[ast.AST]) -> str | None:
    """How the code puts a gradient of its own in autograd's place, or None."""
    for node in _nodes(statements):
        if isinstance(node, ast.ClassDef):
            methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            bases = {_called_name(b) for b in node.bases}
            if methods & {"backward", "vjp", "jvp", "setup_context"} or bases & FUNCTION_CLASSES:
                return f"defines a backward of its own (class {node.name})"
    named = _attribute_names(statements)
    named |= {n.value for n in _nodes(statements) if isinstance(n, ast.Constant)} & HOOKING
    named |= {a.name for n in _nodes(statements) if isinstance(n, ast.ImportFrom) for a in n.names}
    calls = {n.id for n in _nodes(statements) if isinstance(n, ast.Name)} & GRAD_MODE_CUTS
    hooks = sorted(named & (HOOKING | FUNCTION_CLASSES))
    if hooks:
        return f"writes a gradient of its own ({hooks[0]})"
    cuts = sorted((named & CUTTING) | calls)
    return f"cuts the graph ({cuts[0]})" if cuts else None


def _code_closure(start: list[ast.AST], bindings: dict[str, list[ast.AST]]) -> list[ast.AST]:
    """The statements `start`, and the functions, classes and imports of the notebook they use
    (the lesson's own data cells, which bind names such as `x` too, are not the answer's code)."""
    code = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom
    kept = {name: [s for s in found if isinstance(s, code)] for name, found in bindings.items()}
    return _closure(start, kept)


def _optimizers(statements: list[ast.AST]) -> list[str]:
    """The torch.optim optimizers the code makes: `torch.optim.SGD(…)`, `optim.Adam(…)`, or a
    name imported from torch.optim."""
    names = gradient_flow.optim_names(statements)
    calls = [n for n in _nodes(statements) if isinstance(n, ast.Call)]
    return [ast.unparse(c.func) for c in calls if gradient_flow.makes_an_optimizer(c, names)]


def _differentiates_its_inputs(statements: list[ast.AST]) -> bool:
    """Whether some function of the code calls autograd on a value computed from its own
    parameters: a backward() on a throwaway leaf of its own does not count."""
    kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    functions = [n for n in _nodes(statements) if isinstance(n, kinds)]
    names = AUTOGRAD_ATTRIBUTES | _autograd_aliases(statements)
    for function in functions:
        tainted = {a.arg for a in ast.walk(function) if isinstance(a, ast.arg)}
        for _ in range(3):  # values computed from values computed from the inputs
            for node in ast.walk(function):
                targets, value = gradient_flow.bound_by(node)
                if value is not None and _mentions(value, tainted):
                    tainted |= {
                        n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
                    }
        for call in ast.walk(function):
            if isinstance(call, ast.Call) and any(
                _mentions(operand, tainted) for operand in _autograd_operands(call, names)
            ):
                return True
    return False


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _autograd_aliases(statements: list[ast.AST]) -> set[str]:
    """Names the code gives autograd's functions: `from torch.autograd import grad as g`,
    `g = torch.autograd.grad`."""
    aliases = set()
    for node in _nodes(statements):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(AUTOGRAD_MODULES):
            aliases |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Assign) and _called_name(node.value) in AUTOGRAD_ATTRIBUTES:
            aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return aliases


def _autograd_operands(call: ast.Call, names: set[str]) -> list[ast.AST]:
    """What an autograd call differentiates: the tensor before `.backward`, the arguments of
    `torch.autograd.grad`, `torch.func.grad(f)(x)` and the like; nothing for another call."""
    func = call.func
    inner = func if isinstance(func, ast.Call) else None  # torch.func.grad(f)(x)
    named = _called_name(inner.func if inner else func)
    if named not in names:
        return []
    operands = [*call.args, *(kw.value for kw in call.keywords)]
    if inner is not None:
        operands += inner.args
    if named == "backward" and isinstance(func, ast.Attribute):
        operands.append(func.value)
    return operands


def _called_name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _nodes(statements: list[ast.AST]) -> Iterator[ast.AST]:
    for statement in statements:
        yield from ast.walk(statement)


def _attribute_names(statements: list[ast.AST]) -> set[str]:
    return {n.attr for n in _nodes(statements) if isinstance(n, ast.Attribute)}


def _autograd_uses(statements: list[ast.AST]) -> set[str]:
    """How the code refers to autograd: attributes, names and imports."""
    named = AUTOGRAD_ATTRIBUTES | GRAD_MODES | GRAPH_ATTRIBUTES
    uses = {f".{a}" for a in _attribute_names(statements) & named}
    for node in _nodes(statements):
        if isinstance(node, ast.Constant) and node.value in named:  # getattr(torch, "autograd")
            uses.add(repr(node.value))
        if isinstance(node, ast.Name) and node.id in {"autograd", "functorch"} | GRAD_MODES:
            uses.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr == "func" and _root(node) == "torch":
            uses.add("torch.func")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                modules = [f"{node.module}.{a.name}" for a in node.names]
            uses.update(m for m in modules if m.startswith(AUTOGRAD_MODULES))
    return uses


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _torch_names(bindings: dict[str, list[ast.AST]]) -> set[str]:
    """The notebook's names for torch or a part of it (`import torch as t`, `t = torch.nn`)."""
    names = {"torch"}
    for name, statements in bindings.items():
        for statement in statements:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                module = getattr(statement, "module", None) or ""
                imported = [module] + [a.name for a in statement.names]
                if any(m.split(".")[0] == "torch" for m in imported):
                    names.add(name)
            elif isinstance(statement, ast.Assign) and _is_torch_path(statement.value):
                names.add(name)
    return names


def _is_torch_path(node: ast.AST) -> bool:
    """`torch` or `torch.a.b`: a name for torch itself or one of its parts, not a value."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "torch"


def _reaches_internals(tree: ast.Module, torch_names: set[str]) -> str | None:
    """How the cell reaches for the interpreter's or the grader's internals, or None."""
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            modules = names if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.module in {"grader", "torch"}:
                modules = [f"{node.module}.{name}" for name in names]
            for module in modules:
                top = module.split(".")[0]
                if top in INTERNAL_MODULES:
                    return f"imports {module}"
                if top == "torch" and any(part.startswith("_") for part in module.split(".")):
                    return f"imports torch's private {module}"
                if top == "grader" and module != "grader.checks":
                    return f"imports {module}"
        elif isinstance(node, ast.Name) and node.id in NAME_BUILTINS and id(node) not in called:
            return f"passes {node.id} around as a value"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in INTERNAL_CALLS:
                return f"calls {name}()"
            if name in NAME_BUILTINS and _computed_on_torch(node, torch_names):
                return f"calls {name}() with a computed name on torch"
            if name == "get_ipython" and not _runs_a_magic(tree, node):
                return "uses the notebook's shell (get_ipython())"
        elif isinstance(node, ast.Attribute) and node.attr in INTERNAL_ATTRIBUTES:
            return f"uses .{node.attr}"
        elif isinstance(node, ast.Attribute) and _private_torch(node, torch_names):
            return f"uses torch's private {ast.unparse(node)}"
        elif isinstance(node, ast.Attribute) and node.attr in SYS_ATTRIBUTES:
            if _root(node) == "sys":
                return f"uses sys.{node.attr}"
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            changed = [
                t for t in targets if isinstance(t, ast.Attribute) and _root(t) in torch_names
            ]
            if changed:
                return "changes torch itself (assigns to one of its attributes)"
    return None


def _private_torch(node: ast.Attribute, torch_names: set[str]) -> bool:
    """`torch._functorch…`: a part of torch behind its public API (a path around its rules)."""
    private = node.attr.startswith("_") and not node.attr.startswith("__")
    return private and _is_torch_path(node) and _root(node) in torch_names


def _computed_on_torch(call: ast.Call, torch_names: set[str]) -> bool:
    """getattr(torch…, name) with the name not written out, or setattr/delattr on torch."""
    if len(call.args) < 2 or _root(call.args[0]) not in torch_names:
        return False
    return call.func.id != "getattr" or not isinstance(call.args[1], ast.Constant)


def _runs_a_magic(tree: ast.Module, call: ast.Call) -> bool:
    """Whether this get_ipython() is one IPython wrote for a %magic or !command."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.value is call:
            return node.attr in MAGIC_METHODS
    return False
