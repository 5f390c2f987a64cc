"""The probes and the judge: every test is judged outside the submission, on fresh inputs."""

import math

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.cells import autograded_tests
from grader.course import solution_notebook
from grader.judging.reference import probes_file
from grader.judging.verdict import ADVICE, CELL_FAILED, VERDICT_KEY, judge_tests, verdict
from grader.probing import load_probes

RULE = {"rtol": 1e-4, "atol": 1e-5}
TENSOR = {"shape": [2], "values": [1.5, -2.0]}


def test_every_test_cell_has_a_probe_and_every_probe_a_test_cell(lesson):
    """A test cell without a probe would be judged inside the submission, where it can be forged."""
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    probes = load_probes(probes_file(lesson).read_text())
    assert sorted(probes) == sorted(autograded_tests(nb).values())


def test_no_constant_report_passes_any_probe(lesson, reference_server):
    """Reporting True (or False, 0, "") for every observation fails every test: each probe
    observes values that only a working answer gives."""
    for grade_id, expected in reference_server.observe(lesson, 7).items():
        for constant in (True, False, 0, 0.0, "", None):
            forged = [[label, constant] for label, _, _ in expected]
            assert verdict(expected, forged) is not None, (grade_id, constant)


def test_the_inputs_are_drawn_at_grading_time(reference_server):
    """Two seeds give different inputs, so the answers cannot be known before grading."""
    lesson = "01_tensors_and_requires_grad"
    first, second = (reference_server.observe(lesson, seed) for seed in (1, 2))
    assert first["test_make_leaf"] != second["test_make_leaf"]
    assert first["test_snapshot"] != second["test_snapshot"]


def _expected(value, **rule):
    return [["answer", value, {**RULE, **rule}]]


def test_the_same_observations_pass():
    """The solution's own report passes."""
    for value in (True, 3, 2.5, "SubBackward0", None, [1.0, 2.0], TENSOR):
        assert verdict(_expected(value), [["answer", value]]) is None


def test_numbers_pass_within_tolerance_only():
    """Floats are compared within rtol/atol; an int stands for an equal float."""
    assert verdict(_expected(2.5), [["answer", 2.50001]]) is None
    assert verdict(_expected(6.0), [["answer", 6]]) is None
    assert "differs from what a correct answer gives" in verdict(_expected(2.5), [["answer", 2.6]])
    assert verdict(_expected(math.inf), [["answer", math.nan]]) is not None


def test_types_are_not_confused():
    """True is not 1, 5.0 is not the whole number 5, a list is not a tensor."""
    assert verdict(_expected(1.0), [["answer", True]]) is not None
    assert verdict(_expected(True), [["answer", 1]]) is not None
    assert verdict(_expected(5), [["answer", 5.0]]) is not None
    assert verdict(_expected(TENSOR), [["answer", [1.5, -2.0]]]) is not None
    assert verdict(_expected(TENSOR), [["answer", {**TENSOR, "shape": [2, 1]}]]) is not None


def test_a_message_must_be_one_torch_prints():
    """An error message passes only if it is exactly one of the genuine texts."""
    expected = _expected("m", one_of=["only Tensors of floating point dtype can require gradients"])
    genuine = [["answer", "only Tensors of floating point dtype can require gradients"]]
    assert verdict(expected, genuine) is None
    assert verdict(expected, [["answer", "floating point ... can require gradients"]]) is not None


def test_missing_extra_renamed_and_failed_observations_fail():
    """Each way a report can fall short names what is wrong."""
    expected = _expected(2.5)
    assert "no observations" in verdict(expected, None)
    assert "nothing was reported" in verdict(expected, [])
    assert "more observations" in verdict(expected, [["answer", 2.5], ["answer", 2.5]])
    assert "something else was reported" in verdict(expected, [["other", 2.5]])
    stopped = verdict(expected, [["error", "NotImplementedError: "]])
    assert stopped == "answer: the code stopped with NotImplementedError"


def test_how_an_answer_works_is_named_before_the_values_it_changed():
    """A formula that skipped autograd gives values off by the grader's scale: the explanation
    says autograd was not called, not just that the values differ."""
    rule = {"rtol": 1e-4, "atol": 1e-5}
    expected = [["f(x)", 1.25, rule], ["f called autograd", True, rule]]
    problem = verdict(expected, [["f(x)", 1.0], ["f called autograd", False]])
    assert (
        problem == "f called autograd: no, but the exercise asks for it, and a correct answer does"
    )
    assert "value differs" in verdict(expected, [["f(x)", 1.0], ["f called autograd", True]])


SECRET = "def test_make_leaf(student, observe, draw):"


@pytest.mark.parametrize(
    "report",
    [
        [["error", f"ValueError: {SECRET}"]],
        [["error", f"{SECRET}: boom"]],
        [["answer", SECRET]],
        [[SECRET, 2.5]],
        [["answer", {"shape": [1], "values": [SECRET]}]],
    ],
)
def test_an_explanation_quotes_nothing_the_submission_reported(report):
    """The explanation names the reference's label and the kind of problem: no value, message
    or label the submission sent, and an error type only if Python or torch defines it."""
    shown = verdict(_expected(2.5), report)
    assert shown.startswith("answer: ") and "test_make_leaf" not in shown and "draw" not in shown
    assert shown.endswith(("ValueError", "an error", "in its place", "a correct answer gives"))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


@given(JSON)
def test_any_report_gets_a_verdict_without_crashing(report):
    """Whatever a submission sends back, the judge answers, and only the right data passes."""
    result = verdict([["answer", TENSOR, RULE], ["flag", False, RULE]], report)
    if result is None:
        assert report[1] == ["flag", False] and report[0][1]["shape"] == [2]
    else:
        assert isinstance(result, str)


def test_an_answer_left_unread_is_never_taken_for_the_next_seed(reference_server):
    """The server answers each seed with its own observations, even after a question whose
    answer nobody collected (a submission that failed between asking and collecting)."""
    lesson = "01_tensors_and_requires_grad"
    reference_server.ask(lesson, [11])
    assert reference_server.observe(lesson, 12) == reference_server.observe(lesson, 12)
    assert reference_server.observe(lesson, 12) != reference_server.observe(lesson, 11)


def _passed_test_cell(grade_id: str):
    cell = nbformat.v4.new_code_cell('"""Check the answer."""')
    cell.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": grade_id,
        "locked": True,
        "points": 2,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    return cell


def test_a_disagreeing_probe_tells_the_student_what_to_do():
    """A test that passed in the notebook but not on the grader's inputs loses its points, and
    its output says the answer may fit only the visible example and what to do about it."""
    nb = nbformat.v4.new_notebook(cells=[_passed_test_cell("test_a"), _passed_test_cell("test_b")])
    verdicts = judge_tests(
        nb, {"test_a": _expected(2.5)}, {"test_a": [["answer", 6.0]], "test_b": []}
    )
    assert verdicts["test_a"].points == 0 and verdicts["test_b"].points == 0
    shown = nb.cells[0].outputs[-1].evalue
    assert "differs from what a correct answer gives" in shown and shown.endswith(ADVICE)
    assert nb.cells[0].metadata[VERDICT_KEY] == shown  # kept for the feedback page
    assert "compute the result from its inputs" in ADVICE
    assert ADVICE not in nb.cells[1].outputs[-1].evalue  # no probe: the instructor's problem


def test_make_leaf_is_never_probed_with_a_grid_a_zeros_answer_matches():
    """Lesson 1's probe asks for grids of at least two cells, for any seed: the grid 0, 1, 2, …
    then holds a number other than 0, so an answer returning `torch.zeros(rows, cols)` could not
    pass on an unlucky seed."""
    import torch

    from grader.probing import run_probe

    probes = load_probes(probes_file("01_tensors_and_requires_grad").read_text())
    drawn = []

    def make_leaf(rows, cols):
        drawn.append(rows * cols)
        return torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols).requires_grad_()

    for seed in range(1500):
        run_probe(probes, "test_make_leaf", {"make_leaf": make_leaf}, seed)
    assert len(drawn) == 3000 and min(drawn) >= 2


def test_a_lesson_without_probes_is_scored_as_nbgrader_scores_it():
    """No probes at all: each test cell keeps what its own run gives, as in stock nbgrader (a
    number it returns is partial credit, an error is 0), and a failure says the cell failed."""
    partial = _passed_test_cell("test_partial")
    partial.outputs = [
        nbformat.v4.new_output("execute_result", data={"text/plain": "0.5"}, execution_count=1)
    ]
    failed = _passed_test_cell("test_failed")
    failed.outputs = [
        nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[])
    ]
    nb = nbformat.v4.new_notebook(cells=[_passed_test_cell("test_passed"), partial, failed])
    verdicts = judge_tests(nb, {}, {}, judged=False)
    assert [v.points for v in verdicts.values()] == [2, 0.5, 0]
    assert nb.cells[2].metadata[VERDICT_KEY] == CELL_FAILED
    assert nb.cells[0].metadata[VERDICT_KEY] is None
