"""How an answer was worked out, read from its source in the grading process.

Runs outside the submission's process: whatever the submission changes while it runs, it cannot
change its source as submitted. Two things come of the reading:

- an answer cell that reaches for the interpreter's or the grader's internals
  (`grader.judging.internals`) earns nothing for its exercise, and is flagged;
- each rule the probes declare (`HOW`: "using autograd", "with a hook", …) is read by its module
  in `grader.judging.routes`, and code that seems to break it is flagged for the instructor.
  No score rests on these: the exercises make their rules inevitable (a derivative by hand is a
  formula the grader evaluates, `by_hand`; what a "using autograd" answer differentiates is drawn
  at grading time, `grader.drawn_functions`).
"""

import ast
import functools
from dataclasses import dataclass

from grader.cells import autograded_tests, grade_id, is_answer, is_lesson_code
from grader.judging import declarations, internals, routes
from grader.judging.routes import optimizers
from grader.judging.syntax import bindings_of, bound_names, parsed, walk

DECLARATION = "HOW"  # what the probes name their rules


@dataclass(frozen=True)
class Rule:
    """A test's rule on how the student's function `function` works its answer out."""

    test: str
    function: str
    how: str


@dataclass(frozen=True)
class Reading:
    """What the source says: why a test earns nothing (by grade id), and what the instructor
    should look at (answer cell -> why)."""

    problems: dict[str, str]
    flags: dict[str, str]


def rules(probes_source: str, source_nb) -> tuple[Rule, ...]:
    """The "how" rules of a lesson, as its probes declare them (`HOW`: {test: {function: [rule,
    …]}}, each rule one of `routes.DECLARED`); "with or without an optimizer, as the solution"
    becomes whichever the solution does."""
    code = tuple(c.source for c in source_nb.cells if is_answer(c) or is_lesson_code(c))
    return _rules(probes_source, code)


@functools.lru_cache(maxsize=64)  # the same for every submission of a lesson
def _rules(probes_source: str, code: tuple[str, ...]) -> tuple[Rule, ...]:
    bindings = bindings_of(list(filter(None, map(parsed, code))))
    found = []
    for test, functions in declarations.declared(probes_source, DECLARATION).items():
        for function, declared in functions.items():
            for how in declared:
                if how not in routes.DECLARED:
                    raise ValueError(f"probes' {DECLARATION}: {test}: unknown rule {how!r}")
                if how == routes.WITH_OR_WITHOUT_AN_OPTIMIZER:
                    solution = _closure(bindings.get(function, []), bindings)
                    uses = optimizers.made_optimizers(solution)
                    how = routes.WITH_AN_OPTIMIZER if uses else routes.WITHOUT_AN_OPTIMIZER
                found.append(Rule(test, function, how))
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
    torch_names = internals.torch_names(bindings)
    sys_names = internals.module_names(bindings, "sys")
    grader_paths = internals.grader_names(s for group in bindings.values() for s in group)
    problems, flags = {}, {}
    names = {i: grade_id(nb.cells[i]) or f"cell {i + 1}" for i in mine if trees[i]}
    for index in sorted(names):
        reaches = internals.reaches(trees[index], torch_names, grader_paths, sys_names)
        if reaches:
            flags[names[index]] = reaches
    for test, cells in _exercises(nb, sorted(names), trees, bindings).items():
        reached = [flags[names[i]] for i in cells if names[i] in flags]
        if reached:
            problems[test] = (
                f"this answer {reached[0]}, which no answer needs: it earns nothing here, "
                "and your instructor will look at it"
            )
    cell_of = {id(s): names[i] for i in names for s in trees[i].body}
    for rule in rules_:
        if rule.test in problems or rule.function not in bindings:
            continue
        # the student's own definition, where there is one (a lesson cell may show another)
        own = answers.get(rule.function) or bindings[rule.function]
        if _unanswered(own):
            continue
        reads = _code_closure if rule.how == routes.AS_WRITTEN else _closure
        flag = routes.FLAGS[rule.how](reads(own, bindings))
        if flag:
            flags.setdefault(cell_of.get(id(own[-1]), rule.function), flag)
    return Reading(problems, flags)


def _unanswered(statements: list[ast.AST]) -> bool:
    """The released stub, `raise NotImplementedError(…)`: nothing to review, it earns nothing."""
    return any(
        isinstance(node, ast.Raise)
        and "NotImplementedError" in ast.unparse(node.exc or ast.Constant(None))
        for statement in statements
        for node in walk(statement)
    )


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
    for node in walk(statement):
        if isinstance(node, ast.arg):
            local.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
    if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
        local -= bound_names(statement)  # the statement's own target is what it binds
    loaded = {n.id for n in walk(statement) if isinstance(n, ast.Name)}
    return frozenset(loaded - local)


def _code_closure(start: list[ast.AST], bindings: dict[str, list[ast.AST]]) -> list[ast.AST]:
    """The statements `start`, and the functions, classes and imports of the notebook they use
    (the lesson's own data cells, which bind names such as `x` too, are not the answer's code)."""
    code = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom
    kept = {name: [s for s in found if isinstance(s, code)] for name, found in bindings.items()}
    return _closure(start, kept)
