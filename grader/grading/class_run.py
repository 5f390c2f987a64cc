"""Grade a class: every submission of one or more lessons, in worker processes that share the
warm sandbox and reference server, recording one outcome per submission.

Each submission ends with an outcome: graded, or why not (missing notebook, malformed, timed
out, memory limit, kernel died, …). A run that is killed can be started again: submissions whose
outcome is recorded for their current files are not graded twice.
"""

import contextlib
import gc
import hashlib
import multiprocessing
import os
import queue
import signal
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from tqdm import tqdm

from grader.course import Course
from grader.course_keys import read_secret, submitters_key, varied_lessons
from grader.forking import collector_paused
from grader.grading import outcomes, submission_check
from grader.grading.course_lock import grading_lock
from grader.grading.database import index_rows_by_notebook, share_engines_with_nbgrader
from grader.grading.nbgrader_steps import SANITIZE
from grader.grading.results import Result, scores_of
from grader.grading.tasks import GradingEngine, GradingTask, with_what_comes_after
from grader.judging.reference import probes_file
from grader.outcome import Outcome, nbgrader_failure
from grader.sandbox.outside.isolation import Limits
from grader.timings import Timings


@dataclass(frozen=True)
class SubmissionReport:
    """What grading one submission came to (its points are in the gradebook)."""

    student: str
    lesson: str
    outcome: Outcome
    detail: str = ""
    unjudged: tuple[str, ...] = ()  # test cells with no probe, scored 0
    lateness: str = ""
    not_graded: tuple[str, ...] = ()  # notebooks beside the lesson's, not graded
    deleted_tests: tuple[str, ...] = ()  # test cells the student deleted, scored 0
    timings: Timings = field(default_factory=Timings, compare=False)  # seconds per step

    def notes(self) -> str:
        """Everything the instructor should know, in one line."""
        return "; ".join(
            filter(
                None,
                [
                    self.detail,
                    self.unjudged and f"no probe, scored 0: {', '.join(self.unjudged)}",
                    self.lateness,
                    self.not_graded and f"not graded: {', '.join(self.not_graded)}",
                    self.deleted_tests
                    and f"deleted test cells score 0: {', '.join(self.deleted_tests)}",
                ],
            )
        )


def fingerprint(folder: Path) -> str:
    """A hash of every regular file in a submission folder (links are not followed), to notice
    a changed submission."""
    digest = hashlib.sha256()
    for path in submission_check.regular_files(Path(folder)):
        name = os.fsencode(path.relative_to(folder))
        digest.update(len(name).to_bytes(8, "big") + name + path.lstat().st_size.to_bytes(8, "big"))
        with open(path, "rb", opener=submission_check.open_no_follow) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _api(task: GradingTask):
    return task.course.api(
        Autograde={"sanitize_preprocessors": SANITIZE},
        Execute={"timeout": int(task.limits.cell_seconds)},
    )


def _zero(api, lesson: str, student: str, notebooks: list[str] | None = None) -> None:
    """Enter a submission that could not be run (or those of its `notebooks` that could not),
    with every grade 0."""
    with api.gradebook as gb:
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(lesson, student)
        for notebook in submission.notebooks:
            if notebooks is not None and notebook.name not in notebooks:
                continue
            for grade in notebook.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
        gb.db.commit()


class GradingInterrupted(KeyboardInterrupt):
    """Grading stopped by Ctrl-C: what was graded is kept, and a new run goes on from there."""

    def __init__(self, done: int, total: int):
        super().__init__(
            f"interrupted after grading {done} of {total} submissions; they are kept:"
            " run the same command again to continue"
        )


class WarmProcesses:
    """The fast engine's warm processes in one grading process: a sandbox template (`sandbox`,
    a channel of a shared one, or else one of its own) and a reference server (`references`,
    likewise), started on first use and kept for every submission after."""

    def __init__(self, limits: Limits, references=None, sandbox=None):
        self.limits = limits
        self.references = references
        self.sandbox = sandbox
        self._started = None

    def get(self):
        """The running pair (a `grading.submission.Workers`)."""
        if self._started is None:
            from grader.grading.submission import Workers
            from grader.judging.reference import ReferenceServer, Seeds
            from grader.sandbox.outside.client import Sandbox

            references = self.references or ReferenceServer()
            self._started = Workers(Sandbox(self.limits, self.sandbox), Seeds(references))
        return self._started

    def stop(self) -> None:
        """Stop them, if they were started."""
        if self._started is not None:
            self._started.stop()
            self._started = None


def grade_one(task: GradingTask, warm: WarmProcesses) -> SubmissionReport:
    """Grade one submission. Never raises: whatever goes wrong is recorded as this submission's
    outcome, and the class goes on."""
    try:
        return _grade_one(task, warm)
    except Exception as error:
        detail = f"the grader could not read it ({type(error).__name__}: {str(error)[:200]})"
        with contextlib.suppress(Exception):
            _zero(_api(task), task.lesson, task.student)
            outcomes.record(
                task.course.db_url, task.lesson, task.student, Outcome.NOT_GRADED, detail, ""
            )
        return SubmissionReport(task.student, task.lesson, Outcome.NOT_GRADED, detail)


def _grade_one(task: GradingTask, warm: WarmProcesses) -> SubmissionReport:
    share_engines_with_nbgrader()
    folder = task.course.submission(task.student, task.lesson)
    timings = Timings()
    with timings.step("bookkeeping"):
        api = _api(task)
        stamp = fingerprint(folder)
        notebooks = task.course.notebooks(task.lesson)
        found = {name: submission_check.checked(folder, name) for name in notebooks}
        problems = {name: why for name, (why, _) in found.items() if why is not None}
        read = {name: nb for name, (_, nb) in found.items() if nb is not None}
    fast = task.engine == GradingEngine.FAST
    if len(problems) < len(notebooks) and (fast or not _unreadable(problems)):
        if fast:  # its outcome is recorded with its grades
            report = _run_fast(api, task, warm, stamp, notebooks, problems, read)
        else:
            report = _run_stock(api, task, notebooks, problems)
            with timings.step("bookkeeping"):
                _record(task, report, stamp)
    else:  # nothing can run: a missing or unreadable notebook costs the submission its points
        report = SubmissionReport(task.student, task.lesson, *_combined(notebooks, problems))
        _zero(api, task.lesson, task.student)
        with timings.step("bookkeeping"):
            _record(task, report, stamp)
    report.timings.update(timings)  # the run's own steps are in already
    return report


def _unreadable(problems: dict[str, tuple[Outcome, str]]) -> bool:
    """Whether a notebook is there but cannot be read (stock nbgrader stops at it; a missing
    one it scores 0 and grades the others)."""
    return any(outcome != Outcome.MISSING for outcome, _ in problems.values())


def _combined(notebooks: list[str], by_notebook: dict) -> tuple[Outcome, str]:
    """A submission's outcome from its notebooks' (name -> (outcome, detail)): the first that is
    neither graded nor missing, else graded if one was, else missing. Where the assignment has
    several notebooks, details name theirs, and one not submitted is said to score 0."""
    if len(notebooks) == 1:
        return by_notebook.get(notebooks[0], (Outcome.GRADED, ""))
    found = [(name, *by_notebook.get(name, (Outcome.GRADED, ""))) for name in notebooks]
    details = [
        f"{name}.ipynb not submitted, scored 0"
        if outcome == Outcome.MISSING
        else f"{name}.ipynb: {detail}"
        for name, outcome, detail in found
        if detail
    ]
    outcomes_found = [outcome for _, outcome, _ in found]
    failed = [o for o in outcomes_found if o not in (Outcome.GRADED, Outcome.MISSING)]
    ran = Outcome.GRADED in outcomes_found
    return (failed[0] if failed else Outcome.GRADED if ran else Outcome.MISSING), "; ".join(details)


def _record(task: GradingTask, report: SubmissionReport, stamp: str) -> None:
    outcomes.record(
        task.course.db_url, task.lesson, task.student, report.outcome, report.notes(), stamp
    )


def _run_fast(
    api,
    task: GradingTask,
    warm: WarmProcesses,
    stamp: str,
    notebooks: list[str],
    problems: dict,
    read: dict,
) -> SubmissionReport:
    """Run and grade each of the submission's notebooks in the sandbox, as nbgrader's autograde
    does (one missing or unreadable scores 0, the others are graded), and record the outcome:
    with the last notebook's grades, in one transaction, or on its own if a run failed. `read`:
    the notebooks that can be graded, as checked (read once)."""
    from grader.grading.submission import RunRefused, autograde_notebook, copy_submission

    lesson, student = task.lesson, task.student
    folder = task.course.submission(student, lesson)
    not_graded = tuple(submission_check.extra_notebooks(folder, notebooks))
    runnable = [name for name in notebooks if name not in problems]
    several = len(notebooks) > 1
    runs, reports = {}, []

    def record(db, run) -> None:
        runs[runnable[-1]] = run
        outcome, detail = _combined(
            notebooks, {**problems, **{n: (r.outcome, r.detail) for n, r in runs.items()}}
        )
        report = SubmissionReport(
            student,
            lesson,
            outcome,
            detail,
            tuple(gid for r in runs.values() for gid in r.unjudged),
            _late(run.seconds_late, task),
            not_graded,
            tuple(
                f"{name}.ipynb: {gid}" if several else gid
                for name, r in runs.items()
                for gid in r.deleted()
            ),
        )
        reports.append(report)
        review = {k: v for r in runs.values() for k, v in r.review.items()}
        outcomes.write(db, lesson, student, report.outcome, report.notes(), stamp, review)

    try:
        started = Timings()
        with started.step("start-up"):
            workers = warm.get()
        with started.step("copy"):
            copy_submission(api.coursedir, lesson, student, runnable)
        if problems:
            _zero(api, lesson, student, list(problems))
        for name in runnable:
            last = name == runnable[-1]
            runs[name] = autograde_notebook(
                api.coursedir,
                api.config,
                lesson,
                read[name],
                name,
                student,
                workers,
                task.ahead if last else replace(task.ahead, next_lesson=None),
                record if last else lambda db, run: None,
                more=not last,
            )
    except Exception as error:  # recorded as the outcome: one submission never stops a class
        _zero(api, lesson, student)
        _inert_copies(api.coursedir, lesson, student, runnable)
        detail = str(error) if isinstance(error, RunRefused) else f"{type(error).__name__}: {error}"
        report = SubmissionReport(student, lesson, Outcome.NOT_GRADED, detail)
        report = replace(report, not_graded=not_graded, deleted_tests=_deleted(api, task, problems))
        _record(task, report, stamp)
        return report
    spent = Timings.summed([*(run.timings for run in runs.values()), started])
    return replace(reports[-1], timings=spent)


def _inert_copies(coursedir, lesson: str, student: str, notebooks: list[str]) -> None:
    """Make inert the notebooks copied into autograded/ for a grading that failed: the
    formgrader renders them on the instructor's origin."""
    from grader.safe_output.autograded import make_inert_in_place

    graded = Path(coursedir.format_path(coursedir.autograded_directory, student, lesson))
    source = Path(coursedir.format_path(coursedir.source_directory, ".", lesson))
    for name in notebooks:
        make_inert_in_place(graded / f"{name}.ipynb", source / f"{name}.ipynb")


def _run_stock(api, task: GradingTask, notebooks: list[str], problems: dict) -> SubmissionReport:
    """Grade the submission with stock `nbgrader autograde`."""
    lesson, student = task.lesson, task.student
    timings = Timings()
    course = task.course
    with (
        timings.step("nbgrader steps"),
        submitters_key(course.config(), course.root, lesson, student),
    ):
        result = api.autograde(lesson, student)
    if result["success"]:
        with api.gradebook as gb:
            late = _late(gb.find_submission(lesson, student).total_seconds_late, task)
        outcome, detail = _combined(notebooks, problems)
        report = SubmissionReport(student, lesson, outcome, detail, lateness=late)
    else:
        _zero(api, lesson, student)
        detail = nbgrader_failure(result)  # e.g. "No such kernel named Python [Root]"
        report = SubmissionReport(student, lesson, Outcome.NOT_GRADED, detail)
    folder = task.course.submission(student, lesson)
    return replace(
        report,
        not_graded=tuple(submission_check.extra_notebooks(folder, notebooks)),
        deleted_tests=_deleted(api, task, problems),
        timings=timings,
    )


def _deleted(api, task: GradingTask, problems: dict) -> tuple[str, ...]:
    """The assignment's graded cells (from the gradebook) missing from the submitted notebooks
    that are there to read (not in `problems`)."""
    folder = task.course.submission(task.student, task.lesson)
    notebooks = task.course.notebooks(task.lesson)
    deleted = []
    with api.gradebook as gb:
        for name in notebooks:
            if name in problems:
                continue
            graded = [c.name for c in gb.find_notebook(name, task.lesson).grade_cells]
            found = submission_check.deleted_tests(folder, name, graded)
            deleted += [f"{name}.ipynb: {gid}" if len(notebooks) > 1 else gid for gid in found]
    return tuple(deleted)


def _grading_worker(tasks, reports, limits: Limits, references, sandbox, index: int) -> None:
    """Worker process `index`: grade tasks from the queue with its channels of the shared
    reference server and of the shared sandbox (`sandbox`, None where it is not shared). Ctrl-C
    is the grading process's to handle: it stops the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()  # what the grading process imported: out of this one's full collections
    for other, channel in enumerate(references.channels):
        if other != index:
            channel.sock.close()
    for other, channel in enumerate(sandbox.channels if sandbox else []):
        if other != index:
            channel.close()
    shared = sandbox.channels[index] if sandbox else None
    warm = WarmProcesses(limits, references.channels[index], shared)
    try:
        for task in iter(tasks.get, None):
            reports.put(grade_one(task, warm))
    finally:
        warm.stop()


class GradingSession:
    """Grading processes kept while several lessons are graded: the sandbox template and the
    reference server they share are started once. Use as a context manager."""

    def __init__(self, limits: Limits, jobs: int | None = None):
        from grader.judging.reference import ReferenceServer

        self.limits = limits
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.warm = WarmProcesses(limits)  # for grading in this process (one job)
        self.references = ReferenceServer(channels=self.jobs)  # for the worker processes
        self.sandbox = None  # likewise, where it can be shared (started with the workers)
        self._workers: list = []
        self._queues = None

    def __enter__(self) -> "GradingSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def grade(self, tasks: list[GradingTask], bar) -> list[SubmissionReport]:
        """Grade every task, in this process or the worker processes; advance `bar` per task."""
        alone = self.jobs == 1 or len(tasks) <= 1
        tasks = with_what_comes_after(tasks, 1 if alone else self.jobs)
        if alone:
            reports = []
            for task in tasks:
                reports.append(grade_one(task, self.warm))
                bar.update()
            return reports
        tasks_queue, reports_queue = self._start_workers(tasks)
        for task in tasks:
            tasks_queue.put(task)
        reports = []
        while len(reports) < len(tasks):
            try:
                reports.append(reports_queue.get(timeout=5))
            except queue.Empty:
                stopped = [w.exitcode for w in self._workers if not w.is_alive()]
                if stopped:
                    raise RuntimeError(
                        f"a grading process stopped (exit code {stopped[0]}); run the command"
                        " again: the submissions graded so far are kept"
                    ) from None
                continue
            bar.update()
        return reports

    def _start_workers(self, tasks: list[GradingTask]):
        if self._queues is None:
            context = multiprocessing.get_context("fork")
            self._queues = context.Queue(), context.Queue()
            shared = self._shared_sandbox()  # its template starts on another core meanwhile
            if any(probes_file(task.lesson).is_file() for task in tasks):
                # the drawn functions' oracle imports torch, and torch.func's transforms
                # torch._dynamo at first use (3 s in all): once here, shared by the workers
                # and by the reference server, forked from here next
                with collector_paused():
                    import torch._dynamo  # noqa: F401

                    import grader.function_oracle  # noqa: F401
            self.references.start()
            for index in range(self.jobs):
                worker = context.Process(
                    target=_grading_worker,
                    args=(*self._queues, self.limits, self.references, shared, index),
                    daemon=True,
                )
                worker.start()
                self._workers.append(worker)
            for channel in shared.channels if shared else []:
                channel.close()  # the workers have theirs
        return self._queues

    def _shared_sandbox(self):
        """Start the sandbox template the workers share, where the protections allow it (each
        worker then waits for its channel at first use); None where each needs its own."""
        from grader.sandbox.outside.client import SandboxProcess

        sandbox = SandboxProcess(self.limits, channels=self.jobs)
        if not sandbox.shareable:
            return None
        sandbox.start(wait=False)
        self.sandbox = sandbox
        return sandbox

    def stop_now(self) -> None:
        """Stop the worker processes at once (Ctrl-C): a submission they were grading has no
        outcome recorded, so the next run grades it."""
        for worker in self._workers:
            worker.kill()
        for worker in self._workers:
            worker.join()
        self._workers, self._queues = [], None

    def close(self) -> None:
        """Stop the worker processes and this process's warm processes."""
        if self._queues is not None:
            for _ in self._workers:
                self._queues[0].put(None)
            for worker in self._workers:
                worker.join(timeout=30)
                if worker.is_alive():
                    worker.kill()
            self._workers, self._queues = [], None
        self.references.stop()
        if self.sandbox is not None:
            self.sandbox.stop()
            self.sandbox = None
        self.warm.stop()


def grade_submissions(
    course: Course,
    lessons: list[str],
    students: list[str] | None = None,
    *,
    engine: GradingEngine | str = GradingEngine.FAST,
    jobs: int | None = None,
    limits: Limits | None = None,
    force: bool = False,
    progress: bool = False,
    session: GradingSession | None = None,
) -> list[SubmissionReport]:
    """Grade each student's submission of each lesson and report on each one graded now.

    Without `force`, a submission whose outcome is already recorded for its current files is
    not graded again, so a run that was killed can simply be started again. Lessons graded in
    one call, or with one `session`, share their warm processes; without a session, one is
    made for this call with `jobs` worker processes (default: one per core).
    """
    engine = GradingEngine(engine)
    if varied_lessons(course.config()) & set(lessons):
        read_secret(course.root)  # SecretMissing, naming the file, before anything is graded
    if engine == GradingEngine.FAST:
        index_rows_by_notebook(course.db_url)
    limits = limits or (session.limits if session else Limits())
    recorded = outcomes.read_all(course.db_url)
    tasks = [
        GradingTask(course, lesson, student, engine, limits)
        for lesson in lessons
        for student in students or course.submitted_students(lesson)
        if force
        or recorded.get((lesson, student), ("", "", ""))[2]
        != fingerprint(course.submission(student, lesson))
    ]
    desc = lessons[0] if len(lessons) == 1 else f"{len(lessons)} lessons"
    bar = tqdm(total=len(tasks), desc=desc, unit="nb", disable=not progress, file=sys.stderr)
    with grading_lock(course), bar, contextlib.ExitStack() as stack:
        if session is None or session.limits != limits:
            session = stack.enter_context(GradingSession(limits, jobs))
        try:
            return session.grade(tasks, bar)
        except KeyboardInterrupt:
            session.stop_now()
            raise GradingInterrupted(bar.n, len(tasks)) from None


def autograde(
    course: Course, lessons: str | list[str], students: list[str] | None = None, **options
) -> list[Result]:
    """Grade the lessons' submissions (see `grade_submissions` for the options); return every
    chosen student's score and outcome, graded now or before, from the gradebook."""
    lessons = [lessons] if isinstance(lessons, str) else list(lessons)
    grade_submissions(course, lessons, students, **options)
    return [
        result
        for lesson in lessons
        for result in scores_of(course, lesson, students or course.submitted_students(lesson))
    ]


def _late(seconds: float, task: GradingTask) -> str:
    """How late the submission is, to the minute, and where that is an estimate, from what."""
    if seconds <= 0:
        return ""
    from grader.grading.finality import late_by
    from grader.lms.time_estimates import estimated_from

    guessed = estimated_from(task.course.root, task.student, task.lesson)
    return f"submitted {late_by(seconds)} late" + (
        f" (estimated from {guessed})" if guessed else ""
    )
