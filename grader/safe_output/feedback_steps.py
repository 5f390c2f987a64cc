"""The feedback page's steps: nbgrader preprocessors that `grader feedback` and stock
`nbgrader generate_feedback` (the formgrader's button) both run, set by `use_safe_feedback`.

Everything the grading run produced came from the submission's process, where the probes (and,
under stock nbgrader, the hidden tests) ran, so any of it can carry the grader's code. A page
shows only: the student's notebook as submitted (their sources and the outputs they stored on
their own machine), the released lesson (test cells without their hidden tests), and each test's
score from the gradebook with the judge's explanation, worded by the grading process alone. No
output of the grading run is shown.
"""

import base64
import re
import shutil
from pathlib import Path

import nbformat
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, Preprocessor
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearHiddenTests, GetGrades
from traitlets import Bool

from grader.cells import grade_id, is_locked, is_test
from grader.judging.verdict import TASK_KEY, VERDICT_KEY
from grader.safe_output.html import FeedbackExporter, clean_html
from grader.safe_output.outputs import HTML_LIMIT, Budget, note, safe_output

NOTEBOOK_LIMIT = 8 * 1024**2  # bytes of a submitted notebook read for its outputs
HIDDEN_NOTE = "# (the grader's hidden tests ran here; their code is not shown)"
NOT_PASSED = (
    "This test did not pass when your notebook was graded: run it in your notebook to see why."
)
SAFE_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}\Z")
NBGRADER_FIELDS = {
    **dict.fromkeys(("grade", "solution", "task", "locked"), bool),
    **dict.fromkeys(("points", "score"), (int, float)),
    **dict.fromkeys(("grade_id", "comment"), str),
    "schema_version": int,
}


def _dest(preprocessor, resources, directory: str, student: str | None = None) -> Path:
    """The course folder `directory` (e.g. submitted) of this page's lesson and student (or of
    `student`: "." for the release)."""
    coursedir = CourseDirectory(parent=preprocessor)
    found = resources["nbgrader"]
    student = found["student"] if student is None else student
    return Path(coursedir.format_path(getattr(coursedir, directory), student, found["assignment"]))


IMAGE_LINK = re.compile(r"(!\[[^\]]*\]\(\s*)([^)\s]+)")  # markdown's ![alt](path
HTML_IMAGE = re.compile(r"""(<img\b[^>]*?\bsrc\s*=\s*["']?)([^"'\s>]+)""", re.IGNORECASE)
IMAGE_TYPES = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".gif": "gif"}
IMAGE_LIMIT = 256 * 1024  # bytes of one image inlined in a page
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*\Z")
ATTACHMENT = "attachment:"


def _file_image(name: str, folder: Path) -> tuple[str, str, int] | None:
    """(kind, base64 text, size) of the image file `name` inside `folder` (no path out of it,
    no link); a file over the limit is read only past it, and then refused by the budget."""
    path, root = folder / name.removeprefix("./"), folder.resolve()
    kind = IMAGE_TYPES.get(path.suffix.lower())
    inside = not Path(name).is_absolute() and path.resolve().is_relative_to(root)
    if not (kind and inside and path.is_file() and not path.is_symlink()):
        return None
    with open(path, "rb") as handle:
        data = handle.read(IMAGE_LIMIT + 1)
    return (kind, base64.b64encode(data).decode("ascii"), len(data)) if data else None


def _attached_image(name: str, attachments) -> tuple[str, str, int] | None:
    """(kind, base64 text, size) of the cell's attachment `name` when it is a raster image."""
    bundle = attachments.get(name) if isinstance(attachments, dict) else None
    for kind in ("png", "jpeg", "gif"):
        data = bundle.get(f"image/{kind}") if isinstance(bundle, dict) else None
        if isinstance(data, str) and len(data) <= IMAGE_LIMIT * 4 // 3 + 4 and BASE64.match(data):
            return kind, data, len(data) * 3 // 4
    return None


def inline_images(text: str, folders: list[Path], attachments, budget: Budget) -> str:
    """Images of a markdown cell (`![alt](src)` or `<img src=…>`) inlined, each spending its size
    from `budget`'s images: the cell's own attachments (`attachment:name`, an image pasted into
    the cell) and files inside `folders` (an instructor's figure released with the lesson, one
    the student handed in beside the notebook). A page shows no image it links to, since a path
    could reach any file. One over a limit is left as written (the cleaner drops its address;
    its alt text stays)."""

    def inline(match: re.Match) -> str:
        source = match[2]
        if source.startswith(ATTACHMENT):
            found = _attached_image(source[len(ATTACHMENT) :], attachments)
        else:
            found = next(filter(None, (_file_image(source, f) for f in folders)), None)
        if not found or not budget.take("images", found[2], IMAGE_LIMIT):
            return match[0]
        return f"{match[1]}data:image/{found[0]};base64,{found[1]}"

    return HTML_IMAGE.sub(inline, IMAGE_LINK.sub(inline, text))


class KeepOnlyThePage(Preprocessor):
    """Empty the page's folder of the files nbgrader copied beside the autograded notebook.

    The submission may have written them while it ran; it runs first, before any step can fail.
    """

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        """Remove everything in the feedback folder but the pages of its notebooks."""
        autograded = _dest(self, resources, "autograded_directory")
        pages = {f"{path.stem}.html" for path in autograded.glob("*.ipynb")}
        folder = _dest(self, resources, "feedback_directory")
        for path in folder.iterdir() if folder.is_dir() else []:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.name not in pages or not path.is_file() or path.is_symlink():
                path.unlink()
        return nb, resources


class HideHiddenTests(ClearHiddenTests):
    """nbgrader's ClearHiddenTests, on test cells only, leaving a note where they were."""

    def preprocess_cell(self, cell, resources, index):
        """Remove the hidden tests of one test cell."""
        if is_test(cell) and self._remove_hidden_test_region(cell):
            cell.source = f"{cell.source}\n{HIDDEN_NOTE}".lstrip("\n")
        return cell, resources


def _key(cell):
    """What matches a cell across the autograded and the submitted notebook."""
    return ("grade_id", grade_id(cell)) if grade_id(cell) else ("id", cell.get("id"))


def _submitted_cells(path: Path) -> tuple[dict, str | None]:
    """The submitted notebook's cells by `_key`, and why none were read (None if they were)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(NOTEBOOK_LIMIT + 1)
        if len(data) > NOTEBOOK_LIMIT:
            return {}, "your submitted notebook is too large to show its outputs"
        cells = nbformat.reads(data.decode(), as_version=4).cells
    except Exception:  # a notebook nbgrader graded may still be one nbformat cannot read
        return {}, "your submitted notebook could not be read to show its outputs"
    found = {}
    for cell in cells:
        if isinstance(cell, dict) and isinstance(cell.get("metadata"), dict):
            found.setdefault(_key(cell), cell)
    return found, None


class ShowSafeOutputs(Preprocessor):
    """Give every code cell outputs that are safe: the student's own, or the test's verdict.

    A test cell shows its score and, when it lost points, the judge's explanation. Any other
    code cell shows the outputs its submitted copy stored, made safe (grader.safe_output.outputs).
    Markdown is capped here and cleaned where the exporter renders it (FeedbackExporter).
    """

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        """Replace the outputs of every cell of one autograded notebook."""
        if not isinstance(self.parent, FeedbackExporter):
            raise ValueError("the feedback steps need the FeedbackExporter, which cleans markdown")
        folder = _dest(self, resources, "submitted_directory")
        submitted, why_none = _submitted_cells(
            folder / f"{resources['nbgrader']['notebook']}.ipynb"
        )
        release = _dest(self, resources, "release_directory", ".")
        budget = Budget()
        graded_tasks = _graded_tasks(nb.cells, submitted)
        for index, cell in enumerate(nb.cells):
            mine = submitted.get(_key(cell), {})
            if cell.cell_type in ("markdown", "raw"):
                text = cell.source  # the HTML budget is of what was written: not the images
                if not budget.take("html", len(text), HTML_LIMIT):
                    text = "*[feedback page: a cell too large to show is not shown]*"
                text = inline_images(text, [release, folder], mine.get("attachments"), budget)
                cell.source = text if cell.cell_type == "markdown" else clean_html(text)
            elif is_test(cell):
                cell.outputs, cell.execution_count = [_verdict(cell, mine)], None
            elif index in graded_tasks:  # what the student saw may be another key's task
                cell.outputs = [note(f"the task you were graded on: {graded_tasks[index]}")]
            else:
                count = mine.get("execution_count")
                cell.execution_count = count if type(count) is int else None
                outputs = mine.get("outputs")
                outputs = outputs if isinstance(outputs, list) else []
                cell.outputs = [safe_output(out, budget) for out in outputs]
                if why_none and not is_locked(cell):
                    cell.outputs = [note(why_none)]
        return nb, resources


def _graded_tasks(cells, submitted: dict) -> dict[int, str]:
    """The cells that show the student's own task (they call `my_task`), each with the task the
    next test was graded on, where the grader wrote one (a course with tasks of each student's
    own; under stock nbgrader, or in a submitted copy, the key is the student's and not read)."""
    found, shows = {}, None
    for index, cell in enumerate(cells):
        if cell.cell_type == "code" and not is_test(cell) and "my_task(" in cell.source:
            shows = index
        elif is_test(cell) and shows is not None:
            task = cell.metadata.get(TASK_KEY)
            theirs = submitted.get(_key(cell), {}).get("metadata", {})
            if isinstance(task, str) and TASK_KEY not in theirs:
                found[shows] = task
            shows = None
    return found


def _verdict(cell, submitted: dict):
    """The test's score from the gradebook, and the judge's explanation when it lost points."""
    found = cell.metadata.get("nbgrader", {})
    score, points = found.get("score"), found.get("points")
    if not all(isinstance(value, int | float) for value in (score, points)):
        return note("this test has no score yet")
    heading = f"Score: {score:g} / {points:g}"
    # The grader writes the judge's explanation and the student's own task in the cell's
    # metadata; under stock nbgrader, or in a submitted copy, they are the student's and not shown.
    theirs = submitted.get("metadata", {})
    task = cell.metadata.get(TASK_KEY)
    task = f"Your task: {task}\n" if isinstance(task, str) and TASK_KEY not in theirs else ""
    if score >= points:
        return nbformat.v4.new_output("stream", name="stdout", text=f"{heading}: passed\n{task}")
    judged = cell.metadata.get(VERDICT_KEY)
    if not isinstance(judged, str) or VERDICT_KEY in theirs:
        judged = NOT_PASSED
    return nbformat.v4.new_output("stream", name="stderr", text=f"{heading}\n{task}{judged}\n")


class CleanMetadata(Preprocessor):
    """Keep of the notebook's metadata only what the page needs, each field of its type.

    Templates read cell tags, attachments and notebook metadata (widget state) into the page.
    """

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        """Rebuild the metadata of the notebook and of each cell."""
        language = nb.metadata.get("language_info", {}).get("name")
        name = language if isinstance(language, str) and SAFE_ID.match(language) else "python"
        nb.metadata = nbformat.from_dict({"language_info": {"name": name}})
        for cell in nb.cells:
            found = cell.metadata.get("nbgrader", {})
            kept = {
                field: found[field]
                for field, kind in NBGRADER_FIELDS.items()
                if isinstance(found.get(field), kind)
            }
            valid = SAFE_ID.match(kept.get("grade_id", "x"))
            cell.metadata = nbformat.from_dict({"nbgrader": kept} if kept and valid else {})
            cell.pop("attachments", None)
        return nb, resources


FEEDBACK_STEPS = [
    KeepOnlyThePage,
    GetGrades,
    HideHiddenTests,
    ShowSafeOutputs,
    CleanMetadata,
    CSSHTMLHeaderPreprocessor,
]


def use_safe_feedback(c) -> None:
    """Make nbgrader's GenerateFeedback (the command, the API, the formgrader) use these steps."""
    c.GenerateFeedback.preprocessors = FEEDBACK_STEPS
    c.GenerateFeedback.exporter_class = FeedbackExporter
