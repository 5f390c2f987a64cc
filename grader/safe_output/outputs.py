"""A notebook output rebuilt from a student's output: only what is safe to show, within limits.

The output is built anew, field by field, so nothing the page template reads is left as the
student wrote it: text loses its terminal escapes and control characters, HTML is cleaned
(grader.safe_output.html), images must be base64, metadata is dropped, and kinds that run
(JavaScript, widgets) or that the page would interpret (LaTeX, markdown) are left out. Every
pattern here is linear; sizes are capped per output and per page.
"""

import base64
import re
from dataclasses import dataclass

from nbformat import NotebookNode, from_dict

from grader.safe_output.html import clean_html

TEXT_LIMIT = 512 * 1024  # characters of one output's text
IMAGE_LIMIT = 2 * 1024**2  # characters of one base64 image
HTML_LIMIT = 32 * 1024  # characters of one piece of HTML: at most about 0.35 s of parsing
PAGE_TEXT_LIMIT = 8 * 1024**2  # text and images on one page
PAGE_HTML_LIMIT = 160 * 1024  # HTML parsed for one page (a lesson's own markdown: 16 KiB)
PAGE_IMAGE_LIMIT = 512 * 1024  # bytes of released images inlined in one page's markdown
IMAGES = ("image/png", "image/jpeg")
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*\Z")
CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]?|[\x00-\x08\x0b-\x1f\x7f]")
STREAMS = ("stdout", "stderr")


@dataclass
class Budget:
    """What one page may still show: characters of text and images, of HTML to parse, and bytes
    of the lesson's released images inlined in its markdown."""

    text: int = PAGE_TEXT_LIMIT
    html: int = PAGE_HTML_LIMIT
    images: int = PAGE_IMAGE_LIMIT

    def take(self, kind: str, size: int, limit: int) -> bool:
        """Spend `size` of `kind` if it is within `limit` and what is left; whether it was."""
        if size > limit or size > getattr(self, kind):
            return False
        setattr(self, kind, getattr(self, kind) - size)
        return True


def new_output(kind: str, data: dict | None = None, **fields) -> NotebookNode:
    """An output of `kind`, as nbformat's `new_output` makes it but without checking it against
    the schema: every field here is built to it, and the check was a third of the time taken to
    write an autograded notebook."""
    output = NotebookNode(output_type=kind, **fields)
    if kind in ("display_data", "execute_result"):
        output.update(metadata=NotebookNode(), data=from_dict(data or {}))
    return output


def note(text: str):
    """An output that says something about the student's outputs, in the page's own words."""
    return new_output("stream", name="stdout", text=f"[feedback page: {text}]\n")


def plain(text: str) -> str:
    """`text` without terminal escapes or control characters (newlines and tabs stay)."""
    return CONTROL.sub("", text)


def _text(value) -> str | None:
    """A notebook text field (a string or a list of strings) as one string, else None."""
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "".join(value)
    return value if isinstance(value, str) else None


def safe_output(output, budget: Budget):
    """The safe form of one output, or a note saying why it is not shown."""
    if not isinstance(output, dict):
        return note("an output that is not well-formed is not shown")
    kind = output.get("output_type")
    if kind == "stream":
        text = _text(output.get("text"))
        if text is None or not budget.take("text", len(text), TEXT_LIMIT):
            return note("an output too large to show is not shown")
        name = output.get("name") if output.get("name") in STREAMS else "stdout"
        return new_output("stream", name=name, text=plain(text))
    if kind == "error":
        parts = [_text(output.get(key)) or "" for key in ("ename", "evalue")]
        lines = output.get("traceback")
        lines = [line for line in lines if isinstance(line, str)] if isinstance(lines, list) else []
        if not budget.take("text", sum(map(len, parts + lines)), TEXT_LIMIT):
            return note("an error too large to show is not shown")
        ename, evalue = map(plain, parts)
        return new_output("error", ename=ename, evalue=evalue, traceback=list(map(plain, lines)))
    if kind in ("display_data", "execute_result"):
        data = output.get("data")
        data = _data(data, budget) if isinstance(data, dict) else {}
        if not data:
            return note("an output of a kind this page does not show, or too large to show")
        if kind == "execute_result":
            count = output.get("execution_count")
            return new_output(kind, data, execution_count=count if type(count) is int else None)
        return new_output(kind, data)
    return note("an output of a kind this page does not show")


def _data(data: dict, budget: Budget) -> dict:
    """The formats of a display worth showing, each made safe; the others left out."""
    shown = {}
    text = _text(data.get("text/plain"))
    if text is not None and budget.take("text", len(text), TEXT_LIMIT):
        shown["text/plain"] = plain(text)
    html = _text(data.get("text/html"))
    if html is not None and budget.take("html", len(html), HTML_LIMIT):
        shown["text/html"] = clean_html(html)
    svg = _text(data.get("image/svg+xml"))
    if "text/html" not in shown and svg is not None and budget.take("text", len(svg), TEXT_LIMIT):
        # As an image, SVG can run nothing and style nothing of the page.
        encoded = base64.b64encode(svg.encode()).decode()
        shown["text/html"] = f'<img src="data:image/svg+xml;base64,{encoded}">'
    for mime in IMAGES:
        image = _text(data.get(mime))
        if (
            image is not None
            and BASE64.match(image)
            and budget.take("text", len(image), 4 * TEXT_LIMIT)
        ):
            shown[mime] = image
    return shown
