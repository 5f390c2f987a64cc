"""The "by hand" rule, true by construction: a derivative asked for by hand is read from the
answer's source as a formula (grader.judging.formula_reading) and evaluated by the grader itself,
outside the sandbox, at points drawn for the submission; the solution's formula is evaluated at the
same points. No student code runs for this verdict, and only a formula equal to the solution's
earns it: a finite difference, a complex step or autograd is not one.

A lesson's probes declare which functions are formulas, with the domain of each parameter:

    BY_HAND = {"test_dz_dx": {"dz_dx": [{"low": -3.0, "high": 3.0}]}}

A domain may give `shapes` (the parameter is a tensor of one of them) and `avoid` (points where a
piecewise answer changes piece, kept 0.02 away from).

Where the course gives each student their own task of an exercise (`grader.course_keys`), the
reference is the solution's formula for the submitting student's task, and an answer that is
right for another student's task is told so.
"""

import ast
import functools
import random

import mpmath

from grader.cells import autograded_tests
from grader.judging import declarations, formulas
from grader.judging.formula_reading import HELP, NotAFormula, read
from grader.judging.syntax import parsed

DECLARATION = "BY_HAND"
POINTS = 5
ELEMENTS = 3  # of a tensor parameter, at each point: formulas work elementwise
MARGIN = 0.02


def declared(probes_source: str) -> dict[str, dict[str, list[dict]]]:
    """The probes' by-hand formulas: {test: {function: [domain of each parameter]}}."""
    return declarations.declared(probes_source, DECLARATION)


def problems(nb, solution_nb, probes_source: str, seed: int, variant=None) -> dict[str, str]:
    """Why each test whose answer must be a formula earns nothing, by grade id. `variant`: the
    submitting student's tasks (a `grader.course_keys.Variant`), where the course gives them."""
    found = {}
    for test, functions in declared(probes_source).items():
        for function, domains in functions.items():
            problem = _problem(nb, solution_nb, test, function, domains, seed, variant)
            if problem:
                found[test] = _another_task(nb, test, functions, seed, variant) or problem
                break
    return found


def _problem(nb, solution_nb, test, function, domains, seed, variant) -> str | None:
    own = variant.solution(function) if variant is not None else None
    reference = _reference((own,) if own else _code_before(solution_nb, test), function)
    try:
        answer = read(function, _statements_before(nb, test))
    except NotAFormula as why:
        return (
            f"the exercise asks for {function} by hand, as a formula the grader evaluates, "
            f"but {why}; {HELP}"
        )
    if answer.parameters != reference.parameters:
        given = reference.parameters
        return f"{function} takes {answer.parameters} parameters; the exercise gives it {given}"
    if len(answer.results) != len(reference.results) or answer.one != reference.one:
        return f"{function} returns {_values(answer)}; the exercise asks for {_values(reference)}"
    problem = _differs(function, answer, reference, _points(seed, test, function, domains))
    if problem and own:
        problem += f" (your task: {variant.shown(function)})"
    return problem


def _another_task(nb, test: str, functions: dict, seed: int, variant) -> str | None:
    """What to say when every function the test asks for is right for another student's task
    (None when the answer solves no other task, or the course gives no tasks of their own)."""
    first = next(iter(functions))
    if variant is None or variant.solution(first) is None:
        return None
    try:
        answers = {name: read(name, _statements_before(nb, test)) for name in functions}
    except NotAFormula:
        return None
    for theirs, solution in variant.others(first):
        if all(
            _same_shape(answers[name], _reference((solution,), name))
            and _differs(name, answers[name], _reference((solution,), name), points) is None
            for name, domains in functions.items()
            for points in [_points(seed, test, name, domains)]
        ):
            asked = " and ".join(functions)
            return (
                f"{asked} {'is' if len(functions) == 1 else 'are'} right for another student's "
                f"task ({theirs}), not for yours ({variant.shown(first)}): it solves a different "
                "task. Derive your own task's, shown above the exercise."
            )
    return None


def _same_shape(answer, reference) -> bool:
    """Whether the answer takes the reference's parameters and returns as many values."""
    return (answer.parameters, len(answer.results), answer.one) == (
        reference.parameters,
        len(reference.results),
        reference.one,
    )


def _points(seed: int, test: str, function: str, domains: list[dict]) -> list:
    """The points the formulas are compared at: POINTS of them, a few elements each, drawn for
    the submission, the test and the function."""
    draw = random.Random(f"{seed}/{test}/{function}")
    return [element for _ in range(POINTS) for element in _elements(draw, domains)]


def _differs(function: str, answer, reference, points) -> str | None:
    """Why `answer` is not `reference` at the `points`, or None if it agrees everywhere."""
    for point, shapes in points:
        wanted = [formulas.value(r, point, shapes) for r in reference.results]
        where = _where(answer.names, point, shapes)
        try:
            got = [formulas.value(r, point, shapes) for r in answer.results]
        except formulas.Undefined as why:
            return f"{function}'s formula has no value at {where} ({why})"
        for index, (a, b) in enumerate(zip(got, wanted, strict=True)):
            if not formulas.agrees(a, b):
                which = f"value {index + 1} of " if len(got) > 1 else ""
                return (
                    f"{which}{function}'s formula gives {mpmath.nstr(a, 6)} at {where}, which "
                    "is not what the exercise asks for there: check your derivation"
                )
    return None


def _values(formula) -> str:
    return "one value" if formula.one else f"{len(formula.results)} values"


def _elements(draw: random.Random, domains: list[dict]):
    """A point drawn in the domains, as the few elements of it the formulas are evaluated at."""
    shapes = tuple(tuple(draw.choice(d["shapes"])) if "shapes" in d else () for d in domains)
    for _ in range(ELEMENTS if any(shapes) else 1):
        yield tuple(_number(draw, d) for d in domains), shapes


def _number(draw: random.Random, domain: dict):
    while True:
        x = round(draw.uniform(domain["low"], domain["high"]), 3)
        if all(abs(x - a) > MARGIN for a in domain.get("avoid", ())):
            return mpmath.mpf(str(x))


def _where(names: list[str], point: tuple, shapes: tuple) -> str:
    parts = []
    for name, x, shape in zip(names, point, shapes, strict=True):
        of = f" (an element of a tensor of shape {shape})" if shape else ""
        parts.append(f"{name} = {mpmath.nstr(x, 6)}{of}")
    return ", ".join(parts)


def _statements_before(nb, test: str) -> list[ast.stmt]:
    """The notebook-level statements of the code cells run before the test cell."""
    return _statements(_code_before(nb, test))


def _code_before(nb, test: str) -> tuple[str, ...]:
    at = next((i for i, gid in autograded_tests(nb).items() if gid == test), len(nb.cells))
    return tuple(c.source for c in nb.cells[:at] if c.cell_type == "code")


def _statements(sources: tuple[str, ...]) -> list[ast.stmt]:
    trees = [parsed(source) for source in sources]
    return [statement for tree in trees if tree for statement in tree.body]


@functools.lru_cache(maxsize=64)  # the same for every submission of a lesson
def _reference(sources: tuple[str, ...], function: str):
    """The solution's formula; a lesson whose solution is not one is broken."""
    try:
        return read(function, _statements(sources))
    except NotAFormula as why:
        raise ValueError(f"the solution's {function} is not a formula: {why}") from None
