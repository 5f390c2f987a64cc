"""The instructor's commands behind `python -m grader`, one module each."""
