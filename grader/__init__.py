"""Autograd Fundamentals: check helpers for the lessons and the instructor's grading CLI."""
