"""How an answer was worked out is read from its source outside the submission's process: answers
that get around a "by hand", "using autograd" or "with a hook" rule, or reach for the grader's or
the interpreter's internals, earn nothing for their exercise and are flagged; no correct answer
in any style of the corpus is."""

import ast
import copy
import time
from pathlib import Path

import nbformat
import pytest
import yaml
from notebook_tools import solution_with_answers

from grader.cells import grade_id, is_lesson_code
from grader.course import lessons, solution_notebook
from grader.judging import call_counts, gradient_flow, how, rules
from grader.judging.reference import probes_file
from grader.judging.rules import judge_source
from grader.judging.syntax import bindings_of

ALTERNATIVES = Path(__file__).parent.parent / "lessons" / "alternative_answers"
L3, L5, L7 = (
    "03_backward_and_scalar_outputs",
    "05_gradients_at_work",
    "07_stopping_and_shaping_gradients",
)


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
    """By hand (where it is no formula) from the probes' by_hand, using autograd from the test
    cells' call_with_autograd, a hook from hooks_registered: as many as the wording asks for."""
    found = {}
    for lesson in lessons():
        nb = nbformat.read(solution_notebook(lesson), as_version=4)
        for rule in how.rules(probes_file(lesson).read_text(), nb):
            found.setdefault(rule.how, set()).add((lesson, rule.function))
    # derivatives by hand are formulas the grader evaluates (tests/judging/test_by_hand.py)
    assert found[how.BY_HAND] == {(L3, "unbroadcast"), (L5, "central_difference")}
    assert (L3, "error_grad") in found[how.USING_AUTOGRAD]
    assert found[how.WITH_A_HOOK] == {(L7, "clipped_gradient")}
    assert len(found[how.USING_AUTOGRAD]) >= 12


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
        "        return _g(3 * (2 * t + 3) ** 2, t)[0]\n",
    ),
    "grad imported under another name": (
        "from torch.autograd import grad as slope\n",
        "def dz_dx(x):\n    t = torch.tensor(float(x), requires_grad=True)\n"
        "    return slope(3 * (2 * t + 3) ** 2, t)[0]\n",
    ),
    "backward through a helper of its own": (
        "def _helper(x):\n    t = torch.tensor(float(x), requires_grad=True)\n"
        "    (3 * (2 * t + 3) ** 2).backward()\n    return t.grad\n",
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


def test_a_using_autograd_answer_with_no_autograd_and_a_hook_answer_with_no_hook_earn_nothing():
    """A formula where the exercise asks for autograd, a clamp where it asks for a hook."""
    formula = "def gradient_descent(f, x0, lr, steps):\n    return x0\n"
    assert "using autograd" in _read(L5, {"gradient_descent": formula}).problems.get(
        "test_gradient_descent", ""
    )
    clamped = (
        "def clipped_gradient(x, limit):\n    h = torch.sin(x)\n    loss = h.clamp(-limit, limit)"
        ".sum()\n    loss.backward()\n    return loss\n"
    )
    assert "hook" in _read(L7, {"clipped_gradient": clamped}).problems["test_clipped_gradient"]


INTERNALS = {
    "gc": "import gc\n",
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
}


@pytest.mark.parametrize("case", sorted(INTERNALS))
def test_an_answer_that_reaches_for_internals_earns_nothing_and_is_flagged(case):
    """The exercise whose answer cell holds it earns nothing, and the cell is flagged."""
    source = INTERNALS[case] + _solution_source(L3, "dz_dx")
    reading = _read(L3, {"dz_dx": source})
    assert "dz_dx" in reading.flags, reading
    assert "your instructor will look at it" in reading.problems["test_dz_dx"]
    assert set(reading.problems) == {"test_dz_dx"}  # the other exercises keep their marks


def test_magics_and_ordinary_code_are_not_flagged():
    """%timeit, !commands, a variable named grad, getattr with a written-out name, model.modules()
    and private torch attributes the lessons teach (_saved_self) are what students write."""
    answer = (
        "%timeit 1 + 1\n!echo hi\ngrad = 1.0\n_mod = getattr(torch, 'sin')\n"
        "_n = len(list(torch.nn.Linear(1, 1).modules()))\n"
        "_s = (torch.ones(1, requires_grad=True) * torch.ones(1)).grad_fn._saved_self\n"
        + _solution_source(L3, "dz_dx")
    )
    assert _read(L3, {"dz_dx": answer}) == how.Reading({}, {})


def test_autograd_on_a_throwaway_leaf_does_not_count_as_using_autograd():
    """A formula times what one backward() on a leaf of its own measures (the grader's gradient
    scale) earns nothing; autograd on what the function computes from its inputs, however it is
    named or written (a lambda, grad imported under another name), does."""
    throwaway = (
        "def error_grad(w, xs, ts):\n    leaf = torch.ones((), requires_grad=True)\n"
        "    leaf.backward()\n    return leaf.grad * 2 * ((w * xs - ts) * xs).sum()\n"
    )
    problems = _read(L3, {"nonscalar_error": throwaway}).problems
    assert "never differentiates" in problems["test_nonscalar_error"]
    for answer in (
        "from torch.autograd import grad as slope\n"
        "_leaf = lambda w: torch.tensor(float(w), requires_grad=True)\n"
        "error_grad = lambda w, xs, ts, v=None: slope(\n"
        "    ((v := _leaf(w)) * xs - ts).pow(2).sum(), v)[0]\n",
        "from torch.autograd import grad as slope\n\n\ndef error_grad(w, xs, ts):\n"
        "    w = torch.tensor(float(w), requires_grad=True)\n"
        "    (g,) = slope(((w * xs - ts) ** 2).sum(), w)\n    return g\n",
    ):
        assert "test_nonscalar_error" not in _read(L3, {"nonscalar_error": answer}).problems, answer


SOFTPLUS = "torch.sigmoid(x)"  # the gradient of sum(log(1 + exp(x))), by hand
LEAF = "    s = x.clone().requires_grad_()\n    (s * 1.0).sum().backward()\n"
HAND_MADE_RESULTS = {
    "a formula times a gradient": f"{LEAF}    return {SOFTPLUS} * s.grad\n",
    "a formula times the scale as a number": f"{LEAF}    k = s.grad[0].item()\n"
    f"    return {SOFTPLUS} * k\n",
    "a formula times a constant": f"{LEAF}    return {SOFTPLUS} * 1.25\n",
    "torch.mul": f"{LEAF}    return torch.mul(s.grad, {SOFTPLUS})\n",
    "the product in a helper": f"{LEAF}    return _times({SOFTPLUS}, s.grad)\n",
    "written into the gradient": f"{LEAF}    out = s.grad.clone()\n    out.copy_({SOFTPLUS})\n"
    "    return out\n",
    "assigned to .grad": f"{LEAF}    s.grad = {SOFTPLUS} * 1.25\n    return s.grad\n",
    "a hook that returns the formula": "    s = x.clone().requires_grad_()\n"
    f"    s.register_hook(lambda g: {SOFTPLUS} * 1.25)\n    s.sum().backward()\n"
    "    return s.grad\n",
    "the formula as the gradient to start from": "    s = x.clone().requires_grad_()\n"
    f"    s.backward({SOFTPLUS})\n    return s.grad\n",
}


HAND_MADE_RESULTS.update(
    {
        "names bound in one tuple": f"{LEAF}    f, k = {SOFTPLUS}, s.grad\n    return f * k\n",
        "a notebook list read by a helper": "    s = x.clone().requires_grad_()\n"
        "    s.sum().backward()\n    _saved.append(x)\n    return _from_saved() * s.grad\n",
        "an object with a grad attribute": f"{LEAF}    box = SimpleNamespace(grad={SOFTPLUS})\n"
        "    return box.grad * s.grad\n",
        "setattr on .grad": f"{LEAF}    t = torch.zeros_like(x)\n"
        f"    setattr(t, 'grad', {SOFTPLUS})\n    return t.grad * s.grad\n",
        "an input moved by a zero gradient": f"{LEAF}    moved = x + 0 * s.grad\n"
        "    return torch.sigmoid(moved) * s.grad\n",
        "a local lambda": f"{LEAF}    formula = lambda: {SOFTPLUS}\n"
        "    return formula() * s.grad\n",
        "a seed given by keyword": "    s = x.clone().requires_grad_()\n"
        f"    s.backward(**{{'gradient': {SOFTPLUS}}})\n    return s.grad\n",
        "a gradient's name bound again to the formula": f"{LEAF}    f = s.grad\n"
        f"    f = {SOFTPLUS} * 1.25\n    return f\n",
        "operators on the input alone": "    s = torch.ones_like(x).requires_grad_()\n"
        "    s.sum().backward()\n    return s.grad / (1 + 2.718281828459045 ** -x)\n",
        "a seed for a vector-Jacobian product": "    _, g = torch.autograd.functional.vjp("
        f"lambda t: t, x, {SOFTPLUS})\n    return g\n",
        "a torch.func pullback": "    _, pull = torch.func.vjp(lambda t: t, x)\n"
        f"    return pull({SOFTPLUS})[0]\n",
        "a hook whose defaults hold the formula": "    s = x.clone().requires_grad_()\n"
        f"    s.register_hook(hook=lambda g, f={SOFTPLUS}: f * g)\n    s.sum().backward()\n"
        "    return s.grad\n",
        "forward mode times the scale": f"{LEAF}    j = torch.func.jacfwd(lambda t: "
        "torch.nn.functional.softplus(t).sum())(x)\n    return j * s.grad\n",
    }
)


@pytest.mark.parametrize("trick", sorted(HAND_MADE_RESULTS))
def test_a_result_autograd_did_not_produce_earns_nothing(trick):
    """Calling autograd beside a formula typed by hand, and taking from autograd only a factor
    (the grader's scale, however it is measured or spelled), does not count as using autograd:
    the result must come from the gradient autograd computes."""
    helper = (
        "from types import SimpleNamespace\n\n_saved = []\n\n\ndef _times(a, b):\n"
        "    return a * b\n\n\ndef _from_saved():\n    return torch.sigmoid(_saved[-1])\n\n\n"
    )
    answer = f"{helper}def softplus_grad(x):\n{HAND_MADE_RESULTS[trick]}"
    problem = _read(L7, {"fix_inplace": answer}).problems.get("test_fix_inplace", "")
    assert "using autograd" in problem and "take the result from the gradient" in problem


def test_the_red_team_scale_trick_and_hand_updates_earn_nothing():
    """The named attack (a leaf made from an input's value, its gradient as the scale) and the
    same trick in updates: parameters moved by a formula, or a formula written into .grad for
    the optimizer."""
    scale = (
        "def error_grad(w, xs, ts):\n    s = torch.tensor(float(w), requires_grad=True)\n"
        "    (s * 1.0).backward()\n    return 2 * ((w * xs - ts) * xs).sum() * float(s.grad)\n"
    )
    assert "combines" in _read(L3, {"nonscalar_error": scale}).problems["test_nonscalar_error"]
    step = (
        "def gradient_descent(f, x0, lr, steps):\n"
        "    x = torch.tensor(float(x0), requires_grad=True)\n"
        "    for _ in range(steps):\n        f(x).backward()\n        with torch.no_grad():\n"
        "            x -= lr * 1.25 * {slope}\n        x.grad = None\n    return x.item()\n"
    )
    hand = step.format(slope="(f(x + 1e-3) - f(x - 1e-3)) / 2e-3")
    assert (
        "using autograd" in _read(L5, {"gradient_descent": hand}).problems["test_gradient_descent"]
    )
    assert _read(L5, {"gradient_descent": step.format(slope="x.grad")}).problems == {}


RESULTS_FROM_AUTOGRAD = {  # correct answers in styles the reading must follow
    "vmap of torch.func.grad": "def derivative(f, xs):\n"
    "    return torch.func.vmap(torch.func.grad(f))(xs)\n",
    "a helper that returns a gradient function": "def _slope(f):\n"
    "    return torch.func.grad(f)\n\n\ndef derivative(f, xs):\n"
    "    return torch.vmap(_slope(f))(xs)\n",
    "a seed of ones made from the output": "def derivative(f, xs):\n"
    "    x = xs.detach().requires_grad_()\n    y = f(x)\n"
    "    y.backward(y.new_ones(y.shape))\n    return x.grad\n",
    "a hook that keeps the gradient": "def derivative(f, xs):\n    kept = []\n"
    "    x = xs.detach().requires_grad_()\n    x.register_hook(kept.append)\n"
    "    f(x).sum().backward()\n    return kept[0]\n",
    "a leaf made from computed values": "def derivative(f, xs):\n"
    "    h = torch.tanh(xs).detach().requires_grad_(True)\n    f(h).sum().backward()\n"
    "    return h.grad\n",
    "the gradient scaled by one over a size": "def derivative(f, xs, k=2):\n"
    "    x = xs.detach().requires_grad_()\n    for part in x.chunk(k):\n"
    "        f(part).sum().backward()\n    x.grad.mul_(1.0 / k)\n    return x.grad * k\n",
    "a list of moved points": "def derivative(f, xs):\n    x = xs.detach().requires_grad_()\n"
    "    f(x).sum().backward()\n    out = []\n    out.append(x.grad * 1.0)\n"
    "    return out[-1].view_as(xs)\n",
}


@pytest.mark.parametrize("style", sorted(RESULTS_FROM_AUTOGRAD))
def test_results_autograd_produced_are_read_as_such(style):
    """A gradient taken through torch.func, a helper, a seed built from the output's shape or a
    list, or scaled by a size that only cuts the data, is autograd's result (the lesson's own
    answers in other styles are in the alternative answer corpus)."""
    bindings = bindings_of([ast.parse(RESULTS_FROM_AUTOGRAD[style])])
    function = gradient_flow.defined("derivative", bindings)
    data = gradient_flow.differentiated_data(function, bindings)  # as if it were the solution
    assert gradient_flow.hand_made(function, bindings, True, data) is None


def test_with_or_without_an_optimizer_is_read_from_the_code():
    """An update the exercise wants without an optimizer earns nothing when the code builds one
    (however torch.optim is imported); fine-tuning that asks for one earns nothing when the
    code steps the parameters by hand."""
    L4 = "04_retain_graph_and_accumulation"
    with_sgd = (
        "from torch import optim\n\n\ndef sgd_step(params, lr):\n"
        "    live = [p for p in params if p.grad is not None]\n"
        "    optim.SGD(live, lr=lr).step()\n    for p in live:\n        p.grad = None\n"
    )
    problem = _read(L4, {"sgd_step": with_sgd}).problems["test_sgd_step"]
    assert "without an optimizer" in problem and "optim.SGD" in problem
    by_hand = (
        "def fine_tune(model, inputs, targets, steps, lr):\n    for layer in model[1:]:\n"
        "        layer.requires_grad_(False)\n    for _ in range(steps):\n"
        "        model.zero_grad()\n"
        "        torch.nn.functional.mse_loss(model(inputs), targets).backward()\n"
        "        with torch.no_grad():\n            for p in model[0].parameters():\n"
        "                p -= lr * p.grad\n"
    )
    assert "makes none" in _read(L7, {"fine_tune": by_hand}).problems["test_fine_tune"]


def test_deep_code_is_read_in_time_and_never_stops_the_reading():
    """Nested calls are read in linear time (each expression's origin is worked out once), and
    code nested past what the reading can follow costs that exercise, not the submission."""
    solution = _solution_source(L3, "weighted_grads")
    nested = "torch.sin(" * 60 + "x" + ")" * 60
    answer = solution.replace("    z = f(x)\n", f"    k = {nested}\n    z = f(x)\n", 1)
    assert answer != solution
    assert _read(L3, {"weighted_grads": answer}).problems == {}
    summed = solution.replace(
        "    z = f(x)\n", "    k = 2 * x" + " + x" * 2000 + "\n    z = f(x)\n", 1
    )
    problem = _read(L3, {"weighted_grads": summed}).problems["test_weighted_grads"]
    assert "too deeply to be read" in problem


def test_torch_private_modules_count_as_internals():
    """Forward mode reached through torch._functorch gets around by hand's reading of torch's
    public names: private parts of torch earn nothing and are flagged."""
    body = (
        "def dz_dx(x):\n    _, jf = linearize(lambda t: 3 * (2 * t + 3) ** 2, "
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
    "    return _grad(3 * (2 * t + 3) ** 2, t)[0]\n",
    "getattr passed around": "import functools\n"
    "_grad = functools.reduce(getattr, ['auto' + 'grad', 'gr' + 'ad'], torch)\n"
    "def dz_dx(x):\n    t = torch.tensor(float(x), requires_grad=True)\n"
    "    return _grad(3 * (2 * t + 3) ** 2, t)[0]\n",
    "backward nodes walked in a thread": "from concurrent.futures import ThreadPoolExecutor\n"
    "def _walk(x):\n    t = torch.tensor(float(x), requires_grad=True)\n"
    "    f = (3 * (2 * t + 3) ** 2).grad_fn\n    return f(torch.tensor(1.0))\n"
    "def dz_dx(x):\n    with ThreadPoolExecutor(1) as pool:\n"
    "        return pool.submit(_walk, x).result()\n",
}


@pytest.mark.parametrize("case", sorted(RED_TEAM))
def test_what_a_red_team_tried_against_by_hand_earns_nothing(case):
    """Autograd named only in strings, getattr passed as a value, and autograd's own nodes called
    in a thread (which runs with autograd on whatever the caller set): each found by hand."""
    assert "test_dz_dx" in _judged(L3, {"dz_dx": RED_TEAM[case]}).problems


L4 = "04_retain_graph_and_accumulation"
GRID_CALLS_HONEST = {
    "torch.func.grad of a lambda": "def partial_derivatives(f, xs, ys):\n"
    "    g = torch.func.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))\n"
    "    return g(xs, ys)\n",
    "applied at once": "def partial_derivatives(f, xs, ys):\n"
    "    return torch.func.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(xs, ys)\n",
    "a helper that sums": "def _total(f, x, y):\n    return f(x, y).sum()\n"
    "def partial_derivatives(f, xs, ys):\n"
    "    x, y = xs.clone().requires_grad_(), ys.clone().requires_grad_()\n"
    "    if x.dim() == 1:\n        _total(f, x, y).backward()\n"
    "    else:\n        f(x, y).sum().backward()\n    return x.grad, y.grad\n",
}
GRID_CALLS_TRICKS = {
    "f in a loop over the points": "def partial_derivatives(f, xs, ys):\n"
    "    out = []\n    for a, b in zip(xs, ys):\n"
    "        a, b = a.clone().requires_grad_(), b.clone().requires_grad_()\n"
    "        f(a, b).backward()\n        out.append((a.grad, b.grad))\n"
    "    return torch.stack([p[0] for p in out]), torch.stack([p[1] for p in out])\n",
    "f twice": "def partial_derivatives(f, xs, ys):\n"
    "    x, y = xs.clone().requires_grad_(), ys.clone().requires_grad_()\n"
    "    f(x, y.detach()).sum().backward()\n    f(x.detach(), y).sum().backward()\n"
    "    return x.grad, y.grad\n",
    "f in a comprehension, through a helper": "def _one(f, a, b):\n    return f(a, b)\n"
    "def partial_derivatives(f, xs, ys):\n"
    "    x, y = xs.clone().requires_grad_(), ys.clone().requires_grad_()\n"
    "    sum(_one(f, x[i:i + 1], y[i:i + 1]).sum() for i in range(len(x))).backward()\n"
    "    return x.grad, y.grad\n",
    "backward in a recursion": "def _back(x, y, f, n):\n"
    "    if n:\n        f(x, y).sum().backward(retain_graph=True)\n        _back(x, y, f, n - 1)\n"
    "def partial_derivatives(f, xs, ys):\n"
    "    x, y = xs.clone().requires_grad_(), ys.clone().requires_grad_()\n"
    "    _back(x, y, f, 1)\n    return x.grad, y.grad\n",
}
CHUNK_CALLS_TRICKS = {
    "one backward over the whole batch": "def accumulated_gradient(w, x, y, chunk_size):\n"
    "    w.grad = None\n    ((x @ w - y) ** 2).mean().backward()\n",
    "the chunks summed, then one backward": "def accumulated_gradient(w, x, y, chunk_size):\n"
    "    w.grad = None\n    loss = 0\n"
    "    for xc, yc in zip(x.split(chunk_size), y.split(chunk_size)):\n"
    "        loss = loss + ((xc @ w - yc) ** 2).sum() / len(y)\n    loss.backward()\n",
}


@pytest.mark.parametrize("style", sorted(GRID_CALLS_HONEST))
def test_calls_made_once_are_read_as_once(style):
    """A function handed to torch.func runs once where the transform runs; a helper counts
    where it is called; branches count as their busiest arm."""
    assert _read(L5, {"derivative_on_grid": GRID_CALLS_HONEST[style]}).problems == {}


@pytest.mark.parametrize("trick", sorted(GRID_CALLS_TRICKS))
def test_calls_made_more_often_than_asked_earn_nothing(trick):
    """Calls counted from the source, where the submission cannot change the count."""
    problems = _read(L5, {"derivative_on_grid": GRID_CALLS_TRICKS[trick]}).problems
    assert "one call of" in problems.get("test_derivative_on_grid", ""), problems


@pytest.mark.parametrize("trick", sorted(CHUNK_CALLS_TRICKS))
def test_one_backward_where_each_chunk_needs_its_own_earns_nothing(trick):
    problems = _read(L4, {"accumulated_gradient": CHUNK_CALLS_TRICKS[trick]}).problems
    assert "for each part" in problems.get("test_accumulated_gradient", ""), problems


def test_code_handed_where_the_reading_cannot_follow_is_left_to_the_probe():
    """`map(f, …)` runs f as often as map decides: no verdict from the source (the probe's
    count decides), never a refusal of an answer the reading cannot follow."""
    answer = (
        "def partial_derivatives(f, xs, ys):\n"
        "    x, y = xs.clone().requires_grad_(), ys.clone().requires_grad_()\n"
        "    (out,) = list(map(f, [x], [y]))\n    out.sum().backward()\n    return x.grad, y.grad\n"
    )
    assert _read(L5, {"derivative_on_grid": answer}).problems == {}
    tree = ast.parse(answer)
    assert call_counts.calls(tree.body[0], 0, {}) is None
    assert call_counts.calls(tree.body[0], call_counts.AUTOGRAD, {}) == call_counts.ONCE


L7_OWN_GRADIENTS = {
    "an autograd.Function": "class _Norm(torch.autograd.Function):\n"
    "    @staticmethod\n    def forward(ctx, v):\n        return (v * v).sum(1).sqrt()\n"
    "    @staticmethod\n    def backward(ctx, g):\n        return g[:, None]\n"
    "def safe_norm(v):\n    return _Norm.apply(v)\n",
    "straight through, with detach()": "def safe_norm(v):\n"
    "    n = torch.sqrt((v.detach() ** 2).sum(dim=1))\n"
    "    unit = torch.where(n[:, None] > 0, v.detach() / n.clamp(min=1e-30)[:, None], 0.0)\n"
    "    along = (v * unit).sum(dim=1)\n    return n + along - along.detach()\n",
    "a hook that cleans the gradient": "def safe_norm(v):\n"
    "    v.register_hook(lambda g: torch.nan_to_num(g, nan=0.0))\n"
    "    return torch.sqrt((v**2).sum(dim=1))\n",
    "through .data": "def _unit(v):\n    n = (v.data**2).sum(1).sqrt()\n    return n\n"
    "def safe_norm(v):\n    return _unit(v) + 0 * v.sum(1)\n",
}


@pytest.mark.parametrize("case", sorted(L7_OWN_GRADIENTS))
def test_a_gradient_of_its_own_where_autograd_must_differentiate_earns_nothing(case):
    """safe_norm must be torch operations that autograd differentiates as written: a backward of
    its own, a hook or a cut in the graph earns nothing, read from the source."""
    problems = _read(L7, {"safe_norm": L7_OWN_GRADIENTS[case]}).problems
    assert "differentiates as written" in problems.get("test_safe_norm", ""), problems


HONEST_SHAPES = {
    (L5, "derivative_on_grid", "an early return for a 0-d output"): (
        "def partial_derivatives(f, xs, ys):\n"
        "    x, y = xs.clone().requires_grad_(), ys.clone().requires_grad_()\n"
        "    out = f(x, y)\n    if out.dim() == 0:\n        out.backward()\n"
        "        return x.grad, y.grad\n    out.sum().backward()\n    return x.grad, y.grad\n"
    ),
    (L5, "derivative_on_grid", "a try with a fallback"): (
        "def partial_derivatives(f, xs, ys):\n"
        "    x, y = xs.clone().requires_grad_(), ys.clone().requires_grad_()\n"
        "    out = f(x, y)\n    try:\n        out.backward()\n"
        "    except RuntimeError:\n        out.sum().backward()\n    return x.grad, y.grad\n"
    ),
    (L5, "derivative_on_grid", "leaves popped into a list"): (
        "def partial_derivatives(f, xs, ys):\n    todo, leaves = [xs, ys], []\n"
        "    while todo:\n        leaves.append(todo.pop(0).detach().requires_grad_())\n"
        "    f(*leaves).sum().backward()\n    return leaves[0].grad, leaves[1].grad\n"
    ),
    (L4, "accumulated_gradient", "a recursion in a nested def"): (
        "def accumulated_gradient(w, x, y, chunk_size):\n    w.grad = None\n"
        "    xs, ys = x.split(chunk_size), y.split(chunk_size)\n    def step(i):\n"
        "        if i == len(xs):\n            return\n"
        "        (((xs[i] @ w - ys[i]) ** 2).sum() / len(y)).backward()\n        step(i + 1)\n"
        "    step(0)\n"
    ),
    (L7, "safe_norm", "a variable named data"): (
        "def safe_norm(v):\n    data = (v**2).sum(dim=1)\n    nonzero = data > 0\n"
        "    return torch.where(nonzero, torch.sqrt(torch.where(nonzero, data, 1.0)), 0.0)\n"
    ),
    (L7, "safe_norm", "a helper named as a lesson cell's variable"): (
        "def value(s):\n    return torch.where(s > 0, torch.where(s > 0, s, 1.0).sqrt(), 0.0)\n"
        "def safe_norm(v):\n    return value((v**2).sum(dim=1))\n"
    ),
}


@pytest.mark.parametrize("case", sorted(HONEST_SHAPES))
def test_correct_answers_a_fairness_pass_wrote_read_clean(case):
    """A branch that returns is one path, a handler runs instead of the rest of its try, a nested
    def sees its own name, a container of leaves holds leaves, and a lesson cell's data is not
    the answer's code."""
    lesson, cell, _ = case
    assert _read(lesson, {cell: HONEST_SHAPES[case]}) == how.Reading({}, {})


def test_a_gradient_of_its_own_through_any_hook_or_alias_earns_nothing():
    for answer in (
        "def safe_norm(v):\n    s = (v**2).sum(1)\n"
        "    s.grad_fn.register_prehook(lambda g: (torch.nan_to_num(g[0]),))\n"
        "    return s.sqrt()\n",
        "from torch import no_grad as quiet\ndef safe_norm(v):\n    with quiet():\n"
        "        c = v * 1\n    return (v * c).sum(1) / (c * c).sum(1).clamp(min=1e-30).sqrt()\n",
        "def safe_norm(v):\n    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, "
        "lambda t: t):\n        return (v**2).sum(1).sqrt()\n",
    ):
        problems = _read(L7, {"safe_norm": answer}).problems
        assert "differentiates as written" in problems.get("test_safe_norm", ""), answer


def _long_answer(statements: int) -> str:
    """A using-autograd answer of many chained statements: the reading takes time per pair."""
    lines = ["def error_grad(w, xs, ts):", "    w = torch.tensor(float(w), requires_grad=True)"]
    lines += ["    a0 = w"] + [
        f"    a{i} = a{i - 1} * 1.0 + a{max(i - 2, 0)}" for i in range(1, statements)
    ]
    lines += [f"    ((a{statements - 1} * xs - ts) ** 2).sum().backward()", "    return w.grad"]
    return "\n".join(lines) + "\n"


def test_a_reading_past_its_time_stops_and_is_flagged_for_review():
    """A notebook whose reading runs past the limit is not read on: the grading process is free
    again at the limit, and the instructor is told to look (the limit acted: the flag says so)."""
    source, nb = solution_with_answers(L3, {"nonscalar_error": _long_answer(4000)})
    probes = probes_file(L3).read_text()
    judge_source(source, source, probes, seed=7)  # the lesson's rules, read once per lesson
    started = time.monotonic()
    reading = judge_source(nb, source, probes, seed=7, seconds=0.3)
    assert time.monotonic() - started < 0.3 + 5.0  # unbounded, this reading takes about 10 s
    assert reading.problems == {}
    assert "took over 0.3 s" in reading.flags[rules.UNREAD], reading.flags


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
