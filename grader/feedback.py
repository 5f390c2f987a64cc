"""Per-student HTML feedback that explains failed checks without revealing hidden tests."""

import re
from pathlib import Path

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, Preprocessor
from nbgrader.preprocessors import GetGrades
from traitlets import Bool

from grader.course import nbgrader_api, nbgrader_config

HIDDEN_TESTS = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.DOTALL)
HIDDEN_NOTE = "# (the grader's hidden tests ran here; their code is not shown)"


class HideHiddenTests(Preprocessor):
    """Remove hidden test code from test cells, and reduce their tracebacks to the explanation.

    A traceback quotes the lines around the failing check, which would reveal hidden tests;
    the explanation (`CheckFailed: …`) is what the student needs.
    """

    enabled = Bool(True).tag(config=True)
    show_hidden = Bool(False, help="Show hidden tests and full tracebacks.").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        """Hide the hidden parts of one autograded test cell."""
        if self.show_hidden or not cell.metadata.get("nbgrader", {}).get("grade"):
            return cell, resources
        if cell.cell_type == "code":
            cell.source = HIDDEN_TESTS.sub(HIDDEN_NOTE, cell.source)
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


def generate_feedback(course_dir: Path, lesson: str, *, show_hidden: bool = False) -> list[Path]:
    """Write feedback/<student>/<lesson>/<lesson>.html for every autograded submission."""
    config = nbgrader_config(
        course_dir,
        GenerateFeedback={"preprocessors": [GetGrades, HideHiddenTests, CSSHTMLHeaderPreprocessor]},
        HideHiddenTests={"show_hidden": show_hidden},
    )
    api = nbgrader_api(config)
    result = api.generate_feedback(lesson)
    if not result["success"]:
        raise RuntimeError(f"feedback for {lesson} failed:\n{result.get('error') or result['log']}")
    return sorted(Path(course_dir).glob(f"feedback/*/{lesson}/*.html"))
