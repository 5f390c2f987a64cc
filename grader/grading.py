"""Grade submissions with nbgrader and read the scores back from its gradebook."""

from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import MissingEntry

from grader.course import nbgrader_api, nbgrader_config


@dataclass(frozen=True)
class Result:
    """One submission's outcome: its score, or why it has none."""

    student: str
    lesson: str
    score: float
    max_score: float
    outcome: str


def submitted_students(course_dir: Path, lesson: str) -> list[str]:
    """The students with a submission folder for `lesson`, sorted."""
    root = Path(course_dir) / "submitted"
    return sorted(p.parent.name for p in root.glob(f"*/{lesson}") if p.is_dir())


def prepare_course(course_dir: Path, lessons: list[str]) -> None:
    """Enter `lessons` in the course's gradebook, as nbgrader needs before it can grade them."""
    config = nbgrader_config(
        course_dir, CourseDirectory={"release_directory": str(Path(course_dir) / "release")}
    )
    api = nbgrader_api(config)
    for lesson in lessons:
        result = api.generate_assignment(lesson, force=True, create=True)
        if not result["success"]:
            raise RuntimeError(f"could not enter {lesson} in {course_dir}:\n{result.get('error')}")


def autograde(course_dir: Path, lesson: str, students: list[str] | None = None) -> list[Result]:
    """Grade each student's submission of `lesson`; a failure is recorded, never raised."""
    api = nbgrader_api(nbgrader_config(course_dir))
    results = []
    for student in students or submitted_students(course_dir, lesson):
        outcome = "graded" if api.autograde(lesson, student)["success"] else "not graded"
        results.append(score_of(course_dir, lesson, student, outcome))
    return results


def score_of(course_dir: Path, lesson: str, student: str, outcome: str = "graded") -> Result:
    """Read one submission's score from the course's gradebook."""
    with nbgrader_api(nbgrader_config(course_dir)).gradebook as gb:
        max_score = gb.find_assignment(lesson).max_score
        try:
            score = gb.find_submission(lesson, student).score
        except MissingEntry:
            return Result(student, lesson, 0.0, max_score, outcome)
    return Result(student, lesson, score, max_score, outcome)
