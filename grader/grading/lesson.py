"""Grade every submission of a lesson and record one outcome per submission.

Each submission ends with an outcome: graded, or why not (missing notebook, malformed, timed
out, memory limit, kernel died, …). A run that is killed can be started again: submissions whose
outcome is recorded for their current files are not graded twice.
"""

import atexit
import contextlib
import hashlib
import multiprocessing
import multiprocessing.pool
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from grader.course import nbgrader_api, nbgrader_config
from grader.grading import outcomes, submission_check
from grader.grading.database import share_engines_with_nbgrader
from grader.grading.nbgrader_steps import SANITIZE
from grader.sandbox.isolation import Limits

ENGINES = ("fast", "nbgrader")


@dataclass(frozen=True)
class Result:
    """One submission's outcome: its score, or why it has none."""

    student: str
    lesson: str
    score: float
    max_score: float
    outcome: str
    detail: str = ""


def submitted_students(course_dir: Path, lesson: str) -> list[str]:
    """The students with a submission folder for `lesson`, sorted."""
    root = Path(course_dir) / "submitted"
    return sorted(p.parent.name for p in root.glob(f"*/{lesson}") if p.is_dir())


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


def _config(course_dir: Path, limits: Limits):
    return nbgrader_config(
        course_dir,
        Autograde={"sanitize_preprocessors": SANITIZE},
        Execute={"timeout": int(limits.cell_seconds)},
    )


def _zero(api, lesson: str, student: str) -> None:
    """Enter a submission that could not be run, with every grade 0."""
    with api.gradebook as gb:
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(lesson, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
        gb.db.commit()


_WORKERS: dict[int, object] = {}  # this process's warm sandbox and reference server, by pid


def _workers(limits: Limits):
    """This process's warm processes, started with `limits` (restarted if they differ)."""
    from grader.grading.submission import Workers
    from grader.judging.reference import ReferenceServer
    from grader.sandbox.client import Sandbox

    workers = _WORKERS.get(os.getpid())
    if workers is None or workers.sandbox.limits != limits:
        if workers is not None:
            workers.sandbox.stop()
        references = workers.references if workers else ReferenceServer()
        workers = _WORKERS[os.getpid()] = Workers(Sandbox(limits), references)
        atexit.register(workers.stop)
    return workers


def grade_one(task: tuple) -> tuple[str, str, str]:
    """Grade one submission; return (student, outcome, detail). Never raises: whatever goes
    wrong is recorded as this submission's outcome, and the class goes on."""
    course_dir, lesson, student, engine, limits = task
    try:
        return _grade_one(course_dir, lesson, student, engine, limits)
    except Exception as error:
        detail = f"the grader could not read it ({type(error).__name__}: {str(error)[:200]})"
        with contextlib.suppress(Exception):
            api = nbgrader_api(_config(course_dir, limits))
            _zero(api, lesson, student)
            outcomes.record(api.coursedir.db_url, lesson, student, "not graded", detail, "")
        return student, "not graded", detail


def _grade_one(course_dir, lesson: str, student: str, engine: str, limits: Limits):
    share_engines_with_nbgrader()
    folder = Path(course_dir) / "submitted" / student / lesson
    api = nbgrader_api(_config(course_dir, limits))
    stamp = fingerprint(folder)
    found = submission_check.problem(folder, lesson)
    if found is not None:
        outcome, detail = found
        _zero(api, lesson, student)
    else:
        outcome, detail = _run(api, lesson, student, engine, limits)
        notes = [detail]
        extra = submission_check.extra_notebooks(folder, lesson)
        if extra:
            notes.append(f"not graded: {', '.join(extra)}")
        with api.gradebook as gb:
            wanted = [c.name for c in gb.find_notebook(lesson, lesson).grade_cells]
        deleted = submission_check.deleted_tests(folder, lesson, wanted)
        if deleted:
            notes.append(f"deleted test cells score 0: {', '.join(deleted)}")
        detail = "; ".join(filter(None, notes))
    outcomes.record(api.coursedir.db_url, lesson, student, outcome, detail, stamp)
    return student, outcome, detail


def _run(api, lesson: str, student: str, engine: str, limits: Limits) -> tuple[str, str]:
    if engine == "fast":
        from grader.grading.submission import autograde_submission

        try:
            outcome, detail = autograde_submission(
                api.coursedir, api.config, lesson, student, _workers(limits)
            )
        except Exception as error:  # recorded as the outcome: one submission never stops a class
            _zero(api, lesson, student)
            return "not graded", f"{type(error).__name__}: {error}"
        return outcome, "; ".join(filter(None, [detail, _lateness(api, lesson, student)]))
    result = api.autograde(lesson, student)
    if not result["success"]:
        _zero(api, lesson, student)
        return "not graded", _last_line(result.get("error") or result.get("log"))
    return "graded", _lateness(api, lesson, student)


def autograde(
    course_dir: Path,
    lesson: str,
    students: list[str] | None = None,
    *,
    engine: str = "fast",
    jobs: int | None = None,
    limits: Limits | None = None,
    force: bool = False,
    progress: bool = False,
) -> list[Result]:
    """Grade each student's submission of `lesson`; a failure is recorded, never raised.

    Without `force`, a submission whose outcome is already recorded for its current files is
    not graded again, so a run that was killed can simply be started again.
    """
    if engine not in ENGINES:
        raise ValueError(f"no such engine: {engine} (choose from {', '.join(ENGINES)})")
    limits = limits or Limits()
    chosen = students or submitted_students(course_dir, lesson)
    db_url = nbgrader_api(nbgrader_config(course_dir)).coursedir.db_url
    recorded = outcomes.read_all(db_url)
    todo = [
        s
        for s in chosen
        if force
        or recorded.get((lesson, s), ("", "", ""))[2]
        != fingerprint(Path(course_dir) / "submitted" / s / lesson)
    ]
    tasks = [(Path(course_dir), lesson, s, engine, limits) for s in todo]
    jobs = max(1, jobs or os.cpu_count() or 1)
    bar = tqdm(total=len(tasks), desc=lesson, unit="nb", disable=not progress, file=sys.stderr)
    with bar:
        if jobs == 1 or len(tasks) <= 1:
            for task in tasks:
                grade_one(task)
                bar.update()
        else:
            for _ in _pool(jobs).imap_unordered(grade_one, tasks):
                bar.update()
    return scores_of(course_dir, lesson, chosen)


_POOLS: dict[int, multiprocessing.pool.Pool] = {}


def _pool(jobs: int):
    """Worker processes kept for the life of this process: their warm sandboxes are reused."""
    if jobs not in _POOLS:
        _POOLS[jobs] = multiprocessing.get_context("fork").Pool(jobs)
        atexit.register(_POOLS[jobs].terminate)
    return _POOLS[jobs]


def scores_of(course_dir: Path, lesson: str, students: list[str]) -> list[Result]:
    """The students' scores and recorded outcomes, read from the course's gradebook."""
    api = nbgrader_api(nbgrader_config(course_dir))
    recorded = outcomes.read_all(api.coursedir.db_url)
    results = []
    with api.gradebook as gb:
        max_score = gb.find_assignment(lesson).max_score
        scores = {s.student.id: s.score for s in gb.find_assignment(lesson).submissions}
        for student in students:
            outcome, detail, _ = recorded.get(
                (lesson, student), ("not graded", "no grading run recorded", "")
            )
            results.append(
                Result(student, lesson, scores.get(student, 0.0), max_score, outcome, detail)
            )
    return results


def _lateness(api, lesson: str, student: str) -> str:
    with api.gradebook as gb:
        seconds = gb.find_submission(lesson, student).total_seconds_late
    return f"submitted {seconds / 3600:.1f} h late" if seconds > 0 else ""


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "nbgrader gave no reason"
