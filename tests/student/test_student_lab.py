"""The student's Validate shows a failed test by what it checks, whatever the cell holds."""

from grader.student_lab import what_it_checks


def test_a_failed_test_is_shown_by_its_docstring_or_first_line():
    """The docstring, cut with an ellipsis; a cell without one by its first line; a cell that
    does not parse (a syntax error, code nested past what Python parses) as the student left it."""
    source = '"""Check that f works."""\nfrom grader.checks import call\ncall(f, 1, name="f")'
    assert what_it_checks(source) == "Check that f works. (…)"
    assert what_it_checks("check(f)\nmore()") == "check(f) (…)"
    assert what_it_checks("def (:\n  x") == "def (: (…)"
    deep = '"""Check it."""\nx = 1' + " + 1" * 10000
    assert what_it_checks(deep).startswith('"""Check it."""')
    assert what_it_checks("") == ""
