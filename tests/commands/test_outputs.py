"""`grader outputs` (make outputs) runs only what changed or what is named, and a run on another
machine leaves unchanged outputs as they are."""

import nbformat

from grader.commands.outputs import DIGEST_KEY, code_digest, store_outputs

WARNS = "import warnings\nwarnings.warn('careful')\n"


def _notebook(path, *sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, path)
    return path


def test_outputs_are_stored_once_and_kept_where_only_the_machine_differs(tmp_path):
    path = _notebook(tmp_path / "lesson.ipynb", "print(6 * 7)", WARNS)
    assert store_outputs([path]) == [path]
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].outputs[0].text == "42\n"
    assert nb.metadata[DIGEST_KEY] == code_digest(nb)
    assert "ipykernel_" in nb.cells[1].outputs[0].text  # the kernel's cell file, run by run
    assert all("execution" not in cell.metadata for cell in nb.cells)

    assert store_outputs([path]) == []  # nothing changed: nothing runs

    # Another machine's stored warning (another kernel, another pid): kept when run again.
    other = nb.cells[1].outputs[0].text.replace("ipykernel_", "ipykernel_9")
    nb.cells[1].outputs[0].text = other
    nbformat.write(nb, path)
    assert store_outputs([path], force=True) == [path]
    assert nbformat.read(path, as_version=4).cells[1].outputs[0].text == other

    # Changed code is run again, and its new output stored.
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source = "print(6 * 8)"
    nbformat.write(nb, path)
    assert store_outputs([path]) == [path]
    assert nbformat.read(path, as_version=4).cells[0].outputs[0].text == "48\n"


def test_every_lessons_outputs_were_stored_from_its_code_as_it_is():
    """A lesson whose code changed after its outputs were stored fails here until `make
    outputs` stores them again."""
    from grader.course import lessons, solution_notebook

    stale = []
    for lesson in lessons():
        nb = nbformat.read(solution_notebook(lesson), as_version=4)
        if nb.metadata.get(DIGEST_KEY) != code_digest(nb):
            stale.append(lesson)
    assert stale == []


def test_check_runs_each_of_a_lessons_checks_and_only_that_lessons(monkeypatch):
    """`grader check L` runs L's strict nbval and its validation, curriculum, wrong-answer,
    alternative-answer, how-rule and fresh-output tests, selected by its id; pytest's status is
    the command's."""
    import subprocess

    from grader.cli import main
    from grader.commands import check

    ran = []

    def run(command, cwd):
        ran.append(command)
        return subprocess.CompletedProcess(command, 3)

    monkeypatch.setattr(check.subprocess, "run", run)
    assert main(["check", "02_grad_fn_and_the_graph"]) == 3
    (command,) = ran
    assert "solutions/02_grad_fn_and_the_graph/02_grad_fn_and_the_graph.ipynb" in command
    assert all(test in command for test in check.TESTS)
    selected = command[command.index("-k") + 1]
    assert selected == "02_grad_fn_and_the_graph or every_lessons_outputs"
