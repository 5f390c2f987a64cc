"""A class's results read back from the gradebook: each submission's score, and its recorded
outcome (or why it has none)."""

from dataclasses import dataclass

from grader.course import Course
from grader.grading import outcomes
from grader.outcome import Outcome


@dataclass(frozen=True)
class Result:
    """One submission's outcome: its score, or why it has none."""

    student: str
    lesson: str
    score: float
    max_score: float
    outcome: str
    detail: str = ""
    review: str = ""  # what the instructor should look at (code reaching for internals)
    penalty: float = 0.0  # the late penalty taken off `score`, the raw score

    @property
    def final(self) -> float:
        """The score after the late penalty."""
        return max(0.0, self.score - self.penalty)


def scores_of(course: Course, lesson: str, students: list[str]) -> list[Result]:
    """The students' scores and recorded outcomes, read from the course's gradebook."""
    recorded, review = outcomes.read_all(course.db_url), outcomes.read_review(course.db_url)
    results = []
    with course.api().gradebook as gb:
        max_score = gb.find_assignment(lesson).max_score
        submissions = gb.find_assignment(lesson).submissions
        scores = {s.student.id: s.score for s in submissions}
        penalties = {s.student.id: s.late_submission_penalty or 0.0 for s in submissions}
        for student in students:
            outcome, detail, _ = recorded.get(
                (lesson, student), (Outcome.NOT_GRADED, "no grading run recorded", "")
            )
            score = scores.get(student, 0.0)
            flagged = review.get((lesson, student), "")
            penalty = penalties.get(student, 0.0)
            results.append(
                Result(student, lesson, score, max_score, outcome, detail, flagged, penalty)
            )
    return results
