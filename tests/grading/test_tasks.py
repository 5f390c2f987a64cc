"""Grading tasks: what each submission's grading is given."""

from grader.grading.tasks import GradingTask, with_what_comes_after

ORDER = [("a", "x"), ("a", "y"), ("a", "z"), ("b", "x"), ("c", "x"), ("c", "y")]


def _tasks():
    return [GradingTask(None, lesson, student, "fast", None) for lesson, student in ORDER]


def test_each_task_names_the_lesson_graded_after_its_own():
    told = with_what_comes_after(_tasks(), processes=2)
    assert [t.ahead.next_lesson for t in told] == ["b", "b", "b", "c", None, None]


def test_each_task_knows_its_process_share_of_its_lesson_still_to_grade():
    """Three of lesson a for two processes: the first can expect two (itself and one more),
    the last one alone; one process takes them all."""
    assert [t.ahead.share for t in with_what_comes_after(_tasks(), 2)] == [2, 1, 1, 1, 1, 1]
    assert [t.ahead.share for t in with_what_comes_after(_tasks(), 1)] == [3, 2, 1, 1, 2, 1]
