"""Shared fixtures: the repository's lessons, and nbgrader tools on PATH."""

import pytest

from grader.course import lessons
from grader.judging.reference import ReferenceServer


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that takes a `lesson` argument once per lesson."""
    if "lesson" in metafunc.fixturenames:
        metafunc.parametrize("lesson", lessons())


@pytest.fixture(scope="session")
def reference_server():
    """A warm reference server: the solutions' observations for any lesson and seed."""
    server = ReferenceServer()
    yield server
    server.stop()
