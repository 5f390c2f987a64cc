"""One `autograde` at a time per course: a lock on a file in the course folder, held while a run
grades (two runs at once would both do all the work)."""

import contextlib
import fcntl
import os
from datetime import datetime

from grader.course import Course, CourseError

LOCK_FILE = ".autograde.lock"


class CourseBusy(CourseError):
    """Another run is grading the course."""


@contextlib.contextmanager
def grading_lock(course: Course):
    """Hold the course's grading lock for the block; CourseBusy if another run holds it."""
    fd = os.open(course.root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise CourseBusy(
                f"{course.root} is being graded by another `grader autograde` ({holder}):"
                " wait for it to finish, then run again"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, since {datetime.now():%H:%M:%S}".encode(), 0)
        yield
    finally:
        os.close(fd)
