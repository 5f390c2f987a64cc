"""Each lesson's visible checks, one module per lesson (`lesson_01` … `lesson_11`).

A test cell's visible part calls one function of its lesson's module with the example the cell
shows, so that the cell is a few lines long and a failing test shows its message at once. The
functions compare what they are given with values the cell writes out: no expected value, hidden
test or reference lives here. They run in the student's process, like `grader.checks`.
"""
