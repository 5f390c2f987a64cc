"""A lesson's first cells run once per lesson in the sandbox; each submission starts from there,
at its first cell that differs from the release, and no submission's changes reach another."""

import nbformat
import pytest
from integrity_tools import LESSON, autograded, new_course, solution_with, submit

from grader.cells import is_answer, is_lesson_code, is_test
from grader.course import solution_notebook, student_notebook
from grader.grading.class_run import grade_submissions

pytestmark = pytest.mark.integration

CHANGES_SHARED = "plain.add_(41)\nprint('changed')"
LOOKS_AT_SHARED = "print('plain sums to', plain.sum().item())"


def _edited_lesson_cell() -> bytes:
    """The solution with the lesson's third code cell (`plain = torch.ones(2, 2)`) edited."""
    nb = nbformat.read(solution_notebook(LESSON), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[2].source.startswith("plain = torch.ones(2, 2)")
    code[2].source = code[2].source.replace("torch.ones(2, 2)", "torch.full((2, 2), 7.0)")
    return nbformat.writes(nb).encode()


def _code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def test_each_submission_starts_from_the_lesson_as_released(tmp_path, grading_session):
    """a changes a tensor the lesson made; b, graded next from the same lesson run, sees it as
    the lesson made it; c edited that lesson cell and gets its own version from there."""
    course = new_course(tmp_path / "course", honest=None)
    submit(course, "a_changes", solution_with(CHANGES_SHARED))
    submit(course, "b_looks", solution_with(LOOKS_AT_SHARED))
    submit(course, "c_edited", _edited_lesson_cell())
    reports = grade_submissions(course, [LESSON], session=grading_session, force=True)
    assert [(r.student, r.outcome) for r in reports] == [
        ("a_changes", "graded"),
        ("b_looks", "graded"),
        ("c_edited", "graded"),
    ]
    seen = "".join(
        out.get("text", "")
        for cell in _code_cells(autograded(course, "b_looks"))
        for out in cell.outputs
    )
    assert "plain sums to 4.0" in seen, seen
    edited = _code_cells(autograded(course, "c_edited"))[2]
    assert "7." in str(edited.outputs[0]["data"]["text/plain"]), edited.outputs
    honest = _code_cells(autograded(course, "b_looks"))[2]
    assert "1." in str(honest.outputs[0]["data"]["text/plain"]), honest.outputs


def test_shared_cells_keep_their_outputs_and_counts(tmp_path, grading_session):
    """The cells run once for the lesson have their outputs and execution counts in every
    submission, and the submission's own cells count on from there, as in one kernel."""
    course = new_course(tmp_path / "course")
    (report,) = grade_submissions(course, [LESSON], session=grading_session, force=True)
    assert report.outcome == "graded" and "lesson prefix" in report.timings
    cells = _code_cells(autograded(course, "honest"))
    shared = next(i for i, c in enumerate(cells) if not is_lesson_code(c))
    assert shared >= 5  # lesson 1 teaches before its first exercise
    assert [c.execution_count for c in cells[: shared + 1]] == list(range(1, shared + 2))
    assert cells[2].outputs[0]["output_type"] == "execute_result"  # `plain`, shown as a value
    assert cells[2].outputs[0]["execution_count"] == 3


def test_a_submission_finds_the_modules_its_test_cells_import_already_imported(
    tmp_path, grading_session
):
    """The lesson's checks, which only its test cells import, were imported by the sandbox
    template once: no submission's process compiles and runs them again."""
    course = new_course(tmp_path / "course", honest=None)
    looks = "import sys\nprint('checks ready:', 'grader.lesson_checks.lesson_01' in sys.modules)"
    submit(course, "looks", solution_with(looks))
    (report,) = grade_submissions(course, [LESSON], session=grading_session, force=True)
    assert report.outcome == "graded"
    cells = _code_cells(autograded(course, "looks"))
    printed = [output.get("text", "") for cell in cells for output in cell.outputs]
    assert "checks ready: True\n" in printed


LISTS_SOCKETS = """\
import os
links = []
for fd in os.listdir('/proc/self/fd'):
    try:
        links.append(os.readlink(f'/proc/self/fd/{fd}'))
    except OSError:
        pass
print('sockets:', sum(link.startswith('socket:') for link in links))
"""


def test_a_submission_holds_no_socket_of_the_servers(tmp_path, grading_session):
    """The template's control socket and the lesson server's hand-back channel are closed in
    the submission's process: it has no socket to send the servers anything on."""
    course = new_course(tmp_path / "course", honest=None)
    submit(course, "counts", solution_with(LISTS_SOCKETS))
    grade_submissions(course, [LESSON], session=grading_session, force=True)
    seen = "".join(
        out.get("text", "")
        for cell in _code_cells(autograded(course, "counts"))
        for out in cell.outputs
    )
    assert "sockets: 0" in seen, seen


def test_lesson_servers_are_kept_by_last_use_and_a_prepared_one_goes_first():
    """The template keeps `keep` lesson servers: joining one makes it the last to go; one
    started ahead of need goes first until joined; with room for one, the one in use stays."""
    from grader.sandbox.inside.cell_server import LessonServers

    started, closed = [], []

    class Server:
        def __init__(self, key):
            self.key = key
            started.append(key)

        def close(self):
            closed.append(self.key)

    servers = LessonServers(keep=2)
    servers.join("a", lambda: Server("a"))
    servers.prepare("b", lambda: Server("b"))
    servers.prepare("b", lambda: Server("b"))  # already there
    assert started == ["a", "b"] and not closed
    servers.prepare("c", lambda: Server("c"))  # goes before "a", which was joined
    assert closed == ["b"] and list(servers.running) == ["c", "a"]
    servers.join("c", lambda: Server("c"))
    servers.join("d", lambda: Server("d"))
    assert closed == ["b", "a"] and list(servers.running) == ["c", "d"]
    alone = LessonServers(keep=1)
    alone.join("e", lambda: Server("e"))
    alone.prepare("f", lambda: Server("f"))
    assert list(alone.running) == ["e"] and "f" not in started


def test_a_lesson_prepared_ahead_is_joined_with_its_outputs(tmp_path):
    """A run that names the next lesson has its first cells run meanwhile; the next lesson's
    submission then starts from them, with their outputs."""
    from grader.course import lessons, released_lesson_code
    from grader.sandbox.outside.client import Sandbox
    from grader.sandbox.outside.isolation import Limits

    first, second = lessons()[:2]
    _, prefixes = released_lesson_code()
    sandbox = Sandbox(Limits())
    try:
        cells = [*enumerate(prefixes[first]), (len(prefixes[first]), "print('one')")]
        report = sandbox.run(cells, {}, None, first, then=second)
        assert report.outcome == "graded" and second in sandbox.prepared
        cells = [*enumerate(prefixes[second]), (len(prefixes[second]), "print('two')")]
        report = sandbox.run(cells, {}, None, second)
        assert report.outcome == "graded", report.detail
        assert report.cells[len(prefixes[second])]["outputs"][0]["text"] == "two\n"
        shown = [c for c in report.cells.values() if c["outputs"]]
        assert len(shown) > 1  # the lesson's own cells came with their outputs
    finally:
        sandbox.stop()


LISTS_REMEMBERED = """\
import hashlib
remembered = {key[0] for key in get_ipython()._transformed}
print('remembered:', *sorted(hashlib.sha256(s.encode()).hexdigest() for s in remembered))
"""


def _printed(course, student: str) -> str:
    """Everything the student's autograded notebook printed, cell after cell."""
    cells = _code_cells(autograded(course, student))
    return "".join(out.get("text", "") for c in cells for out in c.outputs)


def _digest(source: str) -> str:
    import hashlib

    return hashlib.sha256(source.encode()).hexdigest()


def test_a_submission_finds_every_test_cell_worked_out_and_no_solution(tmp_path, grading_session):
    """The template works out the released test cells' transforms once for every fork: a
    submission's first answer finds each test cell it is about to run remembered (as released:
    no hidden test), and none of the solution's answers."""
    course = new_course(tmp_path / "course", honest=None)
    submit(course, "looks", solution_with(LISTS_REMEMBERED))
    (report,) = grade_submissions(course, [LESSON], session=grading_session, force=True)
    assert report.outcome == "graded"
    printed = _printed(course, "looks")
    remembered = set(printed.split("remembered:")[1].split("\n")[0].split())
    released = nbformat.read(student_notebook(LESSON), as_version=4)
    tests = [c for c in _code_cells(released) if is_test(c)]
    assert tests and not any("HIDDEN TESTS" in c.source for c in tests)
    assert {_digest(c.source) for c in tests} <= remembered
    graded = [c for c in _code_cells(autograded(course, "looks")) if is_test(c)]
    assert not {_digest(c.source) for c in graded if "HIDDEN TESTS" in c.source} & remembered
    solution = nbformat.read(solution_notebook(LESSON), as_version=4)
    answers = [c.source for c in solution.cells if is_answer(c)]
    assert answers and not {_digest(s) for s in answers} & remembered


def test_a_submission_starts_with_an_optimizers_first_step_paid(tmp_path, grading_session):
    """The first step of a torch optimizer imports torch._dynamo: the template takes it once, so
    a lesson that trains does not pay it again (lesson 1 never builds an optimizer itself)."""
    course = new_course(tmp_path / "course", honest=None)
    submit(
        course,
        "looks",
        solution_with("import sys\nprint('dynamo:', 'torch._dynamo' in sys.modules)"),
    )
    (report,) = grade_submissions(course, [LESSON], session=grading_session, force=True)
    assert report.outcome == "graded"
    printed = _printed(course, "looks")
    assert "dynamo: True" in printed, printed
