"""Autograde one submission the way `nbgrader autograde` does, with less overhead around it.

nbgrader's converter spends more time on its own machinery (an nbconvert export per step, a
database commit per cell) than a warm sandbox spends running a lesson. This path applies the
same nbgrader preprocessors in the same order, runs the cells in the sandbox, and writes the
submission's grades and comments to the gradebook in one transaction. The equivalence test
grades the example class both ways and requires identical grades.
"""

import shutil
from fnmatch import fnmatch
from pathlib import Path

import nbformat
from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.plugins import LateSubmissionPlugin

from grader.engine import LAST_RUN, SandboxedExecute
from grader.judge import JudgeVerdicts
from grader.nbgrader_steps import AFTER_RUN, SANITIZE


def autograde_submission(
    coursedir, config, lesson: str, student: str, references: dict | None
) -> tuple[str, str]:
    """Grade `student`'s `lesson` into autograded/ and the gradebook; return (outcome, detail).

    `references` are the solution's observations (`grader.reference`) that the test cells'
    verdicts are judged against; a test without them keeps the verdict of its own run.
    """
    source = Path(coursedir.format_path(coursedir.submitted_directory, student, lesson))
    target = Path(coursedir.format_path(coursedir.autograded_directory, student, lesson))
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    for extra in Path(coursedir.format_path(coursedir.source_directory, ".", lesson)).iterdir():
        ignored = any(fnmatch(extra.name, pattern) for pattern in coursedir.ignore)
        if extra.is_file() and extra.suffix != ".ipynb" and not ignored:
            shutil.copy(extra, target / extra.name)
    timestamp = coursedir.get_existing_timestamp(str(source))
    path = target / f"{lesson}.ipynb"
    nb = nbformat.read(path, as_version=4)
    resources = {
        "nbgrader": {
            "notebook": lesson,
            "assignment": lesson,
            "student": student,
            "db_url": coursedir.db_url,
        },
        "metadata": {"path": str(target)},
        "unique_key": lesson,
        "grader_references": references,
    }
    for step in [*SANITIZE, SandboxedExecute, JudgeVerdicts, *AFTER_RUN]:
        nb, resources = step(config=config)(nb, resources)
    _save_grades(coursedir.db_url, nb, lesson, student, timestamp, config)
    nbformat.write(nb, path)
    unjudged = resources.get("unjudged_tests")
    notes = [LAST_RUN.get("detail", "")]
    if unjudged:
        notes.append(f"judged inside the submission, no probe: {', '.join(unjudged)}")
    return LAST_RUN.get("outcome", "graded"), "; ".join(filter(None, notes))


def _save_grades(db_url, nb, lesson, student, timestamp, config) -> None:
    """nbgrader's SaveAutoGrades and AssignLatePenalties, in a single transaction."""
    with Gradebook(db_url) as gb:
        gb.update_or_create_student(student)
        extra = {"timestamp": timestamp} if timestamp else {}
        submission = gb.update_or_create_submission(lesson, student, **extra)
        notebook = gb.find_submission_notebook(lesson, lesson, student)
        grades = {g.name: g for g in notebook.grades}
        comments = {c.name: c for c in notebook.comments}
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if utils.is_grade(cell) and grade_id in grades:
                grade = grades[grade_id]
                grade.auto_score, _ = utils.determine_grade(cell)
                grade.needs_manual_grade = (
                    grade.manual_score is not None or grade.auto_score is None
                )
            if (utils.is_solution(cell) or utils.is_task(cell)) and grade_id in comments:
                unchanged = cell.metadata.nbgrader.get("checksum") == utils.compute_checksum(cell)
                no_response = unchanged and not utils.is_task(cell)
                comments[grade_id].auto_comment = "No response." if no_response else None
        notebook.late_submission_penalty = None
        if submission.total_seconds_late > 0:
            penalty = LateSubmissionPlugin(config=config).late_submission_penalty(
                student, notebook.score, submission.total_seconds_late
            )
            if penalty is not None:
                notebook.late_submission_penalty = min(penalty, notebook.score)
        gb.db.commit()
