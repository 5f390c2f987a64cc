"""The fast engine's nbgrader steps decide exactly as nbgrader's own, with the lesson read once."""

import copy
import os

import nbformat
import pytest
from integrity_tools import LESSON, new_course
from nbgrader.api import Gradebook

from grader.course import solution_notebook, student_notebook
from grader.grading.nbgrader_steps import SANITIZE, ReleasedLesson, ReleasedLessons, sanitize

pytestmark = pytest.mark.integration  # reads a real course's gradebook


def _tracked(nb):
    return [c for c in nb.cells if "nbgrader" in c.metadata]


def _graded(nb):
    return [c for c in _tracked(nb) if c.metadata.nbgrader.get("grade")]


def _locked_edit(nb):
    cell = next(c for c in _tracked(nb) if c.metadata.nbgrader.get("locked"))
    cell.source += "\nprint('changed')"


def _points(nb):
    _graded(nb)[0].metadata.nbgrader["points"] = 100


def _unlock(nb):
    for cell in _tracked(nb):
        cell.metadata.nbgrader["locked"] = False


def _cell_type(nb):
    cell = _graded(nb)[0]
    cell.cell_type = "markdown"
    del cell["outputs"], cell["execution_count"]


def _unknown_id(nb):
    _graded(nb)[0].metadata.nbgrader["grade_id"] = "no_such_cell"


def _kernelspec(nb):
    nb.metadata["kernelspec"] = {"name": "evil", "display_name": "Evil", "language": "python"}


def _duplicate(nb):
    for number, cell in enumerate(_graded(nb)[:2]):
        nb.cells.append(nbformat.from_dict(copy.deepcopy(cell) | {"id": f"copy-{number}"}))


def _schema_broken(nb):
    answer = next(c for c in _tracked(nb) if not c.metadata.nbgrader.get("locked"))
    answer.metadata.nbgrader["solution"] = "yes"  # not a boolean


def _no_grade_id(nb):
    del _graded(nb)[1].metadata.nbgrader["grade_id"]


def _old_schema(nb):
    _graded(nb)[0].metadata.nbgrader["schema_version"] = 1


def _extra_key(nb):
    _graded(nb)[0].metadata.nbgrader["extra"] = 1


def _markdown_grade(nb):
    cell = next(c for c in nb.cells if c.cell_type == "markdown")
    cell.metadata["nbgrader"] = dict(_graded(nb)[0].metadata.nbgrader, grade_id="md")


EDITS = [
    _locked_edit,
    _points,
    _unlock,
    _cell_type,
    _unknown_id,
    _kernelspec,
    _duplicate,
    _schema_broken,
    _no_grade_id,
    _old_schema,
    _extra_key,
    _markdown_grade,
]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return new_course(tmp_path_factory.mktemp("steps") / "course", honest=None)


def _resources(course):
    return {
        "nbgrader": {
            "notebook": LESSON,
            "assignment": LESSON,
            "student": "someone",
            "db_url": course.db_url,
        }
    }


def _stock(course, nb):
    config = course.api().config
    resources = _resources(course)
    for step in SANITIZE:
        nb, resources = step(config=config)(nb, resources)
    return nb


def _outcome(step, nb):
    try:
        return "ok", nbformat.writes(step(nb))
    except Exception as error:  # the same error, or none, is what counts
        return type(error).__name__, str(error)


@pytest.mark.parametrize("edit", [None, *EDITS], ids=lambda e: e.__name__ if e else "plain")
@pytest.mark.parametrize("start", ["solution", "student"])
def test_sanitize_decides_as_nbgraders_own_steps(course, edit, start):
    """Each edit a student could make comes out the same (or fails the same) both ways, and a
    second run, with the checked metadata remembered, decides the same again."""
    path = solution_notebook(LESSON) if start == "solution" else student_notebook(LESSON)
    config = course.api().config
    released = ReleasedLesson.read(course.db_url, LESSON, LESSON)

    def fast(nb):
        return sanitize(nb, _resources(course), config, released)[0]

    def edited():
        nb = nbformat.read(path, as_version=4)
        if edit:
            edit(nb)
        return nb

    stock = _outcome(lambda nb: _stock(course, nb), edited())
    assert _outcome(fast, edited()) == stock
    assert _outcome(fast, edited()) == stock  # from the remembered metadata
    if edit in (_schema_broken, _no_grade_id, _markdown_grade):
        assert stock[0] == "ValidationError"  # the edits meant to fail do


def test_a_metadata_error_is_found_after_the_same_cell_passed(course):
    """Remembering valid metadata never lets a different, invalid one through."""
    released = ReleasedLesson.read(course.db_url, LESSON, LESSON)
    config = course.api().config
    sanitize(
        nbformat.read(solution_notebook(LESSON), as_version=4), _resources(course), config, released
    )
    nb = nbformat.read(solution_notebook(LESSON), as_version=4)
    _schema_broken(nb)
    with pytest.raises(Exception, match="nbgrader metadata may be corrupted"):
        sanitize(nb, _resources(course), config, released)


def test_the_lesson_is_read_again_when_its_source_changes(course, tmp_path):
    """A new release rewrites the gradebook: the cached lesson follows it."""
    lessons = ReleasedLessons()
    source = tmp_path / f"{LESSON}.ipynb"  # stands for the lesson's source notebook
    source.write_bytes(solution_notebook(LESSON).read_bytes())
    first = lessons.get(course.db_url, LESSON, LESSON, source)
    assert lessons.get(course.db_url, LESSON, LESSON, source) is first
    name = next(iter(first.cells))
    with Gradebook(course.db_url) as gb:
        gb.find_source_cell(name, LESSON, LESSON).checksum = "changed"
        gb.db.commit()
    assert lessons.get(course.db_url, LESSON, LESSON, source).cells[name].checksum != "changed"
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert lessons.get(course.db_url, LESSON, LESSON, source).cells[name].checksum == "changed"
