"""A feedback page as a browser shows it: MathJax served from .venv (`make install` puts it there)
in place of the CDN, and what the page's scores look like with and without the student's math."""

import mimetypes
import re
import sys
from pathlib import Path

from grader.safe_output.tex import MATHJAX_URL, MATHJAX_VERSION

MATHJAX = Path(sys.prefix) / f"mathjax-{MATHJAX_VERSION}" / "node_modules" / "mathjax"
CDN_FOLDER = MATHJAX_URL.rsplit("/es5/", 1)[0] + "/"

# A lime panel saying "full marks", lifted without growing its formula (\smash), at every height
# up to 1,600px above the markdown: \bbox, \colorbox and \style each draw its background.
PANEL = r"\Huge\text{Score: 6.0 / 6.0, full marks}"
BACKGROUNDS = (
    r"\bbox[lime]{%s}",
    r"\colorbox{lime}{Score: 6.0 / 6.0}",
    r"\style{background:lime}{%s}",
)
LIFTS = "".join(
    rf"\smash{{\raise{{{height}px}}{{\rlap{{{background.replace('%s', PANEL)}}}}}}}"
    for height in range(40, 1600, 40)
    for background in BACKGROUNDS
)
COVER = r"\colorbox{lime}{Score: 6.0 / 6.0}"
TEX_ATTACKS = "\n\n".join(
    [
        f"${LIFTS}$",
        rf"$\mathllap{{\smash{{\lower{{-600px}}{{\moveleft{{-200px}}{{\bbox[lime]{{{PANEL}}}}}}}}}}}$",
        rf"$\style{{position:fixed;top:0;left:0;width:100vw;height:100vh;background:lime}}{{{PANEL}}}$",
        r"$\mmlToken{mi}[style='position:fixed;top:0;left:0;width:100vw;height:100vh;"
        r"background:lime']{x}$",
        r"$\require{bbox}\bbox[position:fixed;top:0;left:0;width:100vw;height:100vh]{x}$",
        r"$\class{attack-class}{x}\cssId{attack-id}{y}\href{javascript:alert(1)}{z}\unicode{x263A}$",
        rf"$\kern{{-3000px}}\hspace{{-3000px}}\mskip-3000mu\rlap{{\rlap{{\smash{{{COVER}}}}}}}$",
        r"$\begin{array}{c} x \\[-1500px] \boxed{\color{lime}{\rule{3000px}{1500px}}}"
        r"\end{array}$",
        r"$$\phantom{x}\smash{\raise{900px}{\bbox[lime]{\rule{3000px}{900px}}}}$$",
    ]
)

# The page's scores: its heading, its table of contents, each test's verdict.
SCORES = """() => [
  document.querySelector('.panel-heading h4'),
  ...document.querySelectorAll('#toc li'),
  ...[...document.querySelectorAll('.output_area pre')].filter(p => /^Score:/.test(p.innerText)),
]"""
HIDE_MARKDOWN = (
    "document.querySelectorAll('.text_cell_render').forEach(m => m.style.visibility = 'hidden')"
)
# Whether each score is what a click at its centre reaches (nothing drawn over it takes the click).
ON_TOP = """scores => scores.map(score => {
  score.scrollIntoView({block: 'center'});
  const box = score.getBoundingClientRect();
  const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
  return score.contains(hit);
})"""


def _serve(route) -> None:
    """MathJax's files from .venv for the CDN's address; nothing else leaves the machine."""
    url = route.request.url.split("?")[0]
    path = MATHJAX / url.removeprefix(CDN_FOLDER)
    if url.startswith(CDN_FOLDER) and path.is_file():
        route.fulfill(path=path, content_type=mimetypes.guess_type(path.name)[0] or "text/plain")
    else:
        route.abort()


def rendered_scores(browser, page_file: Path) -> dict:
    """The page's scores as shown (text, screenshots, whether on top) once MathJax has typeset,
    the same scores' screenshots with the markdown hidden, and what MathJax typeset."""
    assert (MATHJAX / "package.json").is_file(), f"no MathJax in {MATHJAX}: run make install"
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.route(re.compile(r"^https?://"), _serve)
        page.goto(page_file.as_uri())
        page.evaluate("() => MathJax.startup.promise")
        scores = page.evaluate_handle(SCORES)
        count = page.evaluate("scores => scores.length", scores)
        items = [scores.evaluate_handle(f"s => s[{i}]").as_element() for i in range(count)]
        shown = {
            "texts": [item.inner_text() for item in items],
            "on_top": page.evaluate(ON_TOP, scores),
            "pictures": [item.screenshot() for item in items],
            "formulas": page.locator("mjx-container").count(),
            "errors": page.locator("mjx-merror").count(),
            "planted": page.locator(".attack-class, #attack-id, a[href^='javascript']").count(),
        }
        page.evaluate(HIDE_MARKDOWN)
        shown["pictures_without_markdown"] = [item.screenshot() for item in items]
        return shown
    finally:
        context.close()
