"""Grading processes that share one sandbox template cannot reach each other's submissions.

Two workers grade at once in one template: a hostile submission on one of them signals every
process it can see, plants files and listens on a socket while honest submissions run on the
other. They must be graded as if alone.
"""

import os
import time
from pathlib import Path

import nbformat
import pytest
import yaml
from integrity_tools import (
    FULL_MARKS,
    LESSON,
    answered,
    autograded,
    new_course,
    solution_with,
    submit,
)

from grader.cells import grade_id
from grader.course import solution_notebook
from grader.grading.class_run import GradingSession, autograde
from grader.sandbox.outside.isolation import Limits, detect_protections

pytestmark = pytest.mark.integration

LIMITS = Limits(cell_seconds=20, notebook_seconds=60)
CORPUS = Path(__file__).parent.parent / "integrity" / "attacks.yml"
HOSTILE = """
import os, signal, socket, time
_me = os.getuid()
_listener = socket.socket(socket.AF_UNIX)
_listener.bind("\\0shared-sandbox-plant")
_listener.listen()
for _folder in ("/tmp", "/dev/shm"):
    with open(f"{_folder}/planted", "w") as _file:
        _file.write("planted")
_others, _refused = set(), 0
_deadline = time.time() + 6
while time.time() < _deadline:
    for _pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            _owner = os.stat(f"/proc/{_pid}").st_uid
            if _owner == _me:
                continue
            if _owner >= 1_000_000_000:
                _others.add(_owner)
            os.kill(int(_pid), signal.SIGKILL)
        except PermissionError:
            _refused += 1
        except OSError:
            pass
    time.sleep(0.02)
print("other submissions seen:", len(_others), "signals refused:", _refused > 0)
"""
HONEST_BUT_SLOW = """
import os, socket, time
time.sleep(1.5)
assert not os.path.exists("/tmp/planted") and not os.path.exists("/dev/shm/planted")
_probe = socket.socket(socket.AF_UNIX)
try:
    _probe.connect("\\0shared-sandbox-plant")
    raise AssertionError("reached another submission's socket")
except ConnectionRefusedError:
    pass
"""
VICTIMS = ["victim_a", "victim_b", "victim_c"]


def test_a_submission_cannot_reach_one_graded_at_once_beside_it(tmp_path):
    course = new_course(tmp_path / "course", honest=None)
    submit(course, "attacker", solution_with(HOSTILE))
    for student in VICTIMS:
        submit(course, student, solution_with(HONEST_BUT_SLOW, cells=2))
    with GradingSession(LIMITS, jobs=2) as session:
        results = {r.student: r for r in autograde(course, LESSON, session=session)}
        # shared where submissions run as users of the sandbox's own (root) and see none of
        # each other's processes; elsewhere each worker has a template of its own, in a
        # namespace of its own
        shared = detect_protections()[0].shareable
        assert (session.sandbox is not None) == shared, detect_protections()[0].describe()
    for student in ["attacker", *VICTIMS]:
        result = results[student]
        assert (result.outcome, result.score) == ("graded", FULL_MARKS), (student, result.detail)
    printed = "".join(
        out.get("text", "")
        for cell in autograded(course, "attacker").cells
        for out in cell.get("outputs", [])
    )
    # Shared, it ran while others did in its template, whose /proc it cannot see; its own
    # template's namespace holds no other worker's submission.
    assert "other submissions seen: 0 " in printed, printed


def test_a_worker_whose_shared_template_stopped_goes_on_with_its_own():
    """A channel whose template is gone is given up: the submission runs in a template of the
    worker's own, and so do the next ones.

    The template's end of the channel is closed before it said it was ready, as a template
    that died does (killing a real one as it starts races with bubblewrap setting it up: under
    load it can outlive the kill)."""
    import socket

    from grader.sandbox.outside.client import Sandbox, TemplateChannel

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    theirs.close()
    gone = TemplateChannel(ours, None, {})
    sandbox = Sandbox(LIMITS, gone)
    try:
        for _ in range(2):
            report = sandbox.run([(0, "print(6 * 7)")], {})
            assert report.outcome == "graded", report.detail
            assert report.cells[0]["outputs"][0]["text"] == "42\n"
            assert sandbox.own is not None and sandbox.channel is sandbox.own.channels[0]
    finally:
        sandbox.stop()


def _processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, start time) for every process."""
    found = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            found[int(name)] = (int(fields[1]), int(fields[19]))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _attendant_with_a_child_waiting(sandbox_pid: int) -> int:
    """The attendant that has forked the next submission's process ahead: the parent of the
    newest process in the sandbox."""
    table = _processes()
    below, todo = [], [sandbox_pid]
    while todo:
        pid = todo.pop()
        below.append(pid)
        todo += [child for child, (parent, _) in table.items() if parent == pid]
    newest = max(below, key=lambda pid: table[pid][1])
    return table[newest][0]


def test_a_sandbox_broken_between_two_submissions_does_not_fail_the_second():
    """The attendant answers "cleaned" before it has finished (waiting for the processes to
    end, forking the next one ahead). If it dies then, the next submission is not to blame: it
    is run in a fresh template and graded."""
    import signal

    from grader.sandbox.outside.client import Sandbox

    sandbox = Sandbox(LIMITS)
    try:
        assert sandbox.run([(0, "print(6 * 7)")], {}).outcome == "graded"
        first = sandbox.own
        time.sleep(0.5)  # the next submission's process is forked ahead meanwhile
        os.kill(_attendant_with_a_child_waiting(first.process.pid), signal.SIGKILL)
        report = sandbox.run([(0, "print(6 * 7)")], {})
        assert report.outcome == "graded", report.detail
        assert report.cells[0]["outputs"][0]["text"] == "42\n"
        assert sandbox.own is not None and sandbox.own is not first
    finally:
        sandbox.stop()


KNOWLEDGE_ATTACKS = [  # from the corpus: they look for the grader's knowledge in their process
    "hidden_tests_anywhere_in_the_process",
    "print_hidden_tests_and_probes",
    "persistent_keyring_note",
]
LESSON_3 = "03_backward_and_scalar_outputs"
HOW_ATTACKS = {  # answer cell -> an answer that gets around how the exercise says to work
    "dz_dx": "_g = torch.autograd.grad\n\n\ndef dz_dx(x):\n    with torch.enable_grad():\n"
    "        t = torch.tensor(float(x), requires_grad=True)\n"
    "        return _g(2 * (t**2 - 3 * t) ** 3, t)[0]\n",
    "nonscalar_error": "def error_grad(w, xs, ts, error):\n"
    "    leaf = torch.ones((), requires_grad=True)\n    leaf.backward()\n"
    "    return leaf.grad * 2 * ((w * xs - ts) * xs).sum()\n",
    "mean_grad": "import gc\n\n\ndef mean_grad(x):\n    return 6 * (x + 2) / x.numel()\n",
}


def _lesson_3_with(cell: str, answer: str) -> bytes:
    nb = nbformat.read(solution_notebook(LESSON_3), as_version=4)
    next(c for c in nb.cells if grade_id(c) == cell).source = answer
    return nbformat.writes(nb).encode()


def test_attacks_on_the_graders_knowledge_earn_nothing_with_two_grading_processes(tmp_path):
    """The corpus's attacks on hidden tests and kernel keys (lesson 1), and answers that get
    around "by hand" or "using autograd" or reach for internals (lesson 3), graded by two
    grading processes at once between honest submissions: each earns nothing for its exercise,
    and every honest neighbour keeps full marks."""
    course = new_course(tmp_path / "course", honest=None)
    attacks = {a["name"]: a["code"] for a in yaml.safe_load(CORPUS.read_text())}
    honest_1, honest_3 = solution_notebook(LESSON).read_bytes(), solution_notebook(LESSON_3)
    for number, name in enumerate(KNOWLEDGE_ATTACKS):  # in grading order: honest, attack, …
        submit(course, f"s{2 * number}_honest", honest_1)
        submit(course, f"s{2 * number + 1}_{name}", answered(attacks[name]))
    for number, (cell, answer) in enumerate(HOW_ATTACKS.items()):
        pair = (
            (f"s{2 * number}_honest", honest_3.read_bytes()),
            (f"s{2 * number + 1}_{cell}", None),
        )
        for student, data in pair:
            folder = course.root / "submitted" / student / LESSON_3
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{LESSON_3}.ipynb").write_bytes(data or _lesson_3_with(cell, answer))
    with GradingSession(LIMITS, jobs=2) as session:
        results = autograde(course, [LESSON, LESSON_3], session=session)
    scores = {(r.lesson, r.student): r.score for r in results}
    full_3 = max(score for (lesson, _), score in scores.items() if lesson == LESSON_3)
    for (lesson, student), score in scores.items():
        if student.endswith("_honest"):
            assert score == (FULL_MARKS if lesson == LESSON else full_3), (lesson, student)
        elif lesson == LESSON:
            assert score == 0, student
        else:
            assert score == full_3 - 2, student  # the exercise attacked earns nothing
    assert scores[(LESSON_3, "s0_honest")] == full_3 > 2
