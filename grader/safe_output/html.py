"""A student's HTML made inert for the feedback page: parsed, never matched with patterns.

bleach parses with html5lib, so cleaning takes time in proportion to the text: about 2 µs a
character of ordinary HTML, 11 µs of the worst (a line of `<`), which is why
grader.safe_output.outputs caps what it gives to be cleaned. What is left can neither run (no
script, no event handler, no `javascript:` link) nor dress itself as the page: no `class`,
`style` or `id` attribute, so the page's Bootstrap CSS and scripts find nothing to act on.
"""

import re

import bleach
from jinja2 import ChoiceLoader, DictLoader, pass_context
from nbconvert.exporters import HTMLExporter

from grader.safe_output.tex import MATHJAX_TEMPLATE

TAGS = bleach.ALLOWED_TAGS | {
    *("p", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "br", "pre", "div", "span", "img", "del"),
    *("table", "thead", "tbody", "tr", "th", "td", "sup", "sub", "dl", "dt", "dd", "kbd"),
}
WEB_LINK = re.compile(r"(?:https?:|mailto:|#)", re.IGNORECASE)
IMAGE_DATA = re.compile(r"data:image/(?:png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*\Z")


def _allowed(tag: str, name: str, value: str) -> bool:
    """Whether an attribute stays: links to the web, inlined raster images, a few plain ones."""
    if tag == "a" and name == "href":
        return bool(WEB_LINK.match(value))
    if tag == "img" and name == "src":
        return bool(IMAGE_DATA.match(value))
    return (tag, name) in {("a", "title"), ("img", "alt"), ("img", "title"), ("ol", "start")} or (
        tag in ("th", "td") and name == "align"
    )


CLEANER = bleach.Cleaner(  # made once: making one took as long as cleaning a cell
    tags=TAGS, attributes=_allowed, protocols=["http", "https", "mailto", "data"], strip=False
)


def clean_html(html: str) -> str:
    """`html` with only harmless tags and attributes; anything else is escaped or dropped."""
    return CLEANER.clean(html)


class FeedbackExporter(HTMLExporter):
    """HTMLExporter whose markdown (cells, comments, markdown outputs) is always cleaned, and
    whose MathJax is grader.safe_output.tex's.

    nbgrader's feedback template renders markdown without nbconvert's `sanitize_html`.
    """

    def _create_environment(self):
        """nbconvert's environment, finding the `mathjax` macro of grader.safe_output.tex first."""
        environment = super()._create_environment()
        ours = DictLoader({"mathjax.html.j2": MATHJAX_TEMPLATE})
        environment.loader = ChoiceLoader([ours, environment.loader])
        return environment

    @pass_context
    def markdown2html(self, context, source):
        """Markdown to HTML, cleaned by `clean_html`."""
        return clean_html(super().markdown2html(context, source))
