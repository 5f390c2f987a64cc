"""The feedback page's defences against a student's HTML, beyond nbconvert's `sanitize_html`.

`sanitize_html` cleans outputs, but nbgrader's feedback template renders markdown cells without
it, and nbconvert writes an image's width and height from the output's metadata into the
`<img>` tag unquoted: a student controls both.
"""

import bleach
from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

MARKDOWN_TAGS = bleach.ALLOWED_TAGS | {
    *("p", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "br", "pre", "div", "span", "img", "del"),
    *("table", "thead", "tbody", "tr", "th", "td", "sup", "sub", "dl", "dt", "dd", "kbd"),
}
MARKDOWN_ATTRIBUTES = {
    "*": ["class", "id"],
    "a": ["href", "title"],
    "img": ["src", "alt", "title"],
    "ol": ["start"],
    "th": ["align"],
    "td": ["align"],
}
PROTOCOLS = [*bleach.ALLOWED_PROTOCOLS, "data"]  # attached images are inlined as data: URLs


def clean_markdown_html(html: str) -> str:
    """Rendered markdown with only the tags, attributes and link kinds markdown itself makes."""
    return bleach.clean(
        html, tags=MARKDOWN_TAGS, attributes=MARKDOWN_ATTRIBUTES, protocols=PROTOCOLS
    )


class FeedbackExporter(HTMLExporter):
    """HTMLExporter whose markdown is sanitized too when `sanitize_html` is on."""

    @pass_context
    def markdown2html(self, context, source):
        """Markdown to HTML, cleaned of anything that could run in the page."""
        html = super().markdown2html(context, source)
        return clean_markdown_html(html) if self.sanitize_html else html


class SafeImageMetadata(Preprocessor):
    """Keep an output's image width and height only when they are numbers.

    `{"width": "1 onerror=…"}` would otherwise add an attribute that runs; `filenames` would point
    the image at any address instead of its own data.
    """

    enabled = Bool(True).tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        """Clean the metadata of every output of one cell."""
        for output in cell.get("outputs", []):
            metadata = output.get("metadata", {})
            metadata.pop("filenames", None)
            for level in [metadata, *(v for v in metadata.values() if isinstance(v, dict))]:
                for key in ("width", "height"):
                    if not isinstance(level.get(key, 0), int | float):
                        del level[key]
        return cell, resources
