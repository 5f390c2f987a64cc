"""The check helpers pass right answers and explain wrong ones in the student's terms."""

import contextlib
import io
import subprocess
import sys

import numpy
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.checks import (
    CheckFailed,
    as_number,
    call,
    call_by_hand,
    call_with_autograd,
    call_with_hook,
    check_derivative,
    check_error_message,
    check_grad,
    check_grad_fn,
    check_tensor,
    check_tracked_leaf,
    check_value,
    check_warns,
)


def _seed_o(x):
    return 0.5 * (5 * (x + 1) ** 2).sum()


def test_a_name_not_defined_says_which_cells_to_run():
    """After a kernel restart, a test cell that meets a name no cell defined yet (its own, or
    one the answer uses) says to run the cells above, instead of a bare NameError."""
    script = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_cell('from grader.checks import call')\n"
        "shell.run_cell('batch_gradients')\n"
        "shell.run_cell('def f(x):\\n    return torch.ones(1)')\n"
        "shell.run_cell('call(f, 1, name=\"f\")')\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert "name 'batch_gradients' is not defined. Run the cells above this one first" in shown
    assert "f uses torch, which is not defined. Run the cells above this one first" in shown


def test_check_grad_passes_the_seed_gradient():
    """o = 1/2 sum 5(x+1)^2 at x = 1 has gradient 10 everywhere."""
    x = torch.ones(2, requires_grad=True)
    _seed_o(x).backward()
    check_grad(x, [10.0, 10.0], "x")


def test_check_grad_names_forgotten_zeroing():
    """A gradient accumulated over two backward calls is explained as a missing zero_()."""
    x = torch.ones(2, requires_grad=True)
    _seed_o(x).backward()
    _seed_o(x).backward()
    with pytest.raises(CheckFailed, match="accumulate.*zero x.grad"):
        check_grad(x, [10.0, 10.0], "x")


def test_check_grad_names_a_non_leaf():
    """Reading .grad of an intermediate result is explained, without a warning on stderr."""
    x = torch.ones(2, requires_grad=True)
    y = 5 * (x + 1) ** 2
    y.sum().backward()
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(CheckFailed, match="not a leaf"):
        check_grad(y, [10.0, 10.0], "y")
    assert stderr.getvalue() == ""


def test_check_grad_before_backward_says_to_call_backward():
    """A leaf whose .grad is still None gets a message that names backward()."""
    with pytest.raises(CheckFailed, match=r"x.grad is None: call .backward\(\)"):
        check_grad(torch.ones(2, requires_grad=True), [1.0, 1.0], "x")


def test_check_tensor_explains_a_listed_mistake():
    """A value matching a known mistake gets that mistake's explanation."""
    with pytest.raises(CheckFailed, match="used sum where the mean was asked"):
        check_tensor(
            torch.tensor([9.0, 9.0]),
            [4.5, 4.5],
            "x.grad",
            mistakes={"you used sum where the mean was asked": [9.0, 9.0]},
        )


def test_two_mistakes_that_give_one_value_are_both_named():
    """On a drawn input two mistakes can give the same numbers: the message names both, so the
    student is told theirs whichever it was (a wrong answer of lesson 9 got the other's)."""
    from grader.lesson_checks.lesson_09 import check_saved_bytes

    mistakes = {"you used sum where the mean was asked.": [9.0], "you doubled it.": [9.0]}
    with pytest.raises(CheckFailed) as told:
        check_tensor(torch.tensor([9.0]), [4.5], "x.grad", mistakes=mistakes)
    assert "sum where the mean was asked. Or you doubled it." in str(told.value)
    with pytest.raises(CheckFailed) as told:
        check_saved_bytes(160, 80, per_save=160, elements=20, four_bytes=80, text="f", x_sized=160)
    assert "each time a node saves it" in str(told.value)
    assert "counts every storage as large as x" in str(told.value)


def test_check_tensor_reports_shape_before_values():
    """A wrong shape is reported as a shape problem."""
    with pytest.raises(CheckFailed, match=r"shape \(3,\), expected \(2,\)"):
        check_tensor(torch.zeros(3), [0.0, 0.0], "t")


def test_check_tensor_rejects_non_tensors():
    """A list where a tensor was asked is named as such."""
    with pytest.raises(CheckFailed, match="should be a torch.Tensor, but it is a list"):
        check_tensor([1.0], [1.0], "t")


@given(st.floats(-5, 5), st.floats(0.5, 3))
def test_check_derivative_accepts_a_correct_derivation(shift, scale):
    """d/dx scale*(x+shift)^2 = 2*scale*(x+shift) passes at random points."""
    check_derivative(
        lambda x: 2 * scale * (x + shift), lambda x: scale * (x + shift) ** 2, "derivative"
    )


@given(st.floats(-3, 3))
def test_autograd_reference_agrees_with_finite_differences(x):
    """The reference the derivative check uses agrees with a central difference."""
    f = lambda t: 3 * (2 * t + 3) ** 2  # noqa: E731 -- the seed's z(x)
    h = 1e-6
    numeric = (f(x + h) - f(x - h)) / (2 * h)
    check_derivative(lambda t: 12 * (2 * t + 3), f, "dz_dx", points=[x])
    assert abs(numeric - 12 * (2 * x + 3)) < 1e-3 * max(1.0, abs(numeric))


def test_check_derivative_rejects_a_hard_coded_number():
    """Returning the seed's 60 for every x fails at random points."""
    with pytest.raises(CheckFailed, match="autograd says the derivative"):
        check_derivative(lambda x: 60.0, lambda x: 3 * (2 * x + 3) ** 2, "dz_dx")


def test_check_derivative_reports_a_crashing_function():
    """An exception inside the student's function becomes a failed check naming the call."""
    with pytest.raises(CheckFailed, match=r"dz_dx\(1.0\) raised ZeroDivisionError"):
        check_derivative(lambda x: 1 / 0, lambda x: x**2, "dz_dx", points=[1.0])


def test_check_tracked_leaf_explains_integer_tensors():
    """An integer tensor is explained as the wrong dtype."""
    with pytest.raises(CheckFailed, match="only floating-point"):
        check_tracked_leaf(torch.tensor([1, 2]), "t")


def test_check_tracked_leaf_explains_a_missing_flag():
    """A float tensor without requires_grad is explained."""
    with pytest.raises(CheckFailed, match="requires_grad is False"):
        check_tracked_leaf(torch.tensor([1.0]), "t")


def test_check_tracked_leaf_explains_a_computed_tensor():
    """A tensor computed from a tracked one is not a leaf."""
    with pytest.raises(CheckFailed, match="not a leaf"):
        check_tracked_leaf(torch.ones(2, requires_grad=True) * 2, "t")


def test_check_error_message_needs_the_right_error():
    """Another error's message, or none, fails with an explanation."""
    check_error_message("Only Tensors of floating point dtype", "floating point", "m")
    with pytest.raises(CheckFailed, match="should hold the error message"):
        check_error_message(None, "floating point", "m")
    with pytest.raises(CheckFailed, match="not the error this exercise asks for"):
        check_error_message("shape mismatch", "floating point", "m")


def test_check_value_adds_the_hint():
    """A wrong prediction carries the hint."""
    check_value(True, True, "p")
    with pytest.raises(CheckFailed, match="p is True, but that is not right. Think again"):
        check_value(True, False, "p", hint="Think again.")


def test_call_wraps_errors_from_student_code():
    """A student's function that raises is reported with its arguments."""
    with pytest.raises(CheckFailed, match=r"f\(\[1, 2\]\) raised ValueError: bad"):
        call(lambda v: (_ for _ in ()).throw(ValueError("bad")), [1, 2], name="f")


def test_check_grad_fn_names_the_node():
    """A tensor made by another operation is named, and a leaf is recognised."""
    x = torch.ones(2, requires_grad=True)
    check_grad_fn(x * 2, "MulBackward0", "y")
    check_grad_fn(x, None, "x")
    with pytest.raises(CheckFailed, match="made by AddBackward0, but the exercise asks for Mul"):
        check_grad_fn(x + 2, "MulBackward0", "y")
    with pytest.raises(CheckFailed, match="has no grad_fn"):
        check_grad_fn(torch.ones(2), "MulBackward0", "y")


def test_check_warns_records_the_warning_without_printing():
    """Reading .grad of a non-leaf warns; check_warns sees it and stderr stays empty."""
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert (
            check_warns(lambda: y.grad, name="y.grad", category=UserWarning, match="leaf") is None
        )
    assert stderr.getvalue() == ""
    with pytest.raises(CheckFailed, match="should warn with a UserWarning"):
        check_warns(lambda: x.grad, name="x.grad", category=UserWarning)


def test_check_value_accepts_an_int_for_a_float_but_not_a_lookalike():
    """6 answers 6.0; True does not answer 1, and an always-equal object answers nothing."""

    class Anything:
        def __eq__(self, other):
            return True

    check_value(6, 6.0, "p")
    with pytest.raises(CheckFailed):
        check_value(True, 1, "p")
    with pytest.raises(CheckFailed):
        check_value(Anything(), "AddBackward0", "p")


def test_a_failed_check_shows_one_line_without_the_helpers_frames():
    """IPython shows a CheckFailed as its explanation alone, with no frame of grader.checks."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("from grader.checks import check_value\ncheck_value(3, 4, 'answer')")
    etype, value, tb = shell._get_exc_info()
    shown = value._render_traceback_()
    assert shown == ["CheckFailed: answer is 3, but that is not right."]
    assert not any("checks.py" in line for line in shown)


def test_an_untouched_exercise_says_it_is_not_written_and_how_to_start():
    """Calling a function that still raises the stub's NotImplementedError explains what to do."""

    def make_leaf(values):
        raise NotImplementedError("Not written yet: replace this line with your answer")

    with pytest.raises(CheckFailed) as failed:
        call(make_leaf, [1.0], name="make_leaf")
    assert str(failed.value).startswith("make_leaf is not written yet")
    assert "replace the line `raise NotImplementedError(...)` with your code" in str(failed.value)


def test_an_error_in_student_code_says_what_was_called_and_what_to_do():
    """Another error names the call, the error, and the way to a fix."""

    def halve(x):
        return x / 0

    with pytest.raises(CheckFailed, match=r"halve\(2\) raised ZeroDivisionError: .*Fix halve"):
        call(halve, 2, name="halve")


def _derivative_by_autograd(x):
    leaf = torch.tensor(x, requires_grad=True)
    (leaf**3 + 2 * leaf).backward()
    return leaf.grad.item()


def _derivative_by_hand(x):
    return 3 * x**2 + 2


def test_call_by_hand_runs_a_formula_and_explains_autograd():
    """An answer "by hand" runs with autograd switched off; one that calls backward() is told so."""
    assert call_by_hand(_derivative_by_hand, 2.0, name="df") == 14.0
    with pytest.raises(CheckFailed) as failed:
        call_by_hand(_derivative_by_autograd, 2.0, name="df")
    assert str(failed.value).startswith("df used autograd")
    assert torch.is_grad_enabled() and torch.autograd.backward.__module__ == "torch.autograd"


def test_call_with_autograd_requires_a_backward_or_grad_call():
    """An answer "using autograd" must call it; a formula is told the exercise asks for autograd."""
    assert call_with_autograd(_derivative_by_autograd, 2.0, name="df") == 14.0
    with pytest.raises(CheckFailed) as failed:
        call_with_autograd(_derivative_by_hand, 2.0, name="df")
    assert "without calling autograd" in str(failed.value)


def _clamped_by_hook(x):
    h = x * 3
    h.register_hook(lambda grad: grad.clamp(-1, 1))
    h.sum().backward()
    return x.grad


def _clamped_by_formula(x):
    return torch.full_like(x, 3.0)


def test_call_with_hook_requires_a_registered_hook():
    """An answer "with a hook" must register one; the same numbers without a hook are told so."""
    x = torch.ones(2, requires_grad=True)
    assert torch.equal(call_with_hook(_clamped_by_hook, x, name="clip"), torch.full((2,), 3.0))
    with pytest.raises(CheckFailed) as failed:
        call_with_hook(_clamped_by_formula, x, name="clip")
    assert "registered no hook" in str(failed.value)
    assert torch.Tensor.register_hook.__qualname__ == "Tensor.register_hook"


def test_numbers_in_any_form_count_as_numbers():
    """A Python, NumPy or 0-d tensor number is a number; booleans and longer tensors are not."""
    for value in (6, 6.0, numpy.float32(6.0), torch.tensor(6.0), torch.tensor(6)):
        assert as_number(value) == 6
    for value in (True, torch.tensor(True), torch.ones(2), "6", None):
        assert as_number(value) is None
    check_value(torch.tensor(6.0), 6.0, "predict_a")


def test_optimizer_steps_counts_steps_of_any_torch_optimizer():
    """An exercise that asks for an optimizer sees each step of any torch.optim optimizer; a
    hand-written update takes none, and the hook is gone after the block."""
    from grader.checks import optimizer_steps

    w = torch.ones(2, requires_grad=True)
    sgd, adam = torch.optim.SGD([w], lr=0.1), torch.optim.Adam([w], lr=0.1)
    with optimizer_steps() as stepped:
        for optimizer in (sgd, adam, sgd):
            (w**2).sum().backward()
            optimizer.step()
        with torch.no_grad():
            w -= 0.1 * w.grad
    assert stepped == [sgd, adam, sgd]
    sgd.step()
    assert len(stepped) == 3


def test_an_answer_cell_that_did_not_run_to_its_end_is_named_not_blamed():
    """Lesson 5's test of ScaledSquare, when neither name is defined (the answer cell stopped at
    an error after a restart), says the cell has not run and which cells to run, not that the
    class is wrong; a class of the wrong kind is still told so."""
    from grader.lesson_checks.lesson_05 import scaled_square_to_test

    with pytest.raises(CheckFailed, match="has not run\\s+to its end") as told:
        scaled_square_to_test({})
    assert "Run the cells above this one first" in str(told.value)
    with pytest.raises(CheckFailed, match="not a class derived from"):
        scaled_square_to_test({"ScaledSquare": object})


def test_a_not_implemented_error_from_inside_a_written_answer_is_not_called_unwritten():
    """Only the released stub (or a bare NotImplementedError) means "not written yet"; one that
    torch raises inside a written answer (a custom Function without a jvp under forward mode,
    say) is shown as what it is."""

    def stub(x):
        raise NotImplementedError("Not written yet: replace this line with your answer.")

    def written(x):
        raise NotImplementedError("You must implement the jvp function for custom Function")

    with pytest.raises(CheckFailed, match="f is not written yet"):
        call(stub, 1.0, name="f")
    with pytest.raises(CheckFailed, match="raised NotImplementedError: You must implement") as e:
        call(written, 1.0, name="f")
    assert "not written yet" not in str(e.value)


def _unit_rows_by_rsqrt(v):
    """Lesson 10's unit_rows written another way: the same numbers up to float32 rounding."""
    squares = (v * v).sum(dim=1, keepdim=True)
    nonzero = squares != 0
    return torch.where(nonzero, v * torch.rsqrt(torch.where(nonzero, squares, 1.0)), 0.0)


def _unit_rows_with_a_slip(v):
    """1e-11 added to each length: off by 1e-3 or more on a row of length 1e-8 or less."""
    length = v.norm(dim=1, keepdim=True)
    return _unit_rows_by_rsqrt(v) * length / (length + 1e-11)


def _unit_rows_draw(draw):
    """Rows and weights as lesson 10's hidden test draws them, and the float64 answers."""
    rows = [[draw.uniform(-2, 2) for _ in range(3)] for _ in range(5)]
    rows[0], rows[1] = [0.0] * 3, [x * 2e-9 for x in rows[1]]
    weights = [[draw.uniform(-1, 1) for _ in range(3)] for _ in range(5)]
    v, w = torch.tensor(rows, dtype=torch.float64), torch.tensor(weights, dtype=torch.float64)
    length = v.norm(dim=1, keepdim=True).clamp(min=1e-300)
    d = v / length
    gradient = (w - (w * d).sum(1, keepdim=True) * d) / length
    gradient[0] = 0.0
    return rows, weights, d.float(), gradient.float()


def test_a_correct_unit_rows_passes_on_every_draw_however_its_gradient_cancels():
    """On a row of length 1e-9 the gradient is about 1e9 and float32 rounding alone errs by
    about 100, even on an entry that nearly cancels: the visible check and the probe compare
    such a row times its length, so an answer written another way than the solution passes on
    every draw (about 1 draw in 60 failed when they compared the raw gradient), and a slip on
    the length still fails."""
    import random

    import nbformat

    from grader.cells import by_grade_id
    from grader.course import solution_notebook
    from grader.judging.reference import probes_file
    from grader.judging.verdict import verdict
    from grader.lesson_checks.lesson_10 import check_unit_rows
    from grader.probing import load_probes, run_probe

    draw = random.Random(10)
    for _ in range(200):
        check_unit_rows(_unit_rows_by_rsqrt, *_unit_rows_draw(draw))
    slipped = _unit_rows_draw(draw)
    with pytest.raises(CheckFailed, match="row 1 of unit_rows\\(v\\) has length"):
        check_unit_rows(_unit_rows_with_a_slip, *slipped)

    lesson = "10_branches_and_kinks"
    solution = {"torch": torch}
    exec(
        by_grade_id(nbformat.read(solution_notebook(lesson), as_version=4))["unit_rows"].source,
        solution,
    )
    probes = load_probes(probes_file(lesson).read_text())
    for seed in range(300):
        wanted = run_probe(probes, "test_unit_rows", solution, seed)
        other = run_probe(probes, "test_unit_rows", {"unit_rows": _unit_rows_by_rsqrt}, seed)
        slip = run_probe(probes, "test_unit_rows", {"unit_rows": _unit_rows_with_a_slip}, seed)
        assert verdict(wanted, other) is None, seed
        assert verdict(wanted, slip) is not None, seed
