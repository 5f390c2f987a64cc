"""Per-student HTML feedback that explains failed checks without revealing the grader's code."""

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, Preprocessor
from nbgrader.preprocessors import GetGrades
from traitlets import Bool

from grader.cells import is_graded, is_locked
from grader.course import Course
from grader.grading import outcomes
from grader.grading.outcomes import Outcome
from grader.safe_output.html import FeedbackExporter, SafeImageMetadata
from grader.safe_output.redaction import HIDDEN_TESTS, redact_output, secret_lines

HIDDEN_NOTE = "# (the grader's hidden tests ran here; their code is not shown)"
CAUSE = re.compile(r"^\s*(?:\w+\.)*(\w+(?:Error|Exception)): (.+)$", re.MULTILINE)


class HideHiddenTests(Preprocessor):
    """Remove hidden test code from test cells, and reduce their tracebacks to the explanation.

    A traceback quotes the lines around the failing check, which would reveal hidden tests;
    the explanation (`CheckFailed: …`) is what the student needs.
    """

    enabled = Bool(True).tag(config=True)
    show_hidden = Bool(False, help="Show hidden tests and full tracebacks.").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        """Hide the hidden parts of one autograded test cell."""
        if self.show_hidden or not is_graded(cell):
            return cell, resources
        if cell.cell_type == "code":
            cell.source = HIDDEN_TESTS.sub(HIDDEN_NOTE, cell.source)
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class RemoveGraderCode(Preprocessor):
    """Replace every output line that quotes a hidden test or the probes with a marker.

    Both run in the student's process, so a submission can print them into any output. Lines
    the submission's own cells hold are no secret to it, and stay.
    """

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        """Redact the outputs of every cell of one autograded notebook."""
        own = [
            line
            for cell in nb.cells
            if not is_locked(cell)  # nbgrader restores those
            for line in cell.source.splitlines()
        ]
        secrets = secret_lines(resources["nbgrader"]["assignment"], own)
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                redact_output(output, secrets)
        return nb, resources


@dataclass(frozen=True)
class FeedbackRun:
    """The feedback pages written, and why each other submission got none."""

    pages: list[Path]
    missing: dict[str, str]


def generate_feedback(course: Course, lesson: str, *, show_hidden: bool = False) -> FeedbackRun:
    """Write feedback/<student>/<lesson>/<lesson>.html for each submission that can have one.

    Each student is done on their own, so one submission without a readable autograded notebook
    never stops the others; it is listed with the reason instead. The page holds no student
    HTML that can run (grader.safe_output.html) and, unless `show_hidden`, no grader code.
    """
    api = course.api(
        GenerateFeedback={
            "exporter_class": FeedbackExporter,
            "preprocessors": [
                GetGrades,
                HideHiddenTests,
                RemoveGraderCode,
                SafeImageMetadata,
                CSSHTMLHeaderPreprocessor,
            ],
        },
        HideHiddenTests={"show_hidden": show_hidden},
        RemoveGraderCode={"enabled": not show_hidden},
        HTMLExporter={"sanitize_html": True},
        # Only the page: files the submission wrote while it ran may hold the grader's code.
        CourseDirectory={"ignore": ["*"]},
    )
    recorded = outcomes.read_all(course.db_url)
    pages, missing = [], {}
    for student in course.submitted_students(lesson):
        folder = course.root / "feedback" / student / lesson
        reason = _reason_for_none(course, lesson, student, recorded)
        if reason is None:
            result = api.generate_feedback(lesson, student)
            if not result["success"]:
                reason = f"nbgrader could not render it: {_cause(result)}"
        if reason is None:
            pages.append(folder / f"{lesson}.html")
        else:
            missing[student] = reason
            shutil.rmtree(folder, ignore_errors=True)  # an earlier page no longer tells the truth
    return FeedbackRun(pages, missing)


def _reason_for_none(course: Course, lesson: str, student: str, recorded: dict) -> str | None:
    """Why `student` can get no feedback for `lesson`, or None if they can."""
    outcome, detail, _ = recorded.get((lesson, student), (Outcome.NOT_GRADED, "not graded yet", ""))
    if not Outcome(outcome).ran:
        return f"{outcome} ({detail})" if detail else outcome
    if student != student.strip() or any(char in student for char in "*?["):
        return "nbgrader cannot look up a student id with a space at either end, or * ? ["
    if not (course.root / "autograded" / student / lesson / f"{lesson}.ipynb").is_file():
        return "no autograded notebook"
    return None


def _cause(result: dict) -> str:
    """The exception behind a failed nbgrader run, not nbgrader's own 'see above'."""
    found = CAUSE.findall(result.get("log") or "") + CAUSE.findall(result.get("error") or "")
    causes = [f"{name}: {text}" for name, text in found]
    real = [cause for cause in causes if not cause.startswith("NbGraderException")]
    return (real or causes or ["no reason given"])[0]
