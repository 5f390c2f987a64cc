"""TeX on a feedback page: typeset by MathJax 3, unable to draw outside its own box.

A student's markdown reaches the page as text (the HTML cleaner leaves TeX alone), and MathJax
turns it into styled elements. So the page loads MathJax with the TeX extensions that write
HTML attributes or fetch code left out (`\\style`, `\\class`, `\\cssId`, `\\href`, `\\bbox`,
`\\unicode`, `\\require`, tooltips), its `safe` filter dropping every URL, class, id and style that
is left (`\\mmlToken` can still write them), and the page's own CSS clipping each typeset formula
to its box. Box moves (`\\raise`, `\\moveleft`, `\\smash`, `\\rlap`, negative `\\kern`) and huge
`\\rule`s therefore stay inside the formula: a huge formula only pushes the page down.
"""

import json

MATHJAX_VERSION = "3.2.2"  # what `make install` puts in .venv for the browser tests
MATHJAX_URL = f"https://cdn.jsdelivr.net/npm/mathjax@{MATHJAX_VERSION}/es5/tex-chtml.js"
LEFT_OUT = ("action", "bbox", "html", "unicode")  # autoloaded TeX extensions not loaded
MATHJAX_CONFIG = {
    "loader": {"load": ["ui/safe"]},
    "tex": {
        "inlineMath": [["$", "$"], ["\\(", "\\)"]],
        "displayMath": [["$$", "$$"], ["\\[", "\\]"]],
        "processEscapes": True,
        "processEnvironments": True,
        "tags": "ams",
        "packages": {"[-]": ["require"]},
        "autoload": {name: [] for name in LEFT_OUT},
    },
    "options": {
        "safeOptions": {
            "allow": {"URLs": "none", "classes": "none", "cssIDs": "none", "styles": "none"}
        }
    },
}
# Paint containment clips a formula's drawing (fixed and absolute descendants included) to its
# box; `overflow: clip` keeps an inline formula's baseline, a display formula may scroll.
CLIP_CSS = """\
mjx-container { display: inline-block; contain: paint !important; overflow: clip !important; }
mjx-container[display="true"] { display: block; overflow: auto hidden !important; }
"""
IGNORE_CLASSES = "tex2jax_ignore mathjax_ignore"  # what MathJax 2 and 3 leave untypeset


def mathjax_head() -> str:
    """The page's MathJax: its configuration, the script, and the CSS that clips formulas."""
    config = json.dumps(MATHJAX_CONFIG).replace("</", "<\\/")
    return (
        f"<script>window.MathJax = {config};</script>\n"
        f'<script defer src="{MATHJAX_URL}"></script>\n'
        f"<style>\n{CLIP_CSS}</style>\n"
    )


# nbconvert's templates import `mathjax` from this file; FeedbackExporter loads this one first.
MATHJAX_TEMPLATE = (
    "{%- macro mathjax(url=None) -%}{% raw %}\n" + mathjax_head() + "{% endraw %}{%- endmacro %}\n"
)


def without_math(html: str) -> str:
    """`html` in a block that MathJax (2 or 3) leaves untypeset: for cleaned HTML, which cannot
    carry a class of its own to undo it."""
    return f'<div class="{IGNORE_CLASSES}">{html}</div>'
