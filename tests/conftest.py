"""Shared fixtures: the repository's lessons, and nbgrader tools on PATH."""

import pytest

from grader.course import lessons
from grader.grading.class_run import GradingSession
from grader.judging.reference import ReferenceServer
from grader.sandbox.outside.isolation import Limits


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


@pytest.fixture(scope="module")
def grading_session():
    """Warm grading processes (default limits, one job) kept for a test module's courses."""
    with GradingSession(Limits(), jobs=1) as session:
        yield session


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, driven by Playwright."""
    from browser_tools import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()
