"""The nbgrader steps around running a submission, shared by both engines.

Before the run they restore what a student must not change (test cells, kernelspec) and clear
stored outputs; after it they drop warnings from stderr and cap long outputs.

Stock nbgrader's steps look each cell up in the gradebook and check each cell's metadata
against the JSON schema, for every notebook. The fast engine runs the same steps with what they
look up read once per lesson (`ReleasedLesson`), and checks a cell's metadata against the schema
once per distinct metadata: the steps decide the same, with the same code.
"""

import json
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearMetadataPreprocessor, Preprocessor
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    ClearOutput,
    IgnorePattern,
    LimitOutput,
    OverwriteCells,
    OverwriteKernelspec,
)
from traitlets import Bool

from grader.cells import grade_id
from grader.grading.gradebook import NotebookCells


class DropDuplicateCells(Preprocessor):
    """Keep the first cell of each grade id; later copies become ordinary cells.

    nbgrader's own DeduplicateIds leaves the copies with empty nbgrader metadata, which its next
    step rejects as an 'old metadata version', so a student who pasted a cell twice got no grade.
    """

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        """Strip the nbgrader metadata from every repeated grade id."""
        seen = set()
        for cell in nb.cells:
            tracked = grade_id(cell)
            if tracked in seen:
                del cell.metadata["nbgrader"]
            elif tracked:
                seen.add(tracked)
        return nb, resources


def released_source(cell, config) -> str:
    """A test cell's source as the student notebook has it, hidden tests removed by nbgrader's
    own step (with the course's delimiters); the cell itself is left as it is."""
    copy = nbformat.from_dict({"cell_type": "code", "source": cell.source, "metadata": {}})
    ClearHiddenTests(config=config, enforce_metadata=False).preprocess_cell(copy, {}, 0)
    return copy.source


SANITIZE = [ClearOutput, DropDuplicateCells, OverwriteKernelspec, OverwriteCells, CheckCellMetadata]
AFTER_RUN = [IgnorePattern, ClearMetadataPreprocessor, LimitOutput]


@dataclass(frozen=True)
class ReleasedCell:
    """A released cell as the gradebook has it (what OverwriteCells reads of one)."""

    name: str
    cell_type: str
    locked: bool
    checksum: str | None
    source: str


@dataclass
class ReleasedLesson:
    """What nbgrader's steps look up about a lesson in the gradebook, read at once, and the
    nbgrader metadata already found valid in its submissions."""

    kernelspec: str | None
    cells: dict[str, ReleasedCell]
    max_scores: dict[str, float]  # graded and task cells
    assignment_id: str
    notebook_id: str
    notebooks: tuple[NotebookCells, ...]  # every notebook of the lesson's assignment
    valid_metadata: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, db_url: str, lesson: str, notebook_name: str) -> "ReleasedLesson":
        """Read the notebook `notebook_name` of the assignment `lesson` from the gradebook."""
        with Gradebook(db_url) as gb:
            assignment = gb.find_assignment(lesson)
            notebook = gb.find_notebook(notebook_name, lesson)
            return cls(
                notebook.kernelspec,
                {
                    c.name: ReleasedCell(c.name, c.cell_type, c.locked, c.checksum, c.source)
                    for c in notebook.source_cells
                },
                {c.name: c.max_score for c in [*notebook.task_cells, *notebook.grade_cells]},
                assignment.id,
                notebook.id,
                tuple(NotebookCells.of(n) for n in assignment.notebooks),
            )

    # The two gradebook queries OverwriteCells makes per cell, answered from memory
    def find_source_cell(self, name: str, notebook: str, assignment: str) -> ReleasedCell:
        """The released cell `name`; MissingEntry if there is none, as the gradebook says."""
        if name not in self.cells:
            raise MissingEntry(f"No such source cell: {assignment}/{notebook}/{name}")
        return self.cells[name]

    def find_graded_cell(self, name: str, notebook: str, assignment: str) -> "GradedCell":
        """The graded (or task) cell `name` (OverwriteCells reads its max_score only)."""
        if name not in self.max_scores:
            raise MissingEntry(f"No such grade cell: {assignment}/{notebook}/{name}")
        return GradedCell(name, self.max_scores[name])


@dataclass(frozen=True)
class GradedCell:
    """A graded cell's name and points, as the gradebook has them."""

    name: str
    max_score: float


class ReleasedLessons:
    """Each lesson's `ReleasedLesson`, read again when the lesson's source notebook changes
    (a new `make release` rewrites the gradebook from it)."""

    def __init__(self):
        self._read: dict[tuple, tuple[tuple, ReleasedLesson]] = {}

    def get(self, db_url: str, lesson: str, notebook: str, source: Path) -> ReleasedLesson:
        """The notebook `notebook` of `lesson` as the gradebook has it now; `source` is its
        source notebook."""
        stat = source.stat()
        version = (stat.st_mtime_ns, stat.st_size)
        key = (db_url, lesson, notebook)
        known = self._read.get(key)
        if known is None or known[0] != version:
            known = version, ReleasedLesson.read(db_url, lesson, notebook)
            self._read[key] = known
        return known[1]


class _KernelspecFromRelease(OverwriteKernelspec):
    """OverwriteKernelspec with the released kernelspec already read."""

    lesson: ReleasedLesson

    def preprocess(self, nb, resources):
        """Put the released kernelspec in the notebook, if there is one."""
        kernelspec = json.loads(self.lesson.kernelspec or "null")
        if kernelspec:
            nb.metadata["kernelspec"] = kernelspec
        return nb, resources


class _CellsFromRelease(OverwriteCells):
    """OverwriteCells (nbgrader's own checks per cell) with the released cells already read."""

    lesson: ReleasedLesson

    def preprocess(self, nb, resources):
        """Restore each tracked cell as nbgrader's OverwriteCells does."""
        if self.add_missing_cells:  # reads more of the gradebook: nbgrader's own way
            return super().preprocess(nb, resources)
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.gradebook = self.lesson  # answers the queries preprocess_cell makes
        return Preprocessor.preprocess(self, nb, resources)


class _RememberingValidator(MetadataValidator):
    """nbgrader's metadata checks, skipping a cell whose nbgrader metadata and type passed them
    before: the checks depend on nothing else (the cell's source only appears in messages)."""

    def __init__(self, valid: set[str]):
        super().__init__()
        self.valid = valid

    def validate_cell(self, cell) -> None:
        """Check the cell as nbgrader does, unless the same metadata passed before."""
        if "nbgrader" not in cell.metadata:
            return
        key = json.dumps([cell.cell_type, cell.metadata["nbgrader"]], sort_keys=True)
        if key not in self.valid:
            super().validate_cell(cell)
            self.valid.add(key)


class _CheckedMetadata(CheckCellMetadata):
    """CheckCellMetadata that remembers which metadata passed."""

    lesson: ReleasedLesson

    def preprocess(self, nb, resources):
        """Validate as CheckCellMetadata does, with the same error."""
        try:
            _RememberingValidator(self.lesson.valid_metadata).validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise ValidationError(msg) from None
        return nb, resources


def sanitize(nb, resources, config, lesson: ReleasedLesson):
    """SANITIZE's steps, in its order, with `lesson` read already."""
    for step in [ClearOutput, DropDuplicateCells]:
        nb, resources = step(config=config)(nb, resources)
    for step in [_KernelspecFromRelease, _CellsFromRelease, _CheckedMetadata]:
        preprocessor = step(config=config)
        preprocessor.lesson = lesson
        nb, resources = preprocessor(nb, resources)
    return nb, resources
