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


OWN_TASK = "own-task"  # the tag of a lesson cell that shows the student's own task


def starts_own_work(cell) -> bool:
    """Whether the cell is where a submission's own work starts: an answer, a graded cell, or a
    cell that shows the student's own task (tagged OWN_TASK), which the lesson's shared first
    run would show for nobody in particular."""
    tags = cell.get("metadata", {}).get("tags", [])
    return not is_lesson_code(cell) or (isinstance(tags, list) and OWN_TASK in tags)


def is_lesson_code(cell) -> bool:
    """Whether the cell is lesson code: neither an answer nor graded, the same for everyone."""
    return cell.get("cell_type") == "code" and not is_answer(cell) and not is_graded(cell)


def autograded_tests(nb) -> dict[int, str]:
    """The autograded test cells of a notebook: index -> grade id."""
    return {i: grade_id(c) for i, c in enumerate(nb.cells) if is_test(c)}


def by_grade_id(nb) -> dict[str, object]:
    """The cells nbgrader tracks, by grade id."""
    return {grade_id(c): c for c in nb.cells if grade_id(c)}


def shown_name(nb, index: int) -> str:
    """Cell `index` as the student finds it: an answer or test by its grade id, any other cell by
    the heading above it ("the 2nd code cell after '## 3. Hooks'")."""
    cell = nb.cells[index]
    if grade_id(cell):
        return f"cell {grade_id(cell)!r}"
    code = 0
    for above in reversed(nb.cells[:index]):
        if above.get("cell_type") == "code":
            code += 1
        elif above.get("cell_type") == "markdown":
            heading = next(
                (
                    line.strip()
                    for line in above.get("source", "").splitlines()
                    if line.startswith("#")
                ),
                None,
            )
            if heading:
                nth = "the code cell" if code == 0 else f"code cell {code + 1}"
                return f"{nth} after {heading.lstrip('#').strip()[:60]!r}"
    return f"code cell {code + 1} of the notebook"
