"""The instructor's views draw nothing from a submission: the autograded notebook that the
formgrader renders on the instructor's origin holds the student's outputs and markdown inert."""

import base64
import mimetypes
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_raw_cell
from pinned_scores import PINNED

from grader.commands.init import init_course
from grader.course import EXAMPLE_CLASS, REPO_ROOT
from grader.grading.class_run import autograde

pytestmark = pytest.mark.integration  # grades a submission and serves it through the formgrader

LESSON, STUDENT = "01_tensors_and_requires_grad", "mallory"
# Every attempt reaches for `canary` (a request, a dialog, a console line) or paints lime.
COVER = "position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647;background:lime"
CALL = "fetch('/api/contents?canary={0}');alert('canary');console.log('canary')"
MARKDOWN = f"""HOSTILE-MARKDOWN
<script>{CALL.format("md-script")}</script>
<img src="x" onerror="{CALL.format("md-img")}">
<svg onload="{CALL.format("md-svg")}"></svg>
<iframe srcdoc="<script>parent.{CALL.format("iframe")}</script>"></iframe>
<div style="{COVER}">lime cover</div>
<style>input.score {{ visibility: hidden !important; }} body {{ background: lime; }}</style>
<form action="/api/contents"><input name="canary" value="form"><button autofocus>Go</button></form>
<a href="javascript:{CALL.format("link")}">canary link</a>
<base href="http://canary.invalid/">
<meta http-equiv="refresh" content="0;url=/api/contents?canary=refresh">

$$\\smash{{\\raise{{300px}}{{\\bbox[lime]{{\\rule{{3000px}}{{900px}}}}}}}}$$
and \\(\\style{{{COVER}}}{{x}}\\)
"""
SVG = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{CALL.format("svg")}"><script>{CALL.format("svg-script")}</script></svg>'  # noqa: E501
CODE = f"""from IPython.display import HTML, SVG, Javascript, Markdown, Latex, display
display(HTML('''<div style="{COVER}">lime cover</div><script>{CALL.format("html")}</script>'''))
display(Javascript("{CALL.format("js")}"))
display(SVG('''{SVG}'''))
display(Markdown('''<img src="x" onerror="{CALL.format("md-output")}">'''))
display(Latex(r"$\\style{{{COVER}}}{{x}}$"))
display({{"application/vnd.jupyter.widget-view+json": {{"model_id": "canary", "version_major": 2,
          "version_minor": 0}}, "text/plain": "a widget"}}, raw=True)
print("canary printed as text")
"""
RAW = f'<script>{CALL.format("raw")}</script><div style="{COVER}">lime cover</div>'


def _hostile_submission(course) -> None:
    """alice's notebook of LESSON, handed in by mallory with every kind of live content added."""
    nb = nbformat.read(EXAMPLE_CLASS / "submitted/alice" / LESSON / f"{LESSON}.ipynb", 4)
    svg = base64.b64encode(SVG.encode()).decode()
    attachments = {"a.svg": {"image/svg+xml": svg}}
    attached = new_markdown_cell("![a](attachment:a.svg)", attachments=attachments)
    hostile = [new_markdown_cell(MARKDOWN), new_code_cell(CODE), attached]
    hostile.append(new_raw_cell(RAW, metadata={"raw_mimetype": "text/html"}))
    nb.cells += hostile
    nb.cells[0].metadata["jupyter"] = {"source_hidden": True}
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}
    }
    folder = course.root / "submitted" / STUDENT / LESSON
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{LESSON}.ipynb")
    shutil.copy(EXAMPLE_CLASS / "submitted/alice" / LESSON / "timestamp.txt", folder)


def _graded(root: Path, engine: str):
    course = init_course(root)
    _hostile_submission(course)
    autograde(course, [LESSON], engine=engine)
    return course


@pytest.fixture(scope="module")
def fast(tmp_path_factory):
    """A course where mallory's hostile submission is graded by the fast engine."""
    return _graded(tmp_path_factory.mktemp("fast") / "course", "fast")


class _LiveParts(HTMLParser):
    """Tags of a page that would act or paint from the submission's payloads."""

    def __init__(self):
        super().__init__()
        self.found, self._in = [], None

    def handle_starttag(self, tag, attrs):
        values = " ".join(f"{name}={value}" for name, value in attrs)
        equiv = tag == "meta" and "http-equiv" in dict(attrs)
        if re.search("canary|lime", values) or tag in ("iframe", "form", "base") or equiv:
            self.found.append(f"<{tag} {values}>")
        self._in = tag

    def handle_data(self, data):
        if self._in in ("script", "style") and re.search("canary|lime", data):
            self.found.append(f"<{self._in}>{data[:80]}")


def live_parts(nb) -> list[str]:
    """What nbconvert's page of `nb` (the formgrader's renderer) would run or paint of the
    payloads, and the notebook's parts that would reach a template or MathJax."""
    page, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    parser = _LiveParts()
    parser.feed(page)
    found = parser.found
    for cell in nb.cells:
        inert = cell.source.startswith('<div class="tex2jax_ignore mathjax_ignore">')
        if ("HOSTILE" in cell.source or cell.cell_type == "raw") and not inert:
            found.append(f"{cell.cell_type} cell MathJax would typeset")
        found += [f"attachment of {cell.id}"] * bool(cell.get("attachments"))
        found += [f"metadata {key}" for key in cell.metadata if key == "jupyter"]
    return found + [f"notebook metadata {key}" for key in nb.metadata if key == "widgets"]


@pytest.mark.parametrize("engine", ["fast", "nbgrader"])
def test_an_autograded_notebook_holds_nothing_live_from_the_submission(engine, fast, tmp_path):
    """Both engines write the hostile submission's outputs, markdown and raw cells inert, and
    keep the text of its outputs and its scores."""
    course = fast if engine == "fast" else _graded(tmp_path / "course", engine)
    path = course.root / "autograded" / STUDENT / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert live_parts(nb) == []
    code = next(cell for cell in nb.cells if cell.source == CODE)
    assert code.outputs[-1].text == "canary printed as text\n"
    markdown = next(cell for cell in nb.cells if "HOSTILE" in cell.source)
    assert "&lt;script&gt;" in markdown.source  # shown as text
    source = nbformat.read(course.source / LESSON / f"{LESSON}.ipynb", as_version=4)
    graded = [cell.metadata.nbgrader for cell in source.cells if cell.metadata.get("nbgrader")]
    kept = [cell.metadata.nbgrader for cell in nb.cells if cell.metadata.get("nbgrader")]
    assert [m["grade_id"] for m in kept] == [m["grade_id"] for m in graded]
    with course.api().gradebook as gb:
        assert gb.find_submission(LESSON, STUDENT).score == PINNED[(LESSON, "alice")]


def _mathjax_for_the_cdn(route) -> None:
    """MathJax 3 from .venv in place of the formgrader's MathJax 2 (a stand-in: both leave
    `tex2jax_ignore` untypeset); nothing else leaves the machine."""
    mathjax = Path(sys.prefix).glob("mathjax-*/node_modules/mathjax/es5/tex-chtml.js")
    if "mathjax" in route.request.url.lower() and (found := next(mathjax, None)):
        route.fulfill(path=found, content_type=mimetypes.guess_type(found.name)[0])
    else:
        route.abort()


# Whether each score input is what a click at its centre reaches, and is seen.
ON_TOP = """() => [...document.querySelectorAll('input.score')].map(input => {
  input.scrollIntoView({block: 'center'});
  const box = input.getBoundingClientRect();
  const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
  return hit === input && getComputedStyle(input).visibility === 'visible';
})"""
# MathJax 3 with the delimiters nbconvert gives MathJax 2.
MATHJAX_CONFIG = r"window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\(', '\\)']]}}"
# Formulas typeset in the student's markdown, and in the whole page (the lesson's own text).
TYPESET = """() => [
  ...[...document.querySelectorAll('.cell')]
    .filter(cell => cell.innerText.includes('HOSTILE-MARKDOWN'))
    .map(cell => cell.querySelectorAll('mjx-container').length),
  document.querySelectorAll('mjx-container').length > 0,
]"""


def test_the_formgrader_runs_and_draws_nothing_from_the_submission(fast, tmp_path):
    """The formgrader's grading page of the hostile submission, served by `make instructor`:
    no request for the canary or to the server's API, no dialog or console line, no typeset
    student TeX, and every score input is on top and visible."""
    from browser_tools import CHROMIUM, CHROMIUM_ARGS, Lab, Steps
    from playwright.sync_api import sync_playwright

    with fast.api().gradebook as gb:
        submission = gb.find_submission_notebook(LESSON, LESSON, STUDENT).id
    lab = Lab(REPO_ROOT, "instructor", f"COURSE={fast.root}", home=tmp_path)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            steps = Steps(page, "test_the_formgrader_runs_and_draws_nothing_from_the_submission")
            requests, effects = [], []
            page.add_init_script(MATHJAX_CONFIG)
            page.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), _mathjax_for_the_cdn)
            page.on("request", lambda request: requests.append(request.url))
            page.on("dialog", lambda dialog: (effects.append(dialog.message), dialog.dismiss()))
            page.on("console", lambda message: effects.append(message.text))
            with steps.step("open the grading page"):
                page.goto(lab.link(f"/formgrader/submissions/{submission}/"))
                page.wait_for_timeout(1500)  # for handlers and refreshes that fire late
            with steps.step("nothing ran"):
                server_api = f"{lab.url}/api/"
                assert [u for u in requests if "canary" in u or u.startswith(server_api)] == []
                assert [effect for effect in effects if "canary" in effect] == []
                assert page.url.startswith(lab.url + "/formgrader/submissions/")
            with steps.step("nothing drew over the view"):
                page.locator("input.score").first.wait_for(state="attached", timeout=10_000)
                page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
                assert page.evaluate(TYPESET) == [0, True]
                on_top = page.evaluate(ON_TOP)
                assert on_top and all(on_top), on_top
            browser.close()
    finally:
        lab.stop()
