"""Per-student HTML feedback pages, each built on its own with a time limit.

The page's content is decided by the feedback steps (grader.safe_output.feedback_steps), the
same that stock `nbgrader generate_feedback` runs in a course made by `grader init`. Each page
is built in a forked child, two at a time: a page that takes too long (a submission can make
its page slow to build) is given up and the others go on.
"""

import html
import multiprocessing
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path

from traitlets.config import Config

from grader.course import Course
from grader.grading import outcomes
from grader.outcome import Outcome
from grader.safe_output.feedback_steps import use_safe_feedback

CAUSE = re.compile(r"^\s*(?:\w+\.)*(\w+(?:Error|Exception)): (.+)$", re.MULTILINE)
PAGE_SECONDS = 60.0
JOBS = 2
TOO_LONG = "building the page took too long"


@dataclass(frozen=True)
class FeedbackRun:
    """The feedback pages written, and why each other submission got none."""

    pages: list[Path]
    missing: dict[str, str]


def generate_feedback(
    course: Course,
    lesson: str,
    *,
    seconds: float = PAGE_SECONDS,
    jobs: int = JOBS,
) -> FeedbackRun:
    """Write feedback/<student>/<lesson>/<notebook>.html, for each notebook of each submission
    that can have a page.

    Each student is done on their own, within `seconds`, so one submission without a readable
    autograded notebook, or whose page is slow to build, never stops the others; it is listed
    with the reason instead.
    """
    steps = Config()
    use_safe_feedback(steps)
    api = course.api(
        GenerateFeedback=dict(steps.GenerateFeedback),
        # Only the page: files the submission wrote while it ran may hold the grader's code.
        CourseDirectory={"ignore": ["*"]},
    )
    recorded = outcomes.read_all(course.db_url)
    students = course.submitted_students(lesson)
    missing = {s: _reason_for_none(course, lesson, s, recorded) for s in students}
    ready = [student for student, reason in missing.items() if reason is None]
    missing.update(_in_children(lambda s: _build(api, lesson, s), ready, jobs, seconds))
    pages = []
    for student in students:
        folder = course.root / "feedback" / student / lesson
        if missing[student] is None:
            graded = course.root / "autograded" / student / lesson
            names = course.notebooks(lesson)
            notebooks = [n for n in names if (graded / f"{n}.ipynb").is_file()]
            pages += [folder / f"{name}.html" for name in notebooks]
            pages += not_handed_in_pages(folder, [n for n in names if n not in notebooks])
            del missing[student]
        else:
            shutil.rmtree(folder, ignore_errors=True)  # an earlier page no longer tells the truth
    return FeedbackRun(pages, missing)


def not_handed_in_pages(folder: Path, notebooks: list[str]) -> list[Path]:
    """A page for each notebook of the assignment the submission did not hold, saying so: a
    student who sees no page for it would not know whether it was graded."""
    pages = []
    for name in notebooks:
        folder.mkdir(parents=True, exist_ok=True)
        page = folder / f"{name}.html"
        shown = html.escape(f"{name}.ipynb")
        page.write_text(
            f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{shown}</title></head>'
            f"<body><h1>{shown}</h1><p>This notebook was not in your submission, so none of "
            "its exercises earned points. If you handed it in, ask your instructor.</p>"
            "</body></html>\n",
            encoding="utf-8",
        )
        pages.append(page)
    return pages


def _build(api, lesson: str, student: str) -> str | None:
    """Build one student's page; why it could not be built, or None."""
    result = api.generate_feedback(lesson, student)
    return None if result["success"] else f"nbgrader could not render it: {_cause(result)}"


def _in_children(
    work: Callable[[str], str | None], items: list[str], jobs: int, seconds: float
) -> dict[str, str | None]:
    """`work(item)` for each item, each in a forked child given `seconds`, `jobs` at a time."""
    fork = multiprocessing.get_context("fork")
    results, running, waiting = {}, {}, list(items)
    while waiting or running:
        while waiting and len(running) < jobs:
            item = waiting.pop(0)
            receive, send = fork.Pipe(duplex=False)
            child = fork.Process(target=_child, args=(work, item, send), daemon=True)
            child.start()
            send.close()
            running[item] = (child, receive, time.monotonic() + seconds)
        soonest = min(deadline for _, _, deadline in running.values())
        wait([receive for _, receive, _ in running.values()], max(0.0, soonest - time.monotonic()))
        for item, (child, receive, deadline) in list(running.items()):
            if receive.poll():
                try:
                    results[item] = receive.recv()
                except EOFError:
                    results[item] = f"building the page failed (exit status {child.exitcode})"
            elif time.monotonic() >= deadline:
                results[item] = TOO_LONG
                child.kill()
            else:
                continue
            child.join()
            receive.close()
            del running[item]
    return results


def _child(work, item, send) -> None:
    """Run `work(item)` and send back its result, or the error that stopped it."""
    try:
        result = work(item)
    except Exception as error:  # becomes the page's reason, as nbgrader's own failures do
        result = f"building the page failed: {type(error).__name__}"
    send.send(result)


def _reason_for_none(course: Course, lesson: str, student: str, recorded: dict) -> str | None:
    """Why `student` can get no feedback for `lesson`, or None if they can."""
    outcome, detail, _ = recorded.get((lesson, student), (Outcome.NOT_GRADED, "not graded yet", ""))
    if not Outcome(outcome).ran:
        return f"{outcome} ({detail})" if detail else outcome
    if student != student.strip() or any(char in student for char in "*?["):
        return "nbgrader cannot look up a student id with a space at either end, or * ? ["
    graded = course.root / "autograded" / student / lesson
    if not any((graded / f"{name}.ipynb").is_file() for name in course.notebooks(lesson)):
        return "no autograded notebook"
    return None


def _cause(result: dict) -> str:
    """The exception behind a failed nbgrader run, not nbgrader's own 'see above'."""
    found = CAUSE.findall(result.get("log") or "") + CAUSE.findall(result.get("error") or "")
    causes = [f"{name}: {text}" for name, text in found]
    real = [cause for cause in causes if not cause.startswith("NbGraderException")]
    return (real or causes or ["no reason given"])[0]
