"""Grading a lesson's submissions: one submission, the nbgrader steps, outcomes, the gradebook."""
