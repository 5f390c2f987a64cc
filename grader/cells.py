"""What a notebook cell is, in the lessons' terms: the one place nbgrader's cell metadata is read.

A lesson has three kinds of cells: lesson cells (instructor text and code, the same for every
student), answer cells (nbgrader "solution" cells the student writes), and test cells (graded
code cells that check an answer). Graded and answer cells carry a grade id.
"""


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def grade_id(cell) -> str | None:
    """The cell's grade id, if nbgrader tracks it."""
    return _nbgrader(cell).get("grade_id")


def is_graded(cell) -> bool:
    """Whether nbgrader gives the cell points (a test cell, or a manually graded answer)."""
    return bool(_nbgrader(cell).get("grade"))


def is_answer(cell) -> bool:
    """Whether the student writes this cell (an nbgrader solution cell)."""
    return bool(_nbgrader(cell).get("solution"))


def is_locked(cell) -> bool:
    """Whether nbgrader restores the cell from the release when grading."""
    return bool(_nbgrader(cell).get("locked"))


def is_test(cell) -> bool:
    """Whether the cell is an autograded test cell (graded code that is not an answer)."""
    return cell.get("cell_type") == "code" and is_graded(cell) and not is_answer(cell)


def is_lesson_code(cell) -> bool:
    """Whether the cell is lesson code: neither an answer nor graded, the same for everyone."""
    return cell.get("cell_type") == "code" and not is_answer(cell) and not is_graded(cell)


def autograded_tests(nb) -> dict[int, str]:
    """The autograded test cells of a notebook: index -> grade id."""
    return {i: grade_id(c) for i, c in enumerate(nb.cells) if is_test(c)}


def by_grade_id(nb) -> dict[str, object]:
    """The cells nbgrader tracks, by grade id."""
    return {grade_id(c): c for c in nb.cells if grade_id(c)}
