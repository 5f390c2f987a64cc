"""Cell predicates: lesson code, answers and tests told apart from nbgrader's metadata alone."""

import nbformat

from grader.cells import (
    autograded_tests,
    by_grade_id,
    grade_id,
    is_answer,
    is_lesson_code,
    is_locked,
    is_test,
    shown_name,
)


def _cell(kind: str = "code", **nbgrader) -> nbformat.NotebookNode:
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    cell = make("x = 1")
    if nbgrader:
        cell.metadata["nbgrader"] = nbgrader
    return cell


LESSON = _cell()
ANSWER = _cell(solution=True, grade=False, grade_id="make_leaf", locked=False)
TEST = _cell(solution=False, grade=True, grade_id="test_make_leaf", points=2, locked=True)
GRADED_ANSWER = _cell(solution=True, grade=True, grade_id="explain", points=1)
TEXT = _cell("markdown", grade_id="intro", locked=True)


def test_each_kind_of_cell_is_told_apart():
    """Lesson code, answers and test cells answer their own predicate only."""
    assert [is_lesson_code(c) for c in (LESSON, ANSWER, TEST, TEXT)] == [True, False, False, False]
    assert [is_answer(c) for c in (LESSON, ANSWER, TEST, GRADED_ANSWER)] == [
        False,
        True,
        False,
        True,
    ]
    assert [is_test(c) for c in (LESSON, ANSWER, TEST, GRADED_ANSWER)] == [
        False,
        False,
        True,
        False,
    ]


def test_metadata_that_is_not_an_object_makes_a_plain_cell():
    """A submission's broken nbgrader metadata is read as none, not as an error."""
    broken = _cell()
    broken.metadata["nbgrader"] = "not an object"
    assert grade_id(broken) is None and is_lesson_code(broken) and not is_locked(broken)


def test_autograded_tests_and_grade_ids_index_a_notebook():
    """autograded_tests maps test cell positions to grade ids; by_grade_id finds tracked cells."""
    nb = nbformat.v4.new_notebook(cells=[TEXT, LESSON, ANSWER, TEST, GRADED_ANSWER])
    assert autograded_tests(nb) == {3: "test_make_leaf"}
    assert list(by_grade_id(nb)) == ["intro", "make_leaf", "test_make_leaf", "explain"]
    assert is_locked(TEST) and not is_locked(ANSWER)


def test_a_cell_is_named_as_the_student_finds_it():
    """Outcomes name a cell by its grade id, or by the heading above it, never by an index."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("setup()"),
            nbformat.v4.new_markdown_cell("## 3. Hooks\n\nText."),
            nbformat.v4.new_code_cell("a = 1"),
            nbformat.v4.new_code_cell("b = 2"),
            nbformat.v4.new_code_cell("def f(): ...", metadata={"nbgrader": {"grade_id": "f"}}),
        ]
    )
    assert [shown_name(nb, i) for i in (0, 2, 3, 4)] == [
        "code cell 1 of the notebook",
        "the code cell after '3. Hooks'",
        "code cell 2 after '3. Hooks'",
        "cell 'f'",
    ]
