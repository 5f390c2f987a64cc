"""A student's outputs and HTML, made safe for the feedback page, in time linear in their size."""

import json
import time

import nbformat
from nbformat.v4 import new_output

from grader.commands.feedback import TOO_LONG, _in_children
from grader.safe_output.html import FeedbackExporter, clean_html
from grader.safe_output.outputs import Budget, safe_output
from grader.safe_output.tex import MATHJAX_URL, mathjax_head, without_math

MODAL = '<div class="modal show" style="position:fixed" id="top">All tests passed, 8 / 8</div>'


def _safe(output):
    return safe_output(nbformat.from_dict(output), Budget())


def test_class_style_id_scripts_and_handlers_are_stripped():
    """What Bootstrap or a browser would act on is gone; the text stays."""
    html = clean_html(
        MODAL + '<script>alert(1)</script><img src="x" onerror="alert(2)">'
        '<a href="javascript:alert(3)">a</a><a href="https://pytorch.org">b</a>'
    )
    assert html.startswith("<div>All tests passed, 8 / 8</div>&lt;script&gt;")
    for gone in ("class=", "style=", "id=", "onerror", "javascript:", '<img src="x"'):
        assert gone not in html
    assert '<a href="https://pytorch.org">b</a>' in html


def test_a_tag_split_over_lines_is_parsed_not_skipped():
    """`half<b\\n>half` is one tag to the parser, as to a browser."""
    assert clean_html("half<b\n>half</b><b\nclass=x>") == "half<b>half</b><b></b>"


def test_html_and_svg_outputs_are_cleaned_and_running_kinds_dropped():
    """text/html is cleaned, SVG becomes an image, JavaScript and widgets are left out."""
    shown = _safe(
        new_output(
            "display_data",
            {
                "text/html": MODAL,
                "application/javascript": "alert(1)",
                "application/vnd.jupyter.widget-view+json": {"model_id": "x"},
            },
            metadata={"isolated": True},
        )
    )
    assert shown.data == {"text/html": "<div>All tests passed, 8 / 8</div>"} and not shown.metadata
    svg = _safe(new_output("display_data", {"image/svg+xml": "<svg onload='alert(1)'/>"}))
    assert svg.data["text/html"].startswith('<img src="data:image/svg+xml;base64,')
    only_js = _safe(new_output("display_data", {"application/javascript": "alert(1)"}))
    assert only_js.output_type == "stream" and "does not show" in only_js.text


def test_terminal_escapes_odd_names_and_bad_images_are_made_harmless():
    """ANSI escapes and control characters leave text; a stream is stdout or stderr; an image
    that is not base64 is left out."""
    stream = _safe(
        {"output_type": "stream", "name": 'x" onclick="y', "text": "\x1b[31mred\x1b]0;t\x07\r"}
    )
    assert (stream.name, stream.text) == ("stdout", "red0;t")
    image = _safe(new_output("display_data", {"image/png": '"><script>', "text/plain": "fig"}))
    assert image.data == {"text/plain": "fig"}


def test_hostile_sizes_cost_well_under_a_second():
    """A 300k-character line of `<` (as HTML and as text) and a 5 MB output are shown or
    replaced by a note quickly; the bound is a guard, the measured times are in the report."""
    started = time.perf_counter()
    as_html = _safe(new_output("display_data", {"text/html": "<" * 300_000}))
    as_text = _safe(new_output("stream", name="stdout", text="<" * 300_000))
    huge = _safe(new_output("stream", name="stdout", text="x" * 5_000_000))
    assert time.perf_counter() - started < 5
    assert "too large" in as_html.text and as_text.text == "<" * 300_000
    assert "too large" in huge.text


def test_a_page_over_its_time_limit_is_given_up_and_the_others_go_on():
    """Work that overruns its seconds is killed and named; the rest finish."""

    def work(item):
        time.sleep(60 if item == "slow" else 0)
        return None if item != "broken" else 1 / 0

    results = _in_children(work, ["a", "slow", "broken", "b"], jobs=2, seconds=2)
    assert results == {
        "a": None,
        "slow": TOO_LONG,
        "broken": "building the page failed: ZeroDivisionError",
        "b": None,
    }


def test_only_images_released_with_the_lesson_are_inlined(tmp_path):
    """A markdown image naming a released image file becomes a data URI; a path out of the
    release (also through a linked folder), a link, a file that is no image or a missing file
    stays as written (and the cleaner then drops its address)."""
    from grader.safe_output.feedback_steps import inline_images

    release = tmp_path / "release" / "ps1"
    (release / "figures").mkdir(parents=True)
    (release / "figures" / "plot.PNG").write_bytes(b"\x89PNG")
    (release / "notes.txt").write_text("text")
    (tmp_path / "secret.png").write_bytes(b"secret")
    (release / "link.png").symlink_to(tmp_path / "secret.png")
    (release / "outside").symlink_to(tmp_path, target_is_directory=True)
    text = inline_images(
        "![plot](./figures/plot.PNG) ![p](figures/plot.PNG)", [release], None, Budget()
    )
    assert text == "![plot](data:image/png;base64,iVBORw==) ![p](data:image/png;base64,iVBORw==)"
    for kept in (
        "![x](../../secret.png)",
        f"![x]({tmp_path / 'secret.png'})",
        "![x](link.png)",
        "![x](outside/secret.png)",
        "![x](notes.txt)",
        "![x](missing.png)",
        "![x](https://example.org/a.png)",
    ):
        assert inline_images(kept, [release], None, Budget()) == kept


def test_a_students_pasted_images_and_own_image_files_are_inlined(tmp_path):
    """An image pasted into a markdown cell (`attachment:name`, markdown or <img>) and an image
    file handed in beside the notebook keep their picture; an attachment that is no raster
    image, or not base64, and a path out of the submission stay as written."""
    from grader.safe_output.feedback_steps import inline_images

    release, submitted = tmp_path / "release", tmp_path / "submitted"
    release.mkdir(), submitted.mkdir()
    (submitted / "mine.gif").write_bytes(b"GIF89a")
    attachments = {
        "shot.png": {"image/png": "iVBORw=="},
        "drawing.svg": {"image/svg+xml": "PHN2Zz4="},
        "bad.png": {"image/png": "<script>"},
    }
    text = inline_images(
        '![s](attachment:shot.png) <img alt="s" src="attachment:shot.png"> ![m](mine.gif)',
        [release, submitted],
        attachments,
        Budget(),
    )
    assert text == (
        '![s](data:image/png;base64,iVBORw==) <img alt="s" src="data:image/png;base64,iVBORw==">'
        " ![m](data:image/gif;base64,R0lGODlh)"
    )
    for kept in (
        "![d](attachment:drawing.svg)",
        "![b](attachment:bad.png)",
        "![n](attachment:none.png)",
        "![o](../release/x.png)",
    ):
        assert inline_images(kept, [release, submitted], attachments, Budget()) == kept


def test_inlined_images_spend_the_pages_image_budget_per_reference(tmp_path):
    """Each reference spends the image's size: past the page's image budget, references stay
    as written, however many a student writes; an image over the per-image limit is never
    inlined."""
    from grader.safe_output.feedback_steps import IMAGE_LIMIT, inline_images
    from grader.safe_output.outputs import PAGE_IMAGE_LIMIT

    release = tmp_path / "release"
    release.mkdir()
    (release / "fig.png").write_bytes(b"\x89PNG" + b"0" * (100 * 1024))
    (release / "big.png").write_bytes(b"0" * (IMAGE_LIMIT + 1))
    budget = Budget()
    text = inline_images("![a](fig.png)\n" * 200, [release], None, budget)
    inlined = text.count("data:image/png")
    assert inlined == PAGE_IMAGE_LIMIT // (100 * 1024 + 4)
    assert text.count("![a](fig.png)") == 200 - inlined
    assert inline_images("![b](big.png)", [release], None, Budget()) == "![b](big.png)"


def test_feedback_pages_load_mathjax_without_the_tex_that_writes_html():
    """Both page paths' exporter finds grader.safe_output.tex's MathJax, whose TeX cannot write
    styles, classes, ids, links or fetch code, and whose formulas are clipped to their boxes."""
    macro = FeedbackExporter().environment.get_template("mathjax.html.j2").module.mathjax()
    assert macro.strip() == mathjax_head().strip() and "cdnjs" not in macro
    config = json.loads(macro.split("window.MathJax = ", 1)[1].split(";</script>")[0])
    assert set(config["tex"]["autoload"]) == {"action", "bbox", "html", "unicode"}
    assert not any(config["tex"]["autoload"].values())
    assert config["tex"]["packages"] == {"[-]": ["require"]}
    assert set(config["options"]["safeOptions"]["allow"].values()) == {"none"}
    assert "ui/safe" in config["loader"]["load"]
    assert "contain: paint" in macro and f'src="{MATHJAX_URL}"' in macro


def test_html_kept_from_mathjax_is_wrapped_in_both_versions_ignore_classes():
    """`without_math` marks a block that MathJax 2 and 3 leave untypeset."""
    assert without_math("<p>$x$</p>") == (
        '<div class="tex2jax_ignore mathjax_ignore"><p>$x$</p></div>'
    )


def test_stock_nbgrader_export_writes_a_csv_a_spreadsheet_opens_safely(tmp_path, monkeypatch):
    """`nbgrader export` in a course of the kit: a name with a comma stays in its column and
    one starting with = is not read as a formula; the values are stock's (0 for no submission)."""
    import csv
    import os
    import sys

    from nbgrader.api import Gradebook

    from grader.safe_output.stock_export import COLUMNS, SafeCsvExportPlugin

    to = tmp_path / "grades.csv"
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")  # alembic
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gradebook:
        gradebook.add_assignment("ps1")
        gradebook.add_student("s1", first_name='=HYPERLINK("http://x")', last_name="Lee, Jr.")
        SafeCsvExportPlugin(to=str(to)).export(gradebook)
    (row,) = list(csv.DictReader(to.open()))
    assert list(row) == COLUMNS
    assert row["first_name"] == '\'=HYPERLINK("http://x")' and row["last_name"] == "Lee, Jr."
    assert (row["student_id"], row["score"], row["max_score"]) == ("s1", "0.0", "0.0")


def test_a_text_rendered_before_is_still_charged_to_each_page():
    """The autograded notebook's markdown is rendered once per text and grading process, but
    every page still pays for it: one whose HTML is spent shows the same text escaped."""
    from grader.safe_output.autograded import inert_html

    text = "## Exercises\n\n<b>bold</b> <script>alert(1)</script>"
    first = inert_html(text, Budget())
    assert "<b>bold</b>" in first and "&lt;script&gt;" in first
    assert inert_html(text, Budget()) == first
    spent = Budget()
    spent.html = 0
    assert "<pre>## Exercises&#10;&#10;&lt;b&gt;bold" in inert_html(text, spent)
