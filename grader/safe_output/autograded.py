"""The autograded notebook made inert: what the formgrader renders on the instructor's origin.

The formgrader renders the autograded notebook with nbconvert, unsanitized, on the instructor's
authenticated Jupyter origin, where a script could call the server's API as the instructor. So the
notebook is written with the student's part rebuilt: outputs as on the feedback page
(grader.safe_output.outputs), their HTML out of MathJax's reach; markdown that is not the
instructor's, and every raw cell, rendered and cleaned here (grader.safe_output.html) into one
HTML block that nbconvert's markdown passes through as it is and MathJax leaves untypeset; no
attachments; of the metadata, only what nbgrader and the feedback page read. It is written after
the grades are taken, so grading is unchanged.
"""

import contextlib
import functools
import html
import re
from pathlib import Path

import nbformat
from nbconvert.filters.markdown import markdown2html
from nbconvert.preprocessors import Preprocessor
from nbgrader.coursedir import CourseDirectory
from traitlets import Bool

from grader.judging.verdict import TASK_KEY, VERDICT_KEY
from grader.safe_output.feedback_steps import NBGRADER_FIELDS
from grader.safe_output.html import clean_html
from grader.safe_output.outputs import HTML_LIMIT, Budget, safe_output
from grader.safe_output.tex import without_math

FIELDS = {**NBGRADER_FIELDS, "checksum": str, "cell_type": str}  # what nbgrader's schema has
CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")  # nbformat's
# Characters that could end nbconvert's HTML block (a blank line) or start its math, written
# as the character references a browser reads back the same.
REFERENCES = str.maketrans({"\n": "&#10;", "\r": "&#13;", "$": "&#36;", "\\": "&#92;"})


def inert_html(text: str, budget: Budget, markdown: bool = True) -> str:
    """A cell's `text` (markdown, or HTML for a raw cell) as cleaned HTML on one line, in a block
    MathJax leaves alone; past `budget`'s HTML, as escaped text."""
    if budget.take("html", len(text), HTML_LIMIT):
        return _rendered(text, markdown)
    return _one_line(_escaped(text))


@functools.lru_cache(maxsize=128)  # of texts under HTML_LIMIT: a few MB at most
def _rendered(text: str, markdown: bool) -> str:
    """`text` rendered and cleaned, once per grading process: the same text comes in many
    submissions (a lesson's cell as an earlier release had it, in the notebook of every student
    who downloaded that one), and rendering it took a sixth of a notebook's grading."""
    shown = _escaped(text)
    with contextlib.suppress(Exception):  # e.g. a link to an attachment that is not there
        shown = clean_html(markdown2html(text) if markdown else text)
    return _one_line(shown)


def _escaped(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"


def _one_line(shown: str) -> str:
    return without_math(shown).translate(REFERENCES)


def _output(output, budget: Budget):
    """One output as the feedback page shows it, its HTML untypeset by MathJax."""
    shown = safe_output(output, budget)
    if "text/html" in shown.get("data", {}):
        shown.data["text/html"] = without_math(shown.data["text/html"])
    return shown


def _metadata(cell) -> dict:
    """Of the cell's metadata, nbgrader's fields of the right type and the judge's verdict."""
    found = cell.metadata.get("nbgrader", {})
    kept = {key: found[key] for key, kind in FIELDS.items() if isinstance(found.get(key), kind)}
    metadata = {"nbgrader": kept} if kept else {}
    verdict = cell.metadata.get(VERDICT_KEY, False)
    if verdict is None or isinstance(verdict, str):
        metadata[VERDICT_KEY] = verdict
    task = cell.metadata.get(TASK_KEY)
    if isinstance(task, str):
        metadata[TASK_KEY] = task
    return metadata


def inert_notebook(nb, instructors: frozenset[str]):
    """A copy of the graded `nb` that nbconvert renders inert; markdown cells whose source is one
    of `instructors` (the lesson's own text) are kept as written."""
    budget = Budget()
    cells = []
    for graded in nb.cells:
        cell = _bare_copy(graded)
        if cell.cell_type == "code":
            cell.outputs = [_output(output, budget) for output in graded.get("outputs", [])]
            if type(cell.get("execution_count")) is not int:
                cell.execution_count = None
        elif cell.cell_type == "raw":
            cell.source = inert_html(cell.source, budget, markdown=False)
        elif cell.source not in instructors:
            cell.source = inert_html(cell.source, budget)
        cell.metadata = nbformat.from_dict(_metadata(graded))
        if not isinstance(cell.get("id"), str) or not CELL_ID.match(cell.id):
            cell.pop("id", None)
        cells.append(cell)
    kernelspec = nb.metadata.get("kernelspec")
    kept = {"kernelspec": kernelspec} if _strings(kernelspec) else {}
    language = nb.metadata.get("language_info", {}).get("name")
    if isinstance(language, str) and CELL_ID.match(language):
        kept["language_info"] = {"name": language}
    return nbformat.from_dict({**_bare_copy(nb, "cells"), "metadata": kept, "cells": cells})


def _bare_copy(node, *left_out: str):
    """A copy of a notebook or cell without what inert_notebook rebuilds or drops (outputs,
    metadata, attachments, `left_out`): copying all of it was a sixth of a notebook's grading."""
    dropped = {"outputs", "metadata", "attachments", *left_out}
    return nbformat.from_dict({key: value for key, value in node.items() if key not in dropped})


def _strings(value) -> bool:
    """Whether `value` is a dict of strings (a kernelspec as nbgrader restores it)."""
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def instructors_markdown(source_nb) -> frozenset[str]:
    """The markdown of the lesson's source notebook: the instructor's own text."""
    return frozenset(cell.source for cell in source_nb.cells if cell.cell_type == "markdown")


def make_inert_in_place(path: Path, source: Path) -> None:
    """Rewrite the notebook at `path` inert (`source`: its lesson's source notebook), or remove
    it if it cannot be read: for the copy that a grading which failed leaves."""
    try:
        lesson_markdown = instructors_markdown(nbformat.read(source, as_version=4))
        nb = inert_notebook(nbformat.read(path, as_version=4), lesson_markdown)
        path.write_text(nbformat.writes(nb), encoding="utf-8")
    except Exception:  # not a notebook nbformat reads: nothing of it is shown
        path.unlink(missing_ok=True)


class MakeInert(Preprocessor):
    """Stock nbgrader autograde's last step: the notebook it writes made inert."""

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        """The inert copy of the graded notebook, the lesson's markdown kept."""
        found = resources["nbgrader"]
        coursedir = CourseDirectory(parent=self)
        folder = Path(coursedir.format_path(coursedir.source_directory, ".", found["assignment"]))
        source_nb = nbformat.read(folder / f"{found['notebook']}.ipynb", as_version=4)
        return inert_notebook(nb, instructors_markdown(source_nb)), resources


def use_inert_autograded(c) -> None:
    """Make stock nbgrader's autograde (`--engine nbgrader`, the formgrader) write it inert."""
    from nbgrader.converters import Autograde

    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [*steps, MakeInert]
