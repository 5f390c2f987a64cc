"""How an answer was worked out is read from its source outside the submission's process: an
answer that reaches for the grader's or the interpreter's internals earns nothing for its exercise
and is flagged; code that seems to break a "using autograd", "with a hook", "as written" or
optimizer rule is flagged for the instructor, never zeroed (the exercises make those rules
inevitable: tests/lessons/test_drawn_functions.py, tests/integrity); no correct answer in any
style of the corpus is flagged."""

import copy
import time
from pathlib import Path

import nbformat
import pytest
import yaml
from notebook_tools import solution_with_answers

from grader.cells import grade_id, is_lesson_code
from grader.course import lessons, solution_notebook
from grader.judging import how, routes, rules
from grader.judging.reference import probes_file
from grader.judging.rules import judge_source

ALTERNATIVES = Path(__file__).parent.parent / "lessons" / "alternative_answers"
L3, L5, L6, L7, L10, L11 = (
    "03_backward_and_scalar_outputs",
    "05_gradients_at_work",
    "06_backward_by_hand",
    "07_stopping_and_shaping_gradients",
    "10_branches_and_kinks",
    "11_an_engine_of_your_own",
)
# Lesson 11's gradients through torch: the recorded graph copied into tensors, torch's backward()
TORCH_ENGINE = """import torch as _t


def gradients(f, xs):
    values = [Value(float(x)) for x in xs]
    out = f(*values)
    copies = {}
    for node in topological_order(out):
        if node.parents:
            terms = [copies[id(p)] * g for p, g in zip(node.parents, node.local_grads)]
            copies[id(node)] = sum(terms)
        else:
            copies[id(node)] = _t.tensor(0.0, dtype=_t.float64, requires_grad=True)
    copies[id(out)].backward()
    return [copies[id(v)].grad.item() for v in values]
"""


def _read(lesson: str, answers: dict[str, str]) -> how.Reading:
    """The reading of the lesson's solution with some answer cells replaced."""
    source, nb = solution_with_answers(lesson, answers)
    return how.read(nb, how.rules(probes_file(lesson).read_text(), source), _lesson_code(lesson))


def _judged(lesson: str, answers: dict[str, str]) -> how.Reading:
    """The whole judgment of the source (formulas and reading) with some answer cells replaced."""
    source, nb = solution_with_answers(lesson, answers)
    return judge_source(nb, source, probes_file(lesson).read_text(), seed=7)


def _lesson_code(lesson: str) -> frozenset[str]:
    cells = nbformat.read(solution_notebook(lesson), as_version=4).cells
    return frozenset(c.source for c in cells if is_lesson_code(c))


def test_every_lesson_has_rules_read_from_its_probes_and_tests():
    """The rules the probes declare (HOW), as many as the wording asks for."""
    found = {}
    for lesson in lessons():
        nb = nbformat.read(solution_notebook(lesson), as_version=4)
        for rule in how.rules(probes_file(lesson).read_text(), nb):
            found.setdefault(rule.how, set()).add((lesson, rule.function))
    # derivatives by hand are formulas the grader evaluates (tests/judging/test_by_hand.py)
    assert found[routes.BY_HAND] == {(L3, "unbroadcast"), (L5, "central_difference")}
    assert (L3, "error_grad") in found[routes.USING_AUTOGRAD]
    assert found[routes.WITH_A_HOOK] == {(L7, "clipped_gradient")}
    assert found[routes.WITHOUT_THE_ENGINE] == {(L6, "manual_backward"), (L6, "gradient_at")}
    assert len(found[routes.USING_AUTOGRAD]) >= 12


def test_a_submodule_imported_for_one_answer_does_not_flag_another():
    """`import torch.func` in lesson 5's gradient_descent cell binds `torch`, which
    central_difference (by hand) uses for other work: that is no autograd reached."""
    answer = "import torch.func\n" + _solution_source(L5, "gradient_descent")
    assert _judged(L5, {"gradient_descent": answer}) == how.Reading({}, {})


def test_no_solution_or_alternative_answer_is_flagged(lesson):
    """The solution and every correct answer written in another style keep their marks."""
    assert _judged(lesson, {}) == how.Reading({}, {})
    for answer in yaml.safe_load((ALTERNATIVES / f"{lesson}.yml").read_text()) or []:
        assert _judged(lesson, {answer["cell"]: answer["answer"]}) == how.Reading({}, {}), answer


BY_HAND_AROUND = {
    "a copy of torch.autograd.grad taken in another cell": (
        "_g = torch.autograd.grad\n",
        "def dz_dx(x):\n    with torch.enable_grad():\n"
        "        t = torch.tensor(x, requires_grad=True)\n"
        "        return _g(2 * (t**2 - 3 * t) ** 3, t)[0]\n",
    ),
    "grad imported under another name": (
        "from torch.autograd import grad as slope\n",
        "def dz_dx(x):\n    t = torch.tensor(float(x), requires_grad=True)\n"
        "    return slope(2 * (t**2 - 3 * t) ** 3, t)[0]\n",
    ),
    "backward through a helper of its own": (
        "def _helper(x):\n    t = torch.tensor(float(x), requires_grad=True)\n"
        "    (2 * (t**2 - 3 * t) ** 3).backward()\n    return t.grad\n",
        "def dz_dx(x):\n    return _helper(x)\n",
    ),
    "torch.func": (
        "import torch.func as F\n",
        "def dz_dx(x):\n    return F.grad(lambda t: t)(x)\n",
    ),
}


@pytest.mark.parametrize("case", sorted(BY_HAND_AROUND))
def test_a_by_hand_answer_that_reaches_autograd_earns_nothing(case):
    """Autograd reached from the answer, however it is named or wherever it is bound, breaks
    "by hand" (lesson 3's dz_dx, with the extra code in another answer cell)."""
    before, answer = BY_HAND_AROUND[case]
    reading = _judged(
        L3, {"mean_grad": before + _solution_source(L3, "mean_grad"), "dz_dx": answer}
    )
    assert "by hand" in reading.problems.get("test_dz_dx", ""), reading


def _solution_source(lesson: str, cell: str) -> str:
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    return next(c.source for c in nb.cells if grade_id(c) == cell)


# Lesson 6's drawn steps called by hand in order, torch's engine run between them: the grading
# process sees a right walk of its own nodes, and values cannot tell it from one by hand.
SEGMENTS_BY_THE_ENGINE = """from torch.autograd.graph import GradientEdge


def manual_backward(output, order):
    steps = [n for n in order if hasattr(n, "where")]
    for step in steps:
        child, slot = step.next_functions[0]
        torch.autograd.grad(GradientEdge(child, slot), [], step(torch.ones(())))
"""


def test_route_rules_are_flagged_for_the_instructor_never_zeroed():
    """A result with no autograd where the exercise asks for it, an optimizer where the solution
    has none, a backward of its own where autograd must differentiate as written: each is told
    to the instructor; the points rest on the values the probe observes outside."""
    cases = [
        (L5, "gradient_descent", "def gradient_descent(f, x0, lr, steps):\n    return x0\n"),
        (
            L10,
            "unit_rows",
            "class _Unit(torch.autograd.Function):\n    @staticmethod\n"
            "    def forward(ctx, v):\n        return v / (v**2).sum(1, keepdim=True).sqrt()\n\n"
            "def unit_rows(v):\n    return _Unit.apply(v)\n",
        ),
        (L11, "gradients", TORCH_ENGINE),
        (L6, "manual_backward", SEGMENTS_BY_THE_ENGINE),
        (L6, "gradient_at", "def gradient_at(output, tensor, order):\n    tensor.retain_grad()\n"),
    ]
    for lesson, cell, answer in cases:
        reading = _read(lesson, {cell: answer})
        assert reading.problems == {}, reading
        assert cell in reading.flags, reading


INTERNALS = {
    "gc": "import gc\n",
    "a closure reached by a name built at run time": (
        "_cells = getattr(dz_dx, '__clo' + 'sure__')\n"
    ),
    "frames": "import sys\n_frame = sys._getframe(1)\n",
    "frames through traceback and a debugger": "import traceback, pdb\n"
    "for _frame, _ in traceback.walk_stack(None):\n"
    "    _p = pdb.Pdb()\n    _p.setup(_frame, None)\n    _seen = _p.curframe_locals\n",
    "frames through a traceback module imported by another name": "from traceback import "
    "walk_stack as _w\n",
    "sys.modules": "import sys\n_autograd = sys.modules['torch.autograd']\n",
    "the probe's counter reset": "def _reset(f):\n    f.__defaults__ = (None, [])\n",
    "a computed name on torch": "_g = getattr(torch, 'auto' + 'grad')\n",
    "a computed name on torch.autograd": "_g = getattr(torch.autograd, _name)\n",
    "a computed name on an alias of torch": "_t = torch\n_g = getattr(_t, _name)\n",
    "a computed name on torch imported as t": "import torch as t\n_g = getattr(t, _name)\n",
    "eval": "eval('1')\n",
    "__import__": "_m = __import__('torch')\n",
    "importlib": "from importlib import import_module\n",
    "ctypes": "import ctypes\n",
    "the notebook's shell": "_ns = get_ipython().user_ns\n",
    "the grader's own code": "from grader import probing\n",
    "the grader's internals": "import grader.judging.verdict\n",
    "torch changed": "torch.allclose = lambda *a, **k: True\n",
    "torch's autograd replaced": "setattr(torch.autograd, 'grad', print)\n",
    "operator.attrgetter": "import operator\n_g = operator.attrgetter('autograd')(torch)\n",
    "builtins": "import builtins\n",
    "a closure read through a format template": (
        "_c = '{0.__closure__[0].cell_contents}'.format(f)\n"
    ),
    "a pickle, which calls whatever it names": "import pickle\n_x = pickle.loads(_payload)\n",
    "a file run by runpy": "from runpy import run_path\n",
    "a module written at run time that reads a closure": (
        "import pathlib, sys\n"
        "pathlib.Path('/tmp/peek.py').write_text('def parts(f):\\n    return f.__clo' 'sure__')\n"
        "sys.path.insert(0, '/tmp')\nfrom peek import parts\n"
    ),
    "a relative import": "from .peek import parts\n",
    # what a probe imported beside the answer, reached with no import the reading would see
    "a grader module as an attribute of the package": (
        "import grader.checks\n_order = grader.random_graphs.counts_of\n"
    ),
    "a lesson's checks as an attribute of the package": (
        "import grader.variants\n_case = grader.lesson_checks.lesson_11.order_faults\n"
    ),
    "sys through grader.checks": "import grader.checks\n_m = grader.checks.sys.modules\n",
    "sys imported from grader.checks": "from grader.checks import sys as _s\n_m = _s.modules\n",
    "os through a module imported from grader": "from grader import variants\n_t = variants.os\n",
    # sys.modules under another name: every module loaded beside the answer, patched at will
    "sys under another name": "import sys as _system\n_m = _system.modules\n",
    "sys bound again": "import sys\n_s = sys\n_m = _s.modules\n",
    "sys.modules imported by name": "from sys import modules as _m\n",
    "sys as another module's attribute": "import os\n_m = os.sys.modules\n",
    "sys.modules through getattr": "import sys as _s\n_m = getattr(_s, 'modules')\n",
}


@pytest.mark.parametrize("case", sorted(INTERNALS))
def test_an_answer_that_reaches_for_internals_earns_nothing_and_is_flagged(case):
    """The exercise whose answer cell holds it earns nothing, and the cell is flagged."""
    source = INTERNALS[case] + _solution_source(L3, "dz_dx")
    reading = _read(L3, {"dz_dx": source})
    assert "dz_dx" in reading.flags, reading
    assert "your instructor will look at it" in reading.problems["test_dz_dx"]
    assert set(reading.problems) == {"test_dz_dx"}  # the other exercises keep their marks


def test_a_grader_module_named_in_another_cell_is_followed_there():
    """A name bound to the grader's modules in one answer cell is followed where another uses it."""
    reading = _read(
        L3,
        {
            "mean_grad": "from grader import checks as _c\n" + _solution_source(L3, "mean_grad"),
            "dz_dx": "_m = _c.sys.modules\n" + _solution_source(L3, "dz_dx"),
        },
    )
    assert reading.flags == {"dz_dx": "reaches grader.checks.sys through the grader's modules"}
    assert set(reading.problems) == {"test_dz_dx"}


def test_magics_and_ordinary_code_are_not_flagged():
    """%timeit, !commands, a variable named grad, getattr with a written-out name, model.modules()
    and private torch attributes the lessons teach (_saved_self) are what students write."""
    answer = (
        "%timeit 1 + 1\n!echo hi\ngrad = 1.0\n_mod = getattr(torch, 'sin')\n"
        "_t = '{0.grad:.3f} {1.shape}'.format(torch.ones(1), torch.ones(2))\n"
        "_n = len(list(torch.nn.Linear(1, 1).modules()))\n"
        "_s = (torch.ones(1, requires_grad=True) * torch.ones(1)).grad_fn._saved_self\n"
        "import grader.variants\n_task = grader.variants.examples.lesson_03\n"
        + _solution_source(L3, "dz_dx")
    )
    assert _read(L3, {"dz_dx": answer}) == how.Reading({}, {})


def test_deep_code_is_read_and_never_stops_the_reading():
    """Deeply nested calls and long sums are read (each node once) without a problem."""
    solution = _solution_source(L3, "weighted_grads")
    for extra in ("torch.sin(" * 60 + "x" + ")" * 60, "2 * x" + " + x" * 2000):
        answer = solution.replace("    z = f(x)\n", f"    k = {extra}\n    z = f(x)\n", 1)
        assert answer != solution
        assert _read(L3, {"weighted_grads": answer}).problems == {}


def test_torch_private_modules_count_as_internals():
    """Forward mode reached through torch._functorch gets around by hand's reading of torch's
    public names: private parts of torch earn nothing and are flagged."""
    body = (
        "def dz_dx(x):\n    _, jf = linearize(lambda t: 2 * (t**2 - 3 * t) ** 3, "
        "torch.tensor(float(x)))\n    return jf(torch.tensor(1.0)).item()\n"
    )
    imported = "from torch._functorch.eager_transforms import linearize\n\n\n" + body
    reached = body.replace("linearize(", "torch._functorch.eager_transforms.linearize(")
    for answer in (imported, reached):
        reading = _read(L3, {"dz_dx": answer})
        assert "private" in reading.problems["test_dz_dx"], answer


def test_a_cell_the_student_added_or_a_lesson_cell_they_changed_is_read_as_theirs():
    """Internals in a cell without nbgrader metadata that the release does not have, or in a
    lesson cell the student edited, cost the exercise that follows; the lesson's own cells are
    the instructor's and are not flagged."""
    nb = copy.deepcopy(nbformat.read(solution_notebook(L3), as_version=4))
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "dz_dx")
    nb.cells.insert(index, nbformat.v4.new_code_cell("import gc\n_found = gc.get_objects()"))
    reading = how.read(nb, how.rules(probes_file(L3).read_text(), nb), _lesson_code(L3))
    assert reading.flags == {f"cell {index + 1}": "imports gc"}
    assert set(reading.problems) == {"test_dz_dx"}
    lesson_cell = next(c for c in nb.cells if is_lesson_code(c) and "import torch" in c.source)
    lesson_cell.source += "\nimport ctypes"
    reading = how.read(nb, how.rules(probes_file(L3).read_text(), nb), _lesson_code(L3))
    assert "imports ctypes" in reading.flags.values()


RED_TEAM = {
    "autograd named in strings": "_ag = getattr(torch, 'autograd')\n_grad = getattr(_ag, 'grad')\n"
    "def dz_dx(x):\n    t = torch.tensor(float(x), requires_grad=True)\n"
    "    return _grad(2 * (t**2 - 3 * t) ** 3, t)[0]\n",
    "getattr passed around": "import functools\n"
    "_grad = functools.reduce(getattr, ['auto' + 'grad', 'gr' + 'ad'], torch)\n"
    "def dz_dx(x):\n    t = torch.tensor(float(x), requires_grad=True)\n"
    "    return _grad(2 * (t**2 - 3 * t) ** 3, t)[0]\n",
    "backward nodes walked in a thread": "from concurrent.futures import ThreadPoolExecutor\n"
    "def _walk(x):\n    t = torch.tensor(float(x), requires_grad=True)\n"
    "    f = (2 * (t**2 - 3 * t) ** 3).grad_fn\n    return f(torch.tensor(1.0))\n"
    "def dz_dx(x):\n    with ThreadPoolExecutor(1) as pool:\n"
    "        return pool.submit(_walk, x).result()\n",
}


@pytest.mark.parametrize("case", sorted(RED_TEAM))
def test_what_a_red_team_tried_against_by_hand_earns_nothing(case):
    """Autograd named only in strings, getattr passed as a value, and autograd's own nodes called
    in a thread (which runs with autograd on whatever the caller set): each found by hand."""
    assert "test_dz_dx" in _judged(L3, {"dz_dx": RED_TEAM[case]}).problems


def _long_answer(statements: int) -> str:
    """An answer of many chained statements: its reading takes time (about 0.4 s; linear)."""
    lines = ["def unbroadcast(grad, shape):", "    w = grad"]
    lines += ["    a0 = w"] + [
        f"    a{i} = a{i - 1} * 1.0 + a{max(i - 2, 0)}" for i in range(1, statements)
    ]
    lines += [f"    return a{statements - 1}"]
    return "\n".join(lines) + "\n"


def test_a_reading_past_its_time_stops_and_is_flagged_for_review():
    """A notebook whose reading runs past the limit is not read on: the grading process is free
    again at the limit, and the instructor is told to look (the limit acted: the flag says so)."""
    source, nb = solution_with_answers(L3, {"unbroadcast": _long_answer(4000)})
    probes = probes_file(L3).read_text()
    judge_source(source, source, probes, seed=7)  # the lesson's rules, read once per lesson
    started = time.monotonic()
    reading = judge_source(nb, source, probes, seed=7, seconds=0.05)
    assert time.monotonic() - started < 0.05 + 2.0  # unbounded, it takes about 0.4 s
    assert reading.problems == {}
    assert "took over 0.05 s" in reading.flags[rules.UNREAD], reading.flags


def test_a_notebook_over_the_size_limit_is_flagged_unread():
    """More student code than the reading takes is flagged for review, and not read."""
    source, nb = solution_with_answers(L3, {})
    nb.cells.append(nbformat.v4.new_code_cell("x = 1\n" * (rules.READING_CHARACTERS // 6 + 1)))
    reading = judge_source(nb, source, probes_file(L3).read_text(), seed=7)
    assert "characters, over" in reading.flags[rules.UNREAD], reading.flags


def test_a_prediction_cell_is_charged_to_no_exercise_unless_its_names_are_used():
    """An ungraded prediction that writes its answers through globals() is flagged, and costs the
    exercise after it nothing; a cell whose names an answer uses is charged to that answer."""
    prediction = "globals().update(predict_x_grad=[2 / 3, 4 / 3, 2.0], predict_w_grad=[2, 0, 3])\n"
    reading = _judged(L3, {"predict_grads": prediction})
    assert "test_unbroadcast" not in reading.problems and "predict_grads" in reading.flags
    used = "import gc\n_sum_dims = lambda g, d: g.sum(dim=d, keepdim=True)\n"
    answer = (
        "def unbroadcast(grad, shape):\n    while grad.dim() > len(shape):\n"
        "        grad = grad.sum(dim=0)\n    for dim, size in enumerate(shape):\n"
        "        if size == 1:\n            grad = _sum_dims(grad, dim)\n    return grad\n"
    )
    reading = _judged(L3, {"predict_grads": used, "unbroadcast": answer})
    assert "gc" in reading.problems.get("test_unbroadcast", ""), reading


def test_by_hand_work_that_is_no_formula_is_flagged_not_zeroed():
    """Summing a gradient back to a shape through autograd is flagged for the instructor; the
    points rest on the values, checked outside (a reading cannot be complete)."""
    answer = (
        "def unbroadcast(grad, shape):\n"
        "    x = torch.zeros(shape, dtype=grad.dtype, requires_grad=True)\n"
        "    (x.expand(grad.shape) * grad).sum().backward()\n"
        "    return x.grad\n"
    )
    reading = _judged(L3, {"unbroadcast": answer})
    assert "test_unbroadcast" not in reading.problems
    assert reading.flags["unbroadcast"].startswith("uses autograd (.backward)"), reading.flags
