"""Grading tasks: what each submission's grading is given."""

from grader.grading.tasks import GradingTask, with_next_lessons


def test_each_task_names_the_lesson_graded_after_its_own():
    tasks = [
        GradingTask(None, lesson, student, "fast", None)
        for lesson, student in [("a", "x"), ("a", "y"), ("b", "x"), ("c", "x"), ("c", "y")]
    ]
    assert [t.next_lesson for t in with_next_lessons(tasks)] == ["b", "b", "c", None, None]
