"""Verdicts decided outside the submission: the reference observations and pure comparison."""
