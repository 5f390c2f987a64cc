"""A lesson added by following the README's *Add a lesson* guide alone grades right, end to end.

In a copy of the kit (its own `grader`, `solutions/`, `notebooks/` and `tests/`), a new lesson,
`08_square_grad`, is written as the guide says: the solution notebook on lesson 1's skeleton with
nbgrader's cell metadata (three exercises with hidden tests and a cell that shows an error, as
`grader check` requires of every lesson), `probes.py` beside it (`new_lesson/probes.py`), and its
typical wrong and alternative answers (`new_lesson/*.yml`). Then the guide's commands run in the
copy, as `make` runs them: `grader outputs`, `grader release`, `grader check`; and a course made
with `grader init` before the lesson existed grades three submissions of the released notebook.
"""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import nbformat
import pytest

from grader.course import REPO_ROOT
from grader.judging.reference import JUDGED

pytestmark = pytest.mark.integration  # grades or serves whole courses through the real pipeline

LESSON = "08_square_grad"
FIXTURES = Path(__file__).parent / "new_lesson"
# What the copy leaves out: environments, build outputs, course state and caches.
NOT_COPIED = {".git", ".venv", "build", "autograded", "feedback", "gradebook.db", "__pycache__"}
NOT_COPIED |= {".pytest_cache", ".ruff_cache", ".hypothesis", "submitted", "collect_backup"}
COMMAND_SECONDS = 600


def _nbgrader(grade_id: str, *, points: int = 0) -> dict:
    """The nbgrader metadata of lesson 1's cells: an answer cell, or a test cell with points."""
    if points:
        return {
            "grade": True,
            "grade_id": grade_id,
            "locked": True,
            "points": points,
            "schema_version": 3,
            "solution": False,
            "task": False,
        }
    return {
        "grade": False,
        "grade_id": grade_id,
        "locked": False,
        "schema_version": 3,
        "solution": True,
        "task": False,
    }


def _exercise(heading: str, text: str, answer: tuple[str, str], test: tuple[str, str]) -> list:
    """An exercise's text, its answer cell and its test cell (2 points)."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    (answer_id, answer_source), (test_id, test_source) = answer, test
    return [
        md(f"### {heading}\n\n{text}"),
        code(answer_source, metadata={"nbgrader": _nbgrader(answer_id)}),
        code(test_source, metadata={"nbgrader": _nbgrader(test_id, points=2)}),
    ]


SUM_GRAD = '''\
def sum_grad(f, x):
    """Return the gradient of f(x).sum() at x, computed by autograd."""
    ### BEGIN SOLUTION
    x = x.detach().clone().requires_grad_()
    f(x).sum().backward()
    return x.grad
    ### END SOLUTION'''

TEST_SUM_GRAD = '''\
"""Check that sum_grad(f, x) returns the gradient of f(x).sum() from autograd: 2x for a square."""
from grader.checks import call_with_autograd, check_tensor

_x = torch.tensor([1.0, -2.0, 3.0])
_result = call_with_autograd(sum_grad, lambda t: t**2, _x, name="sum_grad")
check_tensor(
    _result,
    [2.0, -4.0, 6.0],
    "sum_grad(lambda t: t**2, tensor([1., -2., 3.]))",
    mistakes={
        "that is f(x), the value, not its gradient. Return the .grad of x.": [1.0, 4.0, 9.0],
        "it is all ones: that is the gradient of x.sum(). Apply f first.": [1.0, 1.0, 1.0],
    },
)
### BEGIN HIDDEN TESTS
_x = torch.randn(2, 3, dtype=torch.float64)
_result = call_with_autograd(sum_grad, torch.sin, _x, name="sum_grad")
check_tensor(_result, torch.cos(_x), "sum_grad(torch.sin, x) for a random x")
### END HIDDEN TESTS'''

BY_HAND = '''\
def square_grad_by_hand(x):
    """Return the gradient of (x**2).sum() at x, from its formula."""
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION'''

TEST_BY_HAND = '''\
"""Check that square_grad_by_hand(x) returns 2x, computed without autograd."""
from grader.checks import call_by_hand, check_tensor

_x = torch.tensor([1.0, -2.0, 3.0])
_result = call_by_hand(square_grad_by_hand, _x, name="square_grad_by_hand")
check_tensor(
    _result,
    [2.0, -4.0, 6.0],
    "square_grad_by_hand(tensor([1., -2., 3.]))",
    mistakes={
        "that is x**2, the value, not its gradient: differentiate it.": [1.0, 4.0, 9.0],
        "it is half the right gradient: the derivative of x**2 is 2x.": [1.0, -2.0, 3.0],
    },
)
### BEGIN HIDDEN TESTS
_x = torch.randn(4, dtype=torch.float64)
_result = call_by_hand(square_grad_by_hand, _x, name="square_grad_by_hand")
check_tensor(_result, 2 * _x, "square_grad_by_hand(x) for a random x")
### END HIDDEN TESTS'''

MEAN_GRAD = '''\
def mean_grad(f, x):
    """Return the gradient of f(x).mean() at x, computed by autograd."""
    ### BEGIN SOLUTION
    x = x.detach().clone().requires_grad_()
    f(x).mean().backward()
    return x.grad
    ### END SOLUTION'''

TEST_MEAN_GRAD = '''\
"""Check that mean_grad(f, x) returns the gradient of f(x).mean(), from autograd."""
from grader.checks import call_with_autograd, check_tensor

_x = torch.tensor([1.0, -2.0, 3.0])
_result = call_with_autograd(mean_grad, lambda t: t**2, _x, name="mean_grad")
check_tensor(
    _result,
    [2.0 / 3, -4.0 / 3, 2.0],
    "mean_grad(lambda t: t**2, tensor([1., -2., 3.]))",
    mistakes={
        "it is 3 times too large: that is the gradient of the sum. The mean divides by the"
        " number of elements of x, and so does its gradient.": [2.0, -4.0, 6.0],
    },
)
### BEGIN HIDDEN TESTS
_x = torch.randn(2, 5, dtype=torch.float64)
_result = call_with_autograd(mean_grad, torch.sin, _x, name="mean_grad")
check_tensor(_result, torch.cos(_x) / 10, "mean_grad(torch.sin, x) for a random x")
### END HIDDEN TESTS'''


def lesson_notebook() -> nbformat.NotebookNode:
    """The new lesson's solution notebook, on lesson 1's skeleton: overview, one short section
    per idea (one cell showing an error on purpose, tagged), exercises, summary."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [
        md(
            "# Lesson 8 · The gradient of a square\n\n"
            "**Overview.** Autograd differentiates what you compute from tracked tensors. By the "
            "end of this lesson you will be able to get the gradient of a sum of squares from "
            "autograd, and write it by hand."
        ),
        code("import torch"),
        md("## 1. A gradient from autograd\n\nThe gradient of $\\sum_i x_i^2$ is $2x$:"),
        code(
            "x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)\n"
            "(x**2).sum().backward()\n"
            "x.grad"
        ),
        md("## 2. Only a scalar starts `backward()`\n\nThe squares themselves are a vector:"),
        code("(x**2).backward()", metadata={"tags": ["raises-exception"]}),
        md("## Exercises\n\nWrite your answer where it says `YOUR CODE HERE`, then run the test."),
        *_exercise(
            "Exercise 1 · The gradient of a sum, using autograd",
            "Write `sum_grad(f, x)`: using autograd, it returns the gradient of `f(x).sum()` at "
            "the tensor `x`, for an elementwise function `f` such as `lambda t: t**2`.",
            ("sum_grad", SUM_GRAD),
            ("test_sum_grad", TEST_SUM_GRAD),
        ),
        *_exercise(
            "Exercise 2 · The gradient of a square by hand",
            "Write `square_grad_by_hand(x)`: the gradient of `(x**2).sum()` at `x`, by hand, "
            "from its formula.",
            ("square_grad_by_hand", BY_HAND),
            ("test_square_grad_by_hand", TEST_BY_HAND),
        ),
        *_exercise(
            "Exercise 3 · The gradient of a mean",
            "Write `mean_grad(f, x)`: using autograd, it returns the gradient of `f(x).mean()` "
            "at `x`, whatever the shape of `x`.",
            ("mean_grad", MEAN_GRAD),
            ("test_mean_grad", TEST_MEAN_GRAD),
        ),
        md(
            "## Summary\n\n- `backward()` on a scalar fills the `.grad` of each tracked leaf.\n"
            "- The gradient of $\\sum_i f(x_i)$ is $f'(x)$, $2x$ for a square; of the mean, "
            "$f'(x)/n$.\n\n"
            "Next: lesson 9."
        ),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    lesson_1 = REPO_ROOT / "solutions" / "01_tensors_and_requires_grad"
    nb.metadata = nbformat.read(lesson_1 / f"{lesson_1.name}.ipynb", as_version=4).metadata
    nb.metadata.pop("outputs_of", None)  # lesson 1's outputs' digest: this lesson has none yet
    return nb


def _copied(folder: str, names: list[str]) -> list[str]:
    """shutil.copytree's ignore: what the copy leaves out."""
    return [n for n in names if n in NOT_COPIED or n.endswith(".egg-info")]


def grader(kit: Path, *args: str) -> subprocess.CompletedProcess:
    """`grader ARGS` run in the copy `kit`, as `make` runs it: the copy's own grader package
    first on the path, this environment's tools on PATH."""
    # `check` runs pytest: one process, beside the suite's own workers
    env = dict(os.environ, PYTHONPATH=str(kit), PYTEST_ADDOPTS="-n 0")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=kit,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
    )


def _ok(run: subprocess.CompletedProcess) -> str:
    """The command's output; it must have succeeded."""
    if run.returncode != 0:
        pytest.fail(
            f"grader {' '.join(run.args[3:])}: exit {run.returncode}\n{run.stdout}\n{run.stderr}"
        )
    return run.stdout


class Kit(NamedTuple):
    """The copy of the kit with the new lesson, and a course made before the lesson existed."""

    root: Path
    course: Path


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> Kit:
    """A copy of the kit, with a course made by `grader init` (before the lesson exists), then
    the new lesson written as the guide says, its outputs stored and its student notebook
    released: `make outputs release`, in the guide's order."""
    folder = tmp_path_factory.mktemp("new_lesson")
    root, course = folder / "kit", folder / "course"
    shutil.copytree(REPO_ROOT, root, ignore=_copied, symlinks=True)
    found = subprocess.run(
        [sys.executable, "-c", "import grader; print(grader.__file__)"],
        cwd=root,
        env=dict(os.environ, PYTHONPATH=str(root)),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(found.stdout.strip()).is_relative_to(root), found.stdout  # the copy is the kit
    _ok(grader(root, "init", str(course)))

    solution = root / "solutions" / LESSON / f"{LESSON}.ipynb"
    solution.parent.mkdir()
    nbformat.write(lesson_notebook(), solution)
    shutil.copy(FIXTURES / "probes.py", solution.parent / "probes.py")
    for kind in ("wrong_answers", "alternative_answers"):
        shutil.copy(FIXTURES / f"{kind}.yml", root / "tests" / "lessons" / kind / f"{LESSON}.yml")
    _ok(grader(root, "outputs", LESSON))
    _ok(grader(root, "release", LESSON))
    return Kit(root, course)


def test_check_passes_the_new_lesson(kit):
    """`grader check` holds the new lesson to the guide, and it passes: strict nbval of its
    stored outputs (fresh for its code), the solution passes every test and the blank notebook
    none, the wording's rules, every wrong answer fails with its message and every alternative
    passes. The released notebook holds no solution and no hidden test."""
    assert "passed" in _ok(grader(kit.root, "check", LESSON))
    released = (kit.root / "notebooks" / LESSON / f"{LESSON}.ipynb").read_text()
    assert "raise NotImplementedError" in released
    assert "BEGIN SOLUTION" not in released and "BEGIN HIDDEN TESTS" not in released


SUBMISSIONS = {  # student: (answer cells' sources by grade id, expected score by test cell)
    "right": (  # right, in other styles than the solution
        {
            "sum_grad": "def sum_grad(f, x):\n    leaf = x.detach().requires_grad_(True)\n"
            "    (g,) = torch.autograd.grad(f(leaf).sum(), leaf)\n    return g\n",
            "square_grad_by_hand": "def square_grad_by_hand(x):\n    return x + x\n",
            "mean_grad": "def mean_grad(f, x):\n    leaf = x.clone().requires_grad_()\n"
            "    f(leaf).mean().backward()\n    return leaf.grad\n",
        },
        {"test_sum_grad": 2, "test_square_grad_by_hand": 2, "test_mean_grad": 2},
    ),
    "wrong": (  # the example's formula where autograd is asked for; a mean right only for 3
        {
            "sum_grad": "def sum_grad(f, x):\n    return 2 * x\n",
            "square_grad_by_hand": "def square_grad_by_hand(x):\n    return 2 * x\n",
            "mean_grad": "def mean_grad(f, x):\n"
            "    x = x.detach().clone().requires_grad_()\n"
            "    (f(x).sum() / 3).backward()\n    return x.grad\n",
        },
        {"test_sum_grad": 0, "test_square_grad_by_hand": 2, "test_mean_grad": 0},
    ),
    "untouched": (
        {},
        {"test_sum_grad": 0, "test_square_grad_by_hand": 0, "test_mean_grad": 0},
    ),
}


def test_a_course_made_before_the_lesson_grades_it_right(kit, tmp_path):
    """`grader autograde` enters the new lesson in the gradebook of a course made before it
    existed, and grades submissions of its released notebook by their answers: right in other
    styles earns every point; the example's formula where autograd is asked for, and a mean right
    only at the example's size, earn nothing; the untouched notebook nothing. The export says the
    verdicts are judged outside the submission (the lesson has probes)."""
    released = kit.root / "notebooks" / LESSON / f"{LESSON}.ipynb"
    for student, (answers, _) in SUBMISSIONS.items():
        nb = nbformat.read(released, as_version=4)
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in answers:
                cell.source = answers[grade_id]
        folder = kit.course / "submitted" / student / LESSON
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{LESSON}.ipynb")

    graded = _ok(grader(kit.root, "autograde", LESSON, "--course-dir", str(kit.course)))
    assert f"entered {LESSON} in the course's gradebook" in graded
    grades = tmp_path / "grades.csv"
    _ok(grader(kit.root, "export", "--course-dir", str(kit.course), "--to", str(grades)))
    with open(grades, newline="") as handle:
        rows = {r["student_id"]: r for r in csv.DictReader(handle) if r["assignment"] == LESSON}
    assert sorted(rows) == sorted(SUBMISSIONS)
    for student, (_, expected) in SUBMISSIONS.items():
        row = rows[student]
        assert {test: float(row[test]) for test in expected} == expected, (student, row)
        assert float(row["raw_score"]) == sum(expected.values()), (student, row)
        assert float(row["max_score"]) == 6, row
        assert row["verdicts"] == JUDGED, row
