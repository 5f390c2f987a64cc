"""Autograde one submission the way `nbgrader autograde` does, with less overhead around it.

nbgrader's converter spends more time on its own machinery (an nbconvert export per step, a
database commit per cell) than a warm sandbox spends running a lesson. This path applies the
same nbgrader preprocessors in the same order, runs the cells in the sandbox, has the judge score
every test cell, and writes the submission's grades and comments to the gradebook in one
transaction. The equivalence test grades the example class both ways and requires identical
grades.
"""

import functools
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

import nbformat
from nbformat.v4.nbjson import BytesEncoder
from nbformat.v4.rwbase import split_lines, strip_transient
from sqlalchemy import Connection

from grader.cells import autograded_tests, grade_id, is_test, shown_name
from grader.course_keys import variant_of
from grader.grading.gradebook import Saved, save_grades
from grader.grading.nbgrader_steps import AFTER_RUN, ReleasedLessons, released_source, sanitize
from grader.grading.run_outputs import apply_run, folder_files
from grader.grading.submission_check import open_no_follow, regular_files
from grader.grading.tasks import Ahead
from grader.judging import how
from grader.judging.own_tasks import OwnTasks, own_references
from grader.judging.reference import Seeds, probes_file
from grader.judging.rules import judge_source
from grader.judging.verdict import TASK_KEY, VERDICT_KEY, judge_tests
from grader.outcome import Outcome
from grader.safe_output.autograded import inert_notebook, instructors_markdown
from grader.sandbox.outside.client import Sandbox
from grader.submission_seeds import functions_key, inputs_seed
from grader.timings import Timings
from grader.variants import GRADING_VARIABLE


@dataclass
class Workers:
    """What one grading process keeps from one submission to the next: the sandbox, its seeds
    and a reference server that observes the solution on them (its own, or a channel of one it
    shares), and what nbgrader's steps read of each lesson in the gradebook."""

    sandbox: Sandbox
    seeds: Seeds
    released: ReleasedLessons = field(default_factory=ReleasedLessons)

    def stop(self) -> None:
        """Stop both."""
        self.sandbox.stop()
        self.seeds.stop()


@dataclass(frozen=True)
class GradedRun:
    """How one submission's run ended, and which test cells had no probe to judge them."""

    outcome: Outcome
    detail: str
    unjudged: tuple[str, ...]
    review: dict[str, str]  # answer cells that reach for internals, and how (grader.judging.how)
    timings: Timings  # seconds per step of this submission's grading
    seconds_late: float  # as the gradebook has it
    grade_cells: tuple[str, ...]  # every graded cell the lesson has, in the gradebook
    present: frozenset[str]  # the grade ids the submission's notebook has

    def deleted(self) -> tuple[str, ...]:
        """The lesson's graded cells the student deleted."""
        return tuple(name for name in self.grade_cells if name not in self.present)


def copy_submission(coursedir, lesson: str, student: str, notebooks: list[str]) -> Path:
    """Copy `student`'s submission of `lesson` into autograded/, then the assignment's own files
    over it, as nbgrader's autograde does (every file of the submission and of the source
    folder, in subfolders too, but ignored files and notebooks): the folder each notebook runs
    in. Of the submission's notebooks, only `notebooks` (those to run) are copied: another,
    or one that cannot be read, would keep its feedback page from being built."""
    from nbgrader.utils import find_all_files

    source = Path(coursedir.format_path(coursedir.submitted_directory, student, lesson))
    target = Path(coursedir.format_path(coursedir.autograded_directory, student, lesson))
    release = Path(coursedir.format_path(coursedir.source_directory, ".", lesson))
    if target.exists():
        shutil.rmtree(target)
    running = {f"{name}.ipynb" for name in notebooks}

    def wanted(relative: Path) -> bool:
        ignored = any(
            fnmatch(part, pattern) for part in relative.parts for pattern in coursedir.ignore
        )
        notebook = relative.suffix == ".ipynb"
        return not ignored and (not notebook or str(relative) in running)

    _copy_regular_files(source, target, wanted)
    for extra in find_all_files(str(release), [*coursedir.ignore, "*.ipynb"]):
        copy = target / Path(extra).relative_to(release)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.unlink(missing_ok=True)
        shutil.copy(extra, copy)
    return target


def autograde_notebook(
    coursedir,
    config,
    lesson: str,
    submitted,
    notebook: str,
    student: str,
    workers: Workers,
    ahead: Ahead,
    record: Callable[[Connection, GradedRun], None],
    more: bool = False,
) -> GradedRun:
    """Grade `student`'s `notebook` of `lesson` (`submitted`: as read and checked, a copy of it
    in autograded/ already, `copy_submission`) into that folder and the gradebook. Where `more`
    notebooks of the assignment run after it, the files its run left go into that folder for
    them, as in nbgrader's one folder per submission.

    The submission's probes draw their inputs from a seed drawn for it alone, and the reference
    server gives the solution's observations for the same seed, asked for in batches sized to
    what is `ahead`. The sandbox and the reference server prepare the lesson graded next
    meanwhile. `record` writes the
    run's outcome in the grades' transaction; the autograded notebook is written before it
    commits, so that a grading whose outcome is recorded has its notebook.
    """
    timings = Timings()
    source = Path(coursedir.format_path(coursedir.submitted_directory, student, lesson))
    target = Path(coursedir.format_path(coursedir.autograded_directory, student, lesson))
    release = Path(coursedir.format_path(coursedir.source_directory, ".", lesson))
    timestamp = coursedir.get_existing_timestamp(str(source))
    path = target / f"{notebook}.ipynb"
    resources = {
        "nbgrader": {
            "notebook": notebook,
            "assignment": lesson,
            "student": student,
            "db_url": coursedir.db_url,
        },
        "metadata": {"path": str(target)},
        "unique_key": notebook,
    }
    with timings.step("nbgrader steps"):
        source_nb = release / f"{notebook}.ipynb"
        released = workers.released.get(coursedir.db_url, lesson, notebook, source_nb)
        nb, resources = sanitize(submitted, resources, config, released)
    probes, reading, seed, oracle = None, how.Reading({}, {}), None, None
    judged = notebook == lesson and probes_file(lesson).is_file()  # a lesson's probes
    variant = variant_of(config, Path(coursedir.root), lesson, student) if judged else None
    if judged:
        with timings.step("reference"):
            seed = workers.seeds.draw(lesson, ahead.next_lesson, ahead.share)  # observed meanwhile
        at = {str(i): gid for i, gid in autograded_tests(nb).items()}
        # its process knows the seed of its inputs; its drawn functions stay here
        source = probes_file(lesson).read_text()
        probes = {"source": source, "seed": inputs_seed(seed), "at": at}
        from grader.function_oracle import FunctionOracle  # torch: where a lesson has probes

        oracle = FunctionOracle(functions_key(seed))
        with timings.step("judge"):
            lesson_nb = _source_notebook(source_nb)
            reading = judge_source(nb, lesson_nb, probes["source"], seed, variant=variant)
    own = OwnTasks.of(nb, variant, probes["source"]) if variant is not None else None
    if own is not None:
        reading = _own_tasks_said(own, reading)
    cells = [(i, _runs(c, probes, config)) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    files = folder_files(target, path.name)
    # The kit's lessons share their first cells' run, made without the folder's modules
    shared = notebook == lesson and not any(name.endswith(".py") for name in files)
    prefix = lesson if shared else None
    # The cells draw the submitting student's tasks, whatever key the notebook sets
    environment = {GRADING_VARIABLE: variant.key} if variant is not None else None
    report = workers.sandbox.run(
        cells,
        files,
        probes,
        prefix,
        ahead.next_lesson,
        files_back=more,
        oracle=oracle,
        environment=environment,
    )
    timings.update(report.timings)
    if report.outcome == Outcome.NOT_GRADED:  # its report broke the channel's rules
        raise RunRefused(_detail(report, nb))
    with timings.step("copy"):
        keep_files(target, report.files, coursedir.ignore)
    if report.files_left_out:
        left = f"{report.files_left_out} files it left were over the limits and not kept"
        report.detail = f"{report.detail}; {left}" if report.detail else left
    with timings.step("reference"):
        references = workers.seeds.observations(lesson, seed) if probes else {}
        if own is not None:  # the solution for the student's own tasks
            references = {**references, **own_references(probes["source"], own, seed)}
    if oracle is not None:  # what the probes drew, as this process answered it, comes first
        from grader.function_oracle import with_drawn

        drawn = {test: with_drawn(items, oracle, test) for test, items in report.probes.items()}
        report.probes = drawn
    with timings.step("nbgrader steps"):
        apply_run(nb, report, config)
        for step in AFTER_RUN:
            nb, resources = step(config=config)(nb, resources)
    with timings.step("judge"):
        verdicts = judge_tests(
            nb,
            references,
            report.probes,
            reading.problems,
            judged=probes is not None,
            read_first=frozenset(own.tests if own else ()),
        )
        _say_timed_out(nb, report, workers.sandbox.limits.cell_seconds)
        if own is not None:
            _show_own_tasks(nb, own)
    with timings.step("nbgrader steps"):
        lesson_markdown = instructors_markdown(_source_notebook(source_nb))
        _write_made(inert_notebook(nb, lesson_markdown), path)  # what the formgrader shows
    unjudged = tuple(sorted(gid for gid in verdicts if probes and gid not in references))
    present = frozenset(filter(None, map(grade_id, nb.cells)))

    def graded(saved: Saved) -> GradedRun:
        return GradedRun(
            report.outcome,
            _detail(report, nb),
            unjudged,
            reading.flags,
            timings,
            saved.seconds_late,
            saved.grade_cells,
            present,
        )

    with timings.step("gradebook"):
        saved = save_grades(
            coursedir.db_url,
            released,
            student,
            timestamp,
            nb,
            verdicts,
            config,
            reading.flags,
            lambda db, saved: record(db, graded(saved)),
        )
    return graded(saved)


def _own_tasks_said(own: OwnTasks, reading: how.Reading) -> how.Reading:
    """The reading, with a notebook worked under another key than the submitting student's said
    to the instructor (a review flag) and, where an exercise of their own lost its points, to
    the student."""
    if own.said is None or not own.tests:
        return reading
    problems = dict(reading.problems)
    for test in own.tests:
        if test in problems:
            problems[test] = f"{own.said}. {problems[test]}"
    first_answer = own.variant.family(next(iter(own.tests.values()))).answer_cell
    return how.Reading(problems, {**reading.flags, first_answer: own.said})


def _show_own_tasks(nb, own: OwnTasks) -> None:
    """Each test of an exercise of the student's own keeps, for the feedback page, the task it
    was graded against (and whose key the notebook was worked under, if another's); the key cell
    shows the instructor whose tasks those are (its run, shared by the lesson's submissions, says
    none)."""
    for index, test in autograded_tests(nb).items():
        if test in own.tests:
            shown = own.variant.shown(own.tests[test])
            nb.cells[index].metadata[TASK_KEY] = f"{shown} ({own.said})" if own.said else shown
    whose = f"Graded with the tasks of {own.variant.student}, who submitted this notebook.\n"
    for cell in nb.cells:
        if cell.cell_type == "code" and "use_course_key" in cell.source:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=whose)]


class RunRefused(Exception):
    """A run whose report broke the channel's rules (the submission wrote into it, or sent what
    the grader could not read): the submission gets the outcome `not graded` and no points."""


def keep_files(folder: Path, files: dict[str, bytes], ignore: list[str]) -> None:
    """Write the files a run left (paths checked safe and inside `folder` by the report's
    reader) into `folder`, but no notebook (each is graded as submitted), no timestamp.txt
    (nbgrader's record of the submission) and nothing `ignore` (the course's patterns) names."""
    root = folder.resolve()
    for name, data in files.items():
        path = (folder / name).resolve()
        if path.suffix == ".ipynb" or not path.is_relative_to(root) or path == root:
            continue
        parts = path.relative_to(root).parts
        if parts == ("timestamp.txt",) or any(fnmatch(p, i) for p in parts for i in ignore):
            continue
        try:  # a name that clashes with a folder, or a folder with a file, is not kept
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        except OSError:
            continue
        with open(fd, "wb") as handle:
            handle.write(data)


def _detail(report, nb) -> str:
    """The run's detail, naming the cell as the student finds it in their notebook, then the
    cells that timed out while the notebook went on."""
    detail = report.detail
    if report.where is not None and 0 <= report.where < len(nb.cells):
        detail = f"{detail} in {shown_name(nb, report.where)}"
    stopped = [shown_name(nb, i) for i in report.interrupted if 0 <= i < len(nb.cells)]
    if stopped:
        timed_out = f"timed out (interrupted at the cell time limit): {', '.join(stopped)}"
        detail = f"{detail}; {timed_out}" if detail else timed_out
    return detail


def _say_timed_out(nb, report, seconds: float) -> None:
    """A test cell interrupted at the cell time limit says so on the feedback page (the judge's
    words say only that it failed)."""
    for index in report.interrupted:
        cell = nb.cells[index] if 0 <= index < len(nb.cells) else None
        if cell is not None and is_test(cell):
            cell.metadata[VERDICT_KEY] = (
                f"This test timed out when your notebook ran at grading time: it ran over the "
                f"time limit of {seconds:g} s per cell and was interrupted, as nbgrader "
                "interrupts a cell that runs too long. Run it in your notebook to see why."
            )


def _source_notebook(source: Path):
    """The lesson's source notebook, the instructor's (read once per change; not to be changed)."""
    return _source_notebook_at(str(source), source.stat().st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _source_notebook_at(path: str, _mtime: int):
    return nbformat.read(path, as_version=4)


def _runs(cell, probes, config) -> str:
    """What the submission's process runs of a cell. Where probes judge the lesson, a test cell
    runs as released: its hidden tests would put the grader's checks and expected values in the
    student's hands, and the probes and the reference decide outside instead."""
    return released_source(cell, config) if probes and is_test(cell) else cell.source


COPY_LIMIT, COPY_COUNT = 128 * 1024**2, 1000


def _write_made(nb, path: Path) -> None:
    """Write a notebook made for writing (changed on the way: its text split into lines) as
    `nbformat.write` does, without checking it against the schema a second time or copying it
    first (together, a third of the grading process's own time per notebook): it was checked
    when read, and every output in it rebuilt."""
    nb = strip_transient(split_lines(nb))
    options = {"indent": 1, "sort_keys": True, "separators": (",", ": "), "ensure_ascii": False}
    text = json.dumps(nb, cls=BytesEncoder, **options)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def _copy_regular_files(source: Path, target: Path, wanted: Callable[[Path], bool]) -> None:
    """Copy the submission's regular files that are `wanted` (given their path inside it; no
    link followed, no device read), up to limits."""
    target.mkdir(parents=True)
    total = 0
    chosen = [path for path in regular_files(source) if wanted(path.relative_to(source))]
    for path in chosen[:COPY_COUNT]:
        total += path.lstat().st_size
        if total > COPY_LIMIT:
            break
        copy = target / path.relative_to(source)
        copy.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "rb", opener=open_no_follow) as read, open(copy, "wb") as write:
            shutil.copyfileobj(read, write)
        shutil.copystat(path, copy, follow_symlinks=False)
