"""Every rule on how an answer is worked out, judged from the submitted source in the grading
process: derivatives asked for by hand as formulas the grader evaluates (`by_hand`, bounded by
construction), then the reading of the code (`how`), which may also flag cells for the
instructor. The reading is bounded: a notebook with more student code than `READING_CHARACTERS`,
or whose reading runs past `READING_SECONDS`, is not read, and is flagged for review instead, so
no submission holds a grading process for longer than that."""

import contextlib
import threading

from grader.alarm import alarm_after
from grader.cells import is_lesson_code
from grader.judging import by_hand, how

READING_SECONDS = 10.0
READING_CHARACTERS = 200_000
UNREAD = "notebook"  # the flag's key when the reading stopped


class ReadingStopped(Exception):
    """The reading ran past its time."""


def judge_source(
    nb, lesson_nb, probes_source: str, seed: int, seconds: float = READING_SECONDS, variant=None
) -> how.Reading:
    """Why tests earn nothing (by grade id), and what the instructor should look at. `variant`:
    the submitting student's own tasks, where the course gives them (`grader.course_keys`)."""
    lesson_code = frozenset(c.source for c in lesson_nb.cells if is_lesson_code(c))
    formulas = by_hand.problems(nb, lesson_nb, probes_source, seed, variant)
    student = [c.source for c in nb.cells if c.cell_type == "code" and c.source not in lesson_code]
    characters = sum(map(len, student))
    if characters > READING_CHARACTERS:
        reading = _unread(f"its code is {characters:,} characters, over {READING_CHARACTERS:,}")
    else:
        lesson_rules = how.rules(probes_source, lesson_nb)  # the lesson's, not the submission's
        stopped = []
        try:
            with _time_limit(seconds, stopped):
                reading = how.read(nb, lesson_rules, lesson_code)
        except Exception:
            if not stopped:
                raise
            reading = _unread(f"reading its code took over {seconds:g} s")
    problems = {**formulas, **reading.problems}  # reaching for internals is said first
    return how.Reading(problems, reading.flags)


def _unread(why: str) -> how.Reading:
    return how.Reading(
        {}, {UNREAD: f"was not read for how its answers are worked out ({why}): look at them"}
    )


@contextlib.contextmanager
def _time_limit(seconds: float, stopped: list):
    """Raise ReadingStopped in the block after `seconds`, noting it in `stopped` (raised inside C
    code such as the parser, it may surface as another error). In the main thread only; elsewhere
    the size limit alone bounds the reading."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        stopped.append(seconds)
        raise ReadingStopped

    with alarm_after(seconds, stop):
        yield
