"""A student's path in a real browser: `make lab` as the README says, then headless Chromium.

The lab runs in a copy of the checkout (sharing its .venv), so the answers the test saves never
touch the real notebooks/. A failing step leaves a screenshot under build/browser/.
"""

import os
import re
import subprocess
import urllib.request

import nbformat
import pytest
import yaml
from browser_tools import (
    IDLE,
    Lab,
    Steps,
    active_cell,
    checkout_copy,
    go_to_cell,
    run_menu,
    type_into_cell,
    wait_until_quiet,
)

from grader.cells import grade_id
from grader.course import REPO_ROOT, solution_notebook

WRONG_ANSWERS = REPO_ROOT / "tests" / "lessons" / "wrong_answers"

pytestmark = pytest.mark.integration  # grades or serves whole courses through the real pipeline

FIRST, LAST = "01_tensors_and_requires_grad", "05_gradients_at_work"
OWN_TASK = "03_backward_and_scalar_outputs"  # its first exercise is each student's own
INSTRUCTOR_TOOLS = ["Nbgrader", "Formgrader", "Create Assignment", "Assignment List", "Courses"]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A copy of the repository's tracked files, as a student's clone."""
    return checkout_copy(tmp_path_factory.mktemp("student") / "repo")


@pytest.fixture(scope="module")
def lab(checkout, tmp_path_factory):
    """`make lab`, run as the README tells a student to."""
    started = Lab(checkout, "lab", home=tmp_path_factory.mktemp("lab"))
    yield started
    started.stop()


@pytest.fixture
def page(browser, request):
    """A fresh page, and the steps that screenshot it when they fail."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    yield opened, Steps(opened, request.node.name)
    context.close()


def _open(page, lab: Lab, lesson: str) -> None:
    """Open a lesson in a fresh workspace, its kernel ready and the notebook focused."""
    page.goto(lab.link(f"/lab/tree/{lesson}/{lesson}.ipynb") + "&reset")
    page.wait_for_selector(IDLE, timeout=120_000)
    page.locator(".jp-Notebook .jp-Cell").first.click()


def _run_all(page) -> None:
    """Run All Cells, then wait until the first cell has run and the kernel is quiet."""
    run_menu(page, "Run", "Run All Cells")
    page.locator(".jp-InputPrompt", has_text="[1]:").first.wait_for(timeout=60_000)
    wait_until_quiet(page)


def _answers(lesson: str) -> dict[int, str]:
    """The solution of each answer cell, as a student would type it (no nbgrader markers)."""
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    return {
        index: "\n".join(line for line in cell.source.splitlines() if "### " not in line)
        for index, cell in enumerate(nb.cells)
        if cell.metadata.get("nbgrader", {}).get("solution")
    }


def test_student_mode_offers_none_of_the_instructor_tools(lab, page):
    """No Nbgrader menu, no create-assignment panel, no formgrader page, no exchange warning
    and no news toast: only the lessons and the Validate button."""
    page, steps = page
    with steps.step("open lesson 1"):
        _open(page, lab, FIRST)
    with steps.step("look for instructor tools"):
        menus = [m.inner_text() for m in page.locator(".lm-MenuBar-itemLabel").all()]
        assert "Run" in menus and "Nbgrader" not in menus, menus
        for tool in INSTRUCTOR_TOOLS:
            assert page.get_by_text(tool, exact=True).count() == 0, tool
        assert page.get_by_role("button", name="Validate").is_visible()
    with steps.step("ask the server for them"):
        for path in ("/formgrader", "/formgrader/manage_assignments", "/assignments", "/courses"):
            assert lab.status(path) == 404, path
    with steps.step("notifications"):
        page.wait_for_timeout(2000)
        toasts = page.locator(".Toastify__toast").all_inner_texts()
        assert not [t for t in toasts if re.search("exchange|news", t, re.IGNORECASE)], toasts
        assert "exchange" not in lab.log_text().lower()


def _first_wrong_answer(lesson: str) -> tuple[int, str, str]:
    """The answer cell of the lesson's first typical wrong answer, its text and its message."""
    wrong = yaml.safe_load((WRONG_ANSWERS / f"{lesson}.yml").read_text())[0]
    nb = nbformat.read(solution_notebook(lesson), as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == wrong["cell"])
    return index, wrong["answer"], wrong["message"]


def _validate(page):
    """Click Validate; the dialog, once its result is in."""
    page.get_by_role("button", name="Validate").click()
    dialog = page.locator(".jp-Dialog")
    dialog.locator("#validation-message").wait_for(timeout=180_000)
    return dialog


def test_a_student_runs_answers_and_validates_lesson_one(lab, checkout, page):
    """Run All stops at the first exercise with one clean message; a wrong prediction is shown
    as such by the cell that runs the code; Validate with one exercise wrong shows what that
    test checks and its message at once, not the test's code; typed answers then pass
    Validate, and they are saved in the student's notebook."""
    page, steps = page
    answers = _answers(FIRST)
    wrong_index, wrong_text, wrong_message = _first_wrong_answer(FIRST)
    with steps.step("open and run all"):
        _open(page, lab, FIRST)
        _run_all(page)
    with steps.step("the first exercise's message"):
        failed = page.locator(".jp-OutputArea-output[data-mime-type*='stderr']").filter(
            has_text="CheckFailed"
        )
        failed.first.scroll_into_view_if_needed()
        # JupyterLab renders only the cells in view: read the output's text from the page itself
        message = failed.first.text_content()
        assert message.startswith("CheckFailed: make_leaf is not written yet"), message
        assert "replace the line `raise NotImplementedError(...)`" in message
        assert "checks.py" not in message and "Traceback" not in message
    with steps.step("type the answers"):
        for index, text in answers.items():
            type_into_cell(page, index, text)
        page.keyboard.press("Control+s")
        page.wait_for_selector("text=/Saving completed|Last Saved/", timeout=20_000)
    with steps.step("a wrong prediction, compared"):
        index = next(i for i, text in answers.items() if "predict_r3" in text)
        wrong = answers[index].replace("predict_r3 = False", "predict_r3 = True")
        type_into_cell(page, index, wrong)
        go_to_cell(page, index)
        page.keyboard.press("Shift+Enter")  # the prediction
        page.keyboard.press("Shift+Enter")  # the cell that runs the code and compares
        wait_until_quiet(page)
        compared = page.locator(".jp-OutputArea-output", has_text="you predicted").first
        shown = compared.text_content()
        assert "r3.requires_grad = False, you predicted True: look again" in shown, shown
        assert "r1.requires_grad = False, you predicted False: right" in shown, shown
        type_into_cell(page, index, answers[index])
    with steps.step("validate with one exercise wrong"):
        type_into_cell(page, wrong_index, wrong_text)
        page.keyboard.press("Control+s")
        page.wait_for_selector("text=/Saving completed|Last Saved/", timeout=20_000)
        dialog = _validate(page)
        shown = dialog.locator("#validation-message").inner_text()
        assert "The following cell failed" in shown and wrong_message in shown, shown
        assert "from grader.checks" not in shown, shown  # the test's code stays in the notebook
        message = dialog.get_by_text(wrong_message, exact=False).first
        body = dialog.locator(".jp-Dialog-body").bounding_box()
        assert message.bounding_box()["y"] < body["y"] + body["height"], "message below the fold"
        dialog.get_by_role("button", name="Ok").click()
        dialog.wait_for(state="detached")
        page.locator(".jp-Notebook .jp-Cell").first.click()  # the notebook has the keyboard again
    with steps.step("validate"):
        type_into_cell(page, wrong_index, answers[wrong_index])
        page.keyboard.press("Control+s")
        page.wait_for_selector("text=/Saving completed|Last Saved/", timeout=20_000)
        dialog = _validate(page)
        dialog.get_by_text("Success! Your notebook passes all the tests.").wait_for(timeout=10_000)
    saved = nbformat.read(checkout / "notebooks" / FIRST / f"{FIRST}.ipynb", as_version=4)
    assert {i: saved.cells[i].source for i in answers} == answers


def test_lesson_five_shows_its_figures(lab, page):
    """After Run All, every cell of lesson 5 that draws a figure shows it as an image."""
    page, steps = page
    nb = nbformat.read(solution_notebook(LAST), as_version=4)
    figures = [
        index
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and any("image/png" in out.get("data", {}) for out in cell.outputs)
    ]
    assert len(figures) >= 2
    with steps.step("open and run all"):
        _open(page, lab, LAST)
        _run_all(page)
    for index in figures:
        with steps.step(f"figure in cell {index}"):
            go_to_cell(page, index)
            image = active_cell(page).locator(".jp-OutputArea-output img").first
            image.scroll_into_view_if_needed()
            image.wait_for(state="visible", timeout=30_000)
            width = image.evaluate("img => img.naturalWidth")
            assert width > 100, width


def test_a_student_sets_their_key_and_passes_their_own_task(lab, page):
    """In lesson 3, a student pastes their course key into the key cell: the notebook says whose
    tasks it shows, the exercise shows their own function, and their own derivation of it
    passes the test cell, where the class-wide answer does not."""
    from grader.course_keys import key_for
    from grader.judging.hand_solutions import solution
    from grader.variants import params
    from grader.variants.families import FAMILIES

    page, steps = page
    key = key_for(b"a course's secret", "ada")
    family = FAMILIES[OWN_TASK, "dz_dx"]
    task = params(OWN_TASK, "dz_dx", key)
    assert task != family.default
    nb = nbformat.read(solution_notebook(OWN_TASK), as_version=4)
    key_cell = next(i for i, c in enumerate(nb.cells) if 'use_course_key("")' in c.source)
    answer = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "dz_dx")
    with steps.step("open lesson 3 and set the key"):
        _open(page, lab, OWN_TASK)
        type_into_cell(page, key_cell, nb.cells[key_cell].source.replace('""', f'"{key}"'))
        go_to_cell(page, 1)
        for _ in range(key_cell):  # the setup cells, then the key cell
            page.keyboard.press("Shift+Enter")
        wait_until_quiet(page)
        said = page.locator(".jp-OutputArea-output", has_text="Course key of").first.text_content()
        assert "Course key of ada (set above): the tasks in this lesson are yours." in said, said
    with steps.step("the exercise shows ada's task"):
        go_to_cell(page, answer - 1)
        page.keyboard.press("Shift+Enter")
        wait_until_quiet(page)
        shown = page.locator(".jp-OutputArea-output", has_text="Your task").first.text_content()
        assert "the task of ada" in shown and f"{task.b}x" in shown and f"{task.a}y" in shown
    with steps.step("the class-wide answer fails, ada's own passes"):
        for source, passes in (
            (solution(family, family.default), False),
            (solution(family, task), True),
        ):
            type_into_cell(page, answer, source)
            go_to_cell(page, answer)
            page.keyboard.press("Shift+Enter")  # the answer
            page.keyboard.press("Shift+Enter")  # its test
            wait_until_quiet(page)
            go_to_cell(page, answer + 1)
            errors = active_cell(page).locator(".jp-OutputArea-output[data-mime-type*='stderr']")
            assert (errors.count() == 0) == passes, errors.all_text_contents()


def test_binder_starts_in_student_mode(checkout, tmp_path):
    """Binder runs `start` before the server: the formgrader is off and the page disables
    nbgrader's instructor extensions."""
    env = {**os.environ, "BROWSER": "true", "JUPYTER_CONFIG_PATH": "/elsewhere"}
    shown = subprocess.run(
        ["./start", "sh", "-c", "echo $JUPYTER_CONFIG_PATH"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert shown == f"{checkout}/jupyter/student:/elsewhere"
    jupyter = str(checkout / ".venv" / "bin" / "jupyter")
    lab = Lab(checkout, command=["./start", jupyter, "lab", "notebooks"], home=tmp_path)
    try:
        assert lab.status("/formgrader") == 404
        with urllib.request.urlopen(lab.link("/lab"), timeout=10) as response:
            page = response.read().decode()
        assert "@jupyter/nbgrader:formgrader" in page
        assert "@jupyter/nbgrader:create-assignment" in page
    finally:
        lab.stop()
