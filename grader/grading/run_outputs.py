"""A sandbox run's results in the notebook: the files beside it that go in, the outputs that come
back, why an unrun test cell did not run, and which cells were stopped at the time limit."""

from pathlib import Path

import nbformat
from nbgrader.preprocessors import Execute

from grader.cells import is_graded
from grader.grading.submission_check import regular_files
from grader.outcome import Outcome
from grader.sandbox.outside.reports import RunReport

FILE_LIMIT = 32 * 1024**2


def folder_files(folder: Path, notebook: str) -> dict[str, bytes]:
    """The regular files beside the notebook in a submission folder, up to FILE_LIMIT bytes."""
    files, total = {}, 0
    for path in regular_files(folder):
        if path.name != notebook:
            total += path.lstat().st_size
            if total <= FILE_LIMIT:
                files[str(path.relative_to(folder))] = path.read_bytes()
    return files


def apply_run(nb, report: RunReport, config) -> None:
    """Put the run's outputs into the notebook as a kernel would; unrun test cells say why. A
    cell interrupted at the cell limit gets, after its KeyboardInterrupt, the error nbgrader's
    Execute adds on a timeout (`Execute.error_on_timeout`, with the course's `config`)."""
    timed_out = Execute(config=config).error_on_timeout if report.interrupted else None
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        done = report.cells.get(index)
        cell.outputs = done["outputs"] if done else []
        cell.execution_count = done["execution_count"] if done else None
        if index in report.interrupted and timed_out:
            cell.outputs.append(nbformat.from_dict({"output_type": "error", **timed_out}))
        graded = is_graded(cell)
        if done is None and report.outcome != Outcome.GRADED and graded:
            cell.outputs = [_not_run(report)]


def _not_run(report: RunReport) -> dict:
    return nbformat.from_dict(
        {
            "output_type": "error",
            "ename": "NotRun",
            "evalue": f"this test did not run: {report.outcome} ({report.detail})",
            "traceback": [],
        }
    )
