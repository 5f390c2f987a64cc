"""Open in Colab: every lesson links to Colab (README table and the notebook's first cell) and
opens with a setup cell that installs the checks only where they are missing, all made from the
one repository address in grader/course.py. Reads files only: no kernel starts."""

import copy
import re
import sys

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from grader.cells import is_lesson_code
from grader.commands.release import with_colab_cells
from grader.course import (
    REPO_ROOT,
    REPOSITORY_URL,
    SETUP_CELL_ID,
    colab_badge,
    colab_link,
    lessons,
    setup_cell_source,
    solution_notebook,
    student_notebook,
)

COLAB_LINK = re.compile(r"https://colab\.research\.google\.com/github/[^)\s]+")
BINDER_LINK = re.compile(r"https://mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/")
NOTEBOOKS = {"solution": solution_notebook, "student": student_notebook}


def _notebook(kind: str, lesson: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS[kind](lesson), as_version=4)


def _readme() -> str:
    return (REPO_ROOT / "README.md").read_text()


@pytest.mark.parametrize("kind", NOTEBOOKS)
def test_each_lesson_opens_with_its_badge_and_the_setup_cell(kind):
    """Every solution and student notebook: the Colab badge for its own student notebook in the
    first markdown cell, then the setup cell as the first code cell, both as rendered from
    REPOSITORY_URL (`grader release` writes them), and no Colab link to anywhere else."""
    for lesson in lessons():
        nb = _notebook(kind, lesson)
        first_text = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")
        assert colab_badge(lesson) in nb.cells[first_text].source.split("\n"), (kind, lesson)
        setup = nb.cells[first_text + 1]
        first_code = next(c for c in nb.cells if c.cell_type == "code")
        assert setup is first_code and setup.get("id") == SETUP_CELL_ID, (kind, lesson)
        assert setup.source == setup_cell_source(), (kind, lesson)
        links = {m for c in nb.cells for m in COLAB_LINK.findall(c.source)}
        assert links == {colab_link(lesson)}, (kind, lesson)
        assert not with_colab_cells(copy.deepcopy(nb), lesson), (kind, lesson)


def test_the_setup_cell_is_plain_lesson_code_that_prints_nothing():
    """The setup cell is an ordinary lesson cell (no nbgrader metadata: not an answer, test or
    locked cell) whose stored run printed nothing, counted first in the solution."""
    for lesson in lessons():
        for kind in NOTEBOOKS:
            setup = next(c for c in _notebook(kind, lesson).cells if c.cell_type == "code")
            assert is_lesson_code(setup) and "nbgrader" not in setup.metadata, (kind, lesson)
            assert setup.outputs == [], (kind, lesson)
        counts = [c.execution_count for c in _notebook("solution", lesson).cells if "outputs" in c]
        assert counts == list(range(1, len(counts) + 1)), lesson


def _run_setup_cell(monkeypatch, *, checks_installed: bool) -> list[tuple]:
    """Run the setup cell as IPython turns it into Python; the %magics it would run."""
    magics = []

    class Shell:
        def run_line_magic(self, name, line):
            magics.append((name, line))

    if not checks_installed:
        monkeypatch.setitem(sys.modules, "grader.checks", None)  # import raises ImportError
    python = TransformerManager().transform_cell(setup_cell_source())
    exec(compile(python, "setup", "exec"), {"get_ipython": Shell})
    return magics


def test_the_setup_cell_installs_the_checks_only_where_they_are_missing(monkeypatch):
    """Where grader.checks imports (this repository, Binder, a pip install) the cell does
    nothing; elsewhere (Colab) it pip-installs the repository, leaving the platform's torch."""
    assert _run_setup_cell(monkeypatch, checks_installed=True) == []
    assert _run_setup_cell(monkeypatch, checks_installed=False) == [
        ("pip", f'install -q --no-deps "git+{REPOSITORY_URL}"')
    ]


def test_colab_links_open_the_student_notebooks_of_the_repository():
    """A lesson's Colab link names the repository of REPOSITORY_URL and the lesson's student
    notebook (never its solution) on the main branch."""
    repository = REPOSITORY_URL.removeprefix("https://github.com/")
    for lesson in lessons():
        link = colab_link(lesson)
        assert link == (
            f"https://colab.research.google.com/github/{repository}/blob/main/"
            f"notebooks/{lesson}/{lesson}.ipynb"
        )
        assert student_notebook(lesson).is_file()


def test_the_readme_table_links_each_lesson_to_colab():
    """Each lesson's row of the README's table holds its badge, and every Colab link in the
    README is one of the lessons' links, in the lessons' order."""
    readme = _readme()
    for lesson in lessons():
        (row,) = [line for line in readme.splitlines() if line.startswith(f"| `{lesson}` |")]
        assert colab_badge(lesson) in row, lesson
    assert COLAB_LINK.findall(readme) == [colab_link(lesson) for lesson in lessons()]


def test_the_readme_names_the_same_repository_for_pip_and_binder():
    """The student section's pip command installs REPOSITORY_URL, and the Binder badge builds
    the same repository."""
    readme = _readme()
    assert f'pip install "git+{REPOSITORY_URL}"' in readme
    assert set(BINDER_LINK.findall(readme)) == {REPOSITORY_URL.removeprefix("https://github.com/")}


def test_release_brings_the_colab_cells_in_step_with_the_repository_address():
    """with_colab_cells, which `grader release` applies to the solutions, rewrites a stale
    badge and setup cell, and adds them to a lesson without them, counting the cells after
    the setup cell on from it."""
    lesson = lessons()[0]
    nb = _notebook("solution", lesson)
    stale = copy.deepcopy(nb)
    old = "someone/old-fork"
    for cell in stale.cells[:2]:
        cell.source = cell.source.replace("autograd-fundamentals/autograd-fundamentals", old)
    assert stale.cells[:2] != nb.cells[:2]
    assert with_colab_cells(stale, lesson) and stale == nb

    bare = copy.deepcopy(nb)
    del bare.cells[1]
    bare.cells[0].source = bare.cells[0].source.replace(colab_badge(lesson) + "\n\n", "")
    for cell in bare.cells:
        if cell.get("execution_count"):
            cell.execution_count -= 1
            for output in cell.outputs:
                if output.get("execution_count"):
                    output.execution_count -= 1
    assert with_colab_cells(bare, lesson) and bare == nb
    assert not with_colab_cells(bare, lesson)
