"""The instructor's view of each student's own tasks: the keys to hand out, and any student's
tasks (`grader keys`, `grader tasks`)."""

import csv
from pathlib import Path

from grader.course_keys import Variant, key_for, read_secret, varied_lessons
from grader.lms.roster import class_list


def write_keys(course, to: Path) -> tuple[Path, int]:
    """Write every student's course key (the roster's and the gradebook's) to the CSV `to`, one
    row per student (id, key), for the instructor to hand out; the path and how many."""
    secret = read_secret(course.root)
    students = class_list(course)
    with open(to, "w", newline="") as out:
        rows = csv.writer(out)
        rows.writerow(["id", "course_key"])
        rows.writerows([student.id, key_for(secret, student.id)] for student in students)
    to.chmod(0o600)  # a key is the student's own: whoever has it sees their tasks
    return to, len(students)


def student_tasks(course, student: str, chosen: list[str] | None = None) -> list[str]:
    """Lines that give `student`'s tasks in each lesson with tasks of each student's own (those
    `chosen`, else all), or say that the course gives none. ValueError for a student the course
    does not know (a key made for a typo would be handed out) or a lesson with no such tasks."""
    varied = varied_lessons(course.config())
    if not varied:
        return ["this course gives every student the class-wide tasks (grader init --variants)"]
    if student not in {known.id for known in class_list(course)}:
        raise ValueError(
            f"{student!r} is not a student of {course.root} (on its roster or in its gradebook)"
        )
    unknown = sorted(set(chosen or []) - varied)
    if unknown:
        raise ValueError(
            f"{', '.join(unknown)}: no tasks of each student's own in this course; the lessons "
            f"that have them are {', '.join(sorted(varied))}"
        )
    key = key_for(read_secret(course.root), student)
    lines = [f"{student} (course key {key}):"]
    for lesson in sorted(varied):
        if chosen and lesson not in chosen:
            continue
        variant = Variant(student, key, lesson)
        for family in variant.families():
            lines.append(f"  {lesson}, {family.exercise}: {variant.shown(family.exercise)}")
    return lines
