"""The nbgrader steps around running a submission, shared by both engines.

Before the run they restore what a student must not change (test cells, kernelspec) and clear
stored outputs; after it they drop warnings from stderr and cap long outputs.
"""

from nbconvert.preprocessors import ClearMetadataPreprocessor, Preprocessor
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearOutput,
    IgnorePattern,
    LimitOutput,
    OverwriteCells,
    OverwriteKernelspec,
)
from traitlets import Bool

from grader.cells import grade_id


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


SANITIZE = [ClearOutput, DropDuplicateCells, OverwriteKernelspec, OverwriteCells, CheckCellMetadata]
AFTER_RUN = [IgnorePattern, ClearMetadataPreprocessor, LimitOutput]
