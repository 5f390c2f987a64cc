"""Each graded submission's report says how long each step of its grading took."""

import pytest
from integrity_tools import LESSON, new_course

from grader.grading.class_run import grade_submissions
from grader.timings import Timings

FAST_STEPS = {
    "start-up",
    "copy",
    "nbgrader steps",
    "reference",
    "fork",
    "student cells",
    "probes",
    "clean",
    "judge",
    "gradebook",
    "bookkeeping",
}


def test_timings_add_up_per_step():
    """A step timed twice counts both times; another step is kept apart."""
    timings = Timings()
    timings.add("fork", 0.25)
    timings.add("fork", 0.5)
    with timings.step("judge"):
        pass
    assert timings["fork"] == 0.75 and 0 <= timings["judge"] < 0.1 and len(timings) == 2


@pytest.mark.integration
def test_a_graded_submission_reports_the_seconds_of_every_step(tmp_path, grading_session):
    """The fast engine's report times every step, and the student's cells take time."""
    course = new_course(tmp_path / "course")
    (report,) = grade_submissions(course, [LESSON], session=grading_session)
    assert report.outcome == "graded", report.notes()
    assert set(report.timings) >= FAST_STEPS - {"start-up"}  # the session may be warm already
    assert all(seconds >= 0 for seconds in report.timings.values())
    assert report.timings["student cells"] > 0 and report.timings["probes"] > 0


def test_timings_of_several_runs_add_up_per_step():
    """Each step's seconds, added over the runs; a step of one run alone is kept."""
    from grader.timings import Timings

    total = Timings.summed([Timings(copy=1.0, judge=0.5), Timings(judge=0.25), Timings()])
    assert total == {"copy": 1.0, "judge": 0.75}
