"""Autograd Fundamentals: check helpers for the lessons and the instructor's grading CLI."""

from grader.slow_imports import skip_slow_imports

skip_slow_imports()  # first: nbgrader and nbformat, imported below, import jsonschema
