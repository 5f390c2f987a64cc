"""Submissions that attack the grader earn nothing; an honest one beside them keeps full marks."""

import socket
import threading
from pathlib import Path

import nbformat
import pytest
import yaml
from integrity_tools import LESSON, answered, digests, new_course, submit

from grader.course import solution_notebook
from grader.grading import autograde
from grader.judge import INTRO, autograded_tests
from grader.sandbox import Limits

ATTACKS = yaml.safe_load((Path(__file__).parent / "integrity" / "attacks.yml").read_text())
LIMITS = Limits(cell_seconds=6, notebook_seconds=10, memory_bytes=1024**3)


class Listener:
    """A TCP server on the loopback that counts the connections it gets."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.stopped.set()
        self.thread.join()
        self.server.close()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One grading run over the honest student and every attack."""
    course = new_course(tmp_path_factory.mktemp("attacks") / "course")
    listener = Listener()
    fill = {
        "canary": str(course / "canary.txt"),
        "other_submission": str(course / "submitted" / "honest" / LESSON / f"{LESSON}.ipynb"),
        "solution": str(solution_notebook(LESSON)),
        "gradebook": str(course / "gradebook.db"),
        "host": "127.0.0.1",
        "port": listener.port,
    }
    for attack in ATTACKS:
        code = attack["code"]
        for key, value in fill.items():
            code = code.replace("{" + key + "}", str(value))
        submit(course, attack["name"], answered(code))
    before = digests(course)
    results = {r.student: r for r in autograde(course, LESSON, jobs=2, limits=LIMITS)}
    listener.close()
    return course, results, before, listener.connections


def test_there_are_at_least_twelve_attacks():
    """The corpus covers the attacks the grader must withstand."""
    assert len(ATTACKS) >= 12


def test_honest_submission_keeps_full_marks(graded):
    """The solution, graded in the same run as the attacks, scores full marks."""
    _, results, _, _ = graded
    honest = results["honest"]
    assert (honest.score, honest.outcome) == (honest.max_score, "graded")


@pytest.mark.parametrize("attack", ATTACKS, ids=[a["name"] for a in ATTACKS])
def test_attack_earns_nothing(graded, attack):
    """The attack scores 0, and its outcome says what happened."""
    _, results, _, _ = graded
    result = results[attack["name"]]
    assert result.score == 0, (result.outcome, result.detail)
    assert result.outcome == attack["outcome"], result.detail


FORGERIES = [a for a in ATTACKS if a.get("forges")]


@pytest.mark.parametrize("attack", FORGERIES, ids=[a["name"] for a in FORGERIES])
def test_forged_test_cells_are_failed_by_the_judge(graded, attack):
    """The test cells the forgery made pass in its own process are failed from outside it."""
    course, _, _, _ = graded
    path = course / "autograded" / attack["name"] / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, as_version=4)
    errors = [
        [out.evalue for out in nb.cells[index].outputs if out.output_type == "error"]
        for index in autograded_tests(nb)
    ]
    overturned = [e for e in errors if e and all(v.startswith(INTRO) for v in e)]
    assert overturned, errors


def test_grading_leaves_every_submission_byte_identical(graded):
    """No attack (and not the grader) changed a submitted file."""
    course, _, before, _ = graded
    assert digests(course) == before


def test_nothing_was_written_outside_the_sandbox(graded):
    """The canary file in the course folder was not created."""
    course, _, _, _ = graded
    assert not (course / "canary.txt").exists()


def test_no_connection_left_the_sandbox(graded):
    """The loopback server outside the sandbox was never reached."""
    _, _, _, connections = graded
    assert connections == 0


def test_the_sandbox_is_active_here():
    """The attack tests mean something only with the namespaces on, wherever the checkout is."""
    from grader.sandbox import probe

    protections, _ = probe()
    assert protections.namespaces and protections.unprivileged, protections.describe()


def test_nothing_a_submission_leaves_in_scratch_reaches_the_next(tmp_path):
    """Files left in the sandbox's /tmp and /dev/shm are gone when the next submission runs."""
    course = new_course(tmp_path / "course")
    leave = (
        "import os\n"
        "os.makedirs('/tmp/left/deep', exist_ok=True)\n"
        "for path in ['/tmp/left/deep/note', '/tmp/note', '/dev/shm/note']:\n"
        "    open(path, 'w').write('for the next one')\n"
        "os.symlink('/tmp/left', '/tmp/link')\n"
    )
    look = "import os\nprint(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))\n"
    submit(course, "a_leaves", answered(leave))
    submit(course, "b_looks", answered(look))
    autograde(course, LESSON, ["a_leaves", "b_looks"], jobs=1, limits=LIMITS)
    path = course / "autograded" / "b_looks" / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "make_leaf"
    )
    seen = cell.outputs[0].text
    assert "submission" in seen, seen
    assert not any(name in seen for name in ("note", "left", "link")), seen
