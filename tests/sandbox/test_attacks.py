"""Submissions that attack the grader earn nothing, and harm no honest submission graded after them.

The whole corpus (tests/integrity/attacks.yml) is graded in one run, by one worker, in an order
that puts an honest submission (the solution) before and after every attack: s000_honest,
s001_<attack>, s002_honest, … The honest submission right after an attack keeps full marks only
if the attack left nothing behind that reaches it on the same warm sandbox. The last submission
of the run is the solution with an observer in front (tests/integrity/observer.py) that looks for
anything an earlier submission left where a later one can see it. The kernel's table of users
with keys (/proc/key-users), read as root before and after the run, shows that no submission's
user was left a keyring (keyrings outlive processes; asking for one creates it).
"""

import json
import os
import socket
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
import yaml
from cgroup_host import offered
from integrity_tools import (
    FULL_MARKS,
    LESSON,
    answered,
    attack_values,
    autograded,
    cell_text,
    digests,
    fill,
    new_course,
    solution_with,
    submit,
)
from nbformat.validator import iter_validate

import grader
from grader.cells import autograded_tests, is_test
from grader.commands.export import grade_rows
from grader.course import lessons, solution_notebook, student_notebook
from grader.grading import outcomes
from grader.grading.class_run import autograde
from grader.grading.database import sqlalchemy_engine
from grader.grading.results import Result
from grader.judging.verdict import INTRO, SOURCE_INTRO
from grader.sandbox.inside.isolate import UID_COUNT, UID_FIRST
from grader.sandbox.outside.isolation import Limits, detect_protections

pytestmark = pytest.mark.integration  # grades or serves whole courses through the real pipeline

HERE = Path(__file__).parent.parent / "integrity"
ATTACKS = yaml.safe_load((HERE / "attacks.yml").read_text())
OBSERVER = (HERE / "observer.py").read_text()
# Short time limits keep the few attacks that overrun them cheap; a memory limit small enough for
# the memory attacks to reach; a small output budget, so that the attacks on it stay quick.
LIMITS = Limits(
    cell_seconds=4, notebook_seconds=8, memory_bytes=512 * 1024**2, output_bytes=1024**2
)
SECRET_NAME, SECRET = "PGPASSWORD", "not-for-students-4d1c"
RECORDED_SEED = 12345  # the seed of the solution's report that the replay attacks replay
PLANTED = [
    Path(grader.__file__).parent / "zz_planted_by_an_attack.py",
    Path(sysconfig.get_paths()["purelib"]) / "zz_planted_by_an_attack.pth",
    Path(sysconfig.get_paths()["stdlib"]) / "zz_planted_by_an_attack.py",
]


def _roster() -> list[tuple[str, dict | None]]:
    """(student, attack or None for the honest ones), in the order grading takes them."""
    students = []
    for number, attack in enumerate(ATTACKS):
        students.append((f"s{2 * number:03d}_honest", None))
        students.append((f"s{2 * number + 1:03d}_{attack['name']}", attack))
    students.append((f"s{2 * len(ATTACKS):03d}_honest", None))
    students.append((f"s{2 * len(ATTACKS) + 1:03d}_observer", None))
    return students


ROSTER = _roster()
STUDENT = {attack["name"]: student for student, attack in ROSTER if attack}
AFTER = {attack["name"]: ROSTER[i + 1][0] for i, (_, attack) in enumerate(ROSTER) if attack}
OBSERVER_STUDENT = ROSTER[-1][0]


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


@dataclass
class Run:
    """One grading run over the interleaved roster."""

    course: Path
    results: dict[str, Result]
    before: dict[str, str]
    connections: int
    order: list[str]  # the students in the order their outcomes were recorded
    keyring_users: set[int]  # submission users the kernel holds keys for after the run, not before


def _keyring_users() -> set[int]:
    """The submission users (by their ids' range) the kernel holds keys or keyrings for."""
    lines = Path("/proc/key-users").read_text().splitlines()
    users = {int(line.split(":")[0]) for line in lines}
    return {uid for uid in users if UID_FIRST <= uid < UID_FIRST + UID_COUNT}


@pytest.fixture(scope="module")
def run(tmp_path_factory, reference_server) -> Run:
    """Grade every attack, each between two honest submissions, in one run with one worker."""
    course = new_course(tmp_path_factory.mktemp("attacks") / "course", honest=None)
    listener = Listener()
    recorded = reference_server.observe(LESSON, RECORDED_SEED)
    values = attack_values(course, ROSTER[0][0], listener.port, recorded)
    honest = solution_notebook(LESSON).read_bytes()
    for student, attack in ROSTER[:-1]:
        submit(course, student, answered(fill(attack["code"], values)) if attack else honest)
    submit(course, OBSERVER_STUDENT, solution_with(OBSERVER))
    before = digests(course)
    keyring_users = _keyring_users()
    os.environ[SECRET_NAME] = SECRET  # what an instructor's shell may hold (a database password)
    try:
        graded = autograde(course, LESSON, jobs=1, limits=LIMITS)
    finally:
        listener.close()
        del os.environ[SECRET_NAME]
    db_url = course.db_url
    with sqlalchemy_engine(db_url).connect() as conn:
        rows = conn.execute(outcomes.OUTCOMES.select()).all()
    order = [row.student for row in sorted(rows, key=lambda row: row.recorded_at)]
    results = {r.student: r for r in graded}
    left_keyrings = _keyring_users() - keyring_users
    return Run(course, results, before, listener.connections, order, left_keyrings)


def test_the_corpus_covers_every_kind_of_attack():
    """The corpus holds the attacks the grader must withstand, each under its own name."""
    names = [attack["name"] for attack in ATTACKS]
    assert len(names) >= 70 and len(set(names)) == len(names)


def test_each_attack_is_graded_between_two_honest_submissions(run):
    """One worker took the students in sorted order: honest, attack, honest, attack, …"""
    assert run.order == [student for student, _ in ROSTER]


def test_the_first_honest_submission_keeps_full_marks(run):
    """The solution graded first, on a fresh sandbox, scores full marks."""
    first = run.results[ROSTER[0][0]]
    assert (first.score, first.outcome) == (FULL_MARKS, "graded"), first.detail


@pytest.mark.parametrize("attack", ATTACKS, ids=[a["name"] for a in ATTACKS])
def test_attack_earns_nothing(run, attack):
    """The attack scores 0, and its outcome says what happened: a memory attack spread over
    processes is stopped where the host offers a memory cgroup, and runs to its end (memory
    limited per process, as the protections line says) where it offers none."""
    result = run.results[STUDENT[attack["name"]]]
    assert result.score == 0, (result.outcome, result.detail)
    expected = attack["outcome"]
    if attack.get("over_processes") and not offered().memory:
        expected = "graded"
    assert result.outcome == expected, result.detail


@pytest.mark.parametrize("attack", ATTACKS, ids=[a["name"] for a in ATTACKS])
def test_the_next_submission_is_unharmed(run, attack):
    """The honest submission graded right after the attack, on the same worker, scores full
    marks."""
    result = run.results[AFTER[attack["name"]]]
    assert (result.score, result.outcome) == (FULL_MARKS, "graded"), result.detail


FORGERIES = [a for a in ATTACKS if a.get("forges")]


@pytest.mark.parametrize("attack", FORGERIES, ids=[a["name"] for a in FORGERIES])
def test_forged_test_cells_are_failed_by_the_judge(run, attack):
    """The test cells the forgery made pass in its own process are failed from outside it."""
    nb = autograded(run.course, STUDENT[attack["name"]])
    errors = [
        [out.evalue for out in nb.cells[index].outputs if out.output_type == "error"]
        for index in autograded_tests(nb)
    ]
    overturned = [e for e in errors if e and all(v.startswith((INTRO, SOURCE_INTRO)) for v in e)]
    assert overturned, errors


REFUSALS = [a for a in ATTACKS if a.get("refused")]


@pytest.mark.parametrize("attack", REFUSALS, ids=[a["name"] for a in REFUSALS])
def test_calls_that_reach_past_a_submission_are_refused(run, attack):
    """Each keyring, namespace, tracing, socket or kernel call the attack makes fails with the
    error the system-call filter gives it, and each look at another process with the error of a
    /proc that hides it (where each submission has one), as the attack printed."""
    if attack.get("hidden_processes") and not detect_protections()[0].processes_hidden:
        pytest.skip("no /proc of each submission's own here, as the protections line says")
    text = cell_text(autograded(run.course, STUDENT[attack["name"]]), "make_leaf")
    calls = attack["refused"].items()
    allowed = [call for call, error in calls if f"{call} -> -1 {error}\n" not in text]
    assert allowed == [], text


def test_no_submission_user_is_left_a_keyring(run):
    """After the run the kernel holds no key or keyring for any submission's user: none could
    make one, and nothing made one for it."""
    assert run.keyring_users == set()


LEFTOVER_KINDS = [
    "tmp",
    "dev_shm",
    "sysv_ipc",
    "mqueue",
    "processes",
    "kernel_keys",
    "abstract_sockets",
    "tcp_listeners",
    "udp_sockets",
    "hostname",
    "shared_descriptions",
    "environment",
    "modules_from_scratch",
]


@pytest.fixture(scope="module")
def leftovers(run) -> dict:
    """What the last submission of the run found of all the earlier ones. Its answers are right,
    but its first cell, which does the looking, reaches for the interpreter's internals: that
    exercise (test_make_leaf, 2 points) earns nothing and is flagged for review."""
    result = run.results[OBSERVER_STUDENT]
    assert (result.score, result.outcome) == (FULL_MARKS - 2, "graded"), result.detail
    assert result.review.startswith("make_leaf imports ctypes"), result.review
    text = cell_text(autograded(run.course, OBSERVER_STUDENT), "make_leaf")
    line = next(line for line in text.splitlines() if line.startswith("LEFTOVERS "))
    return json.loads(line.removeprefix("LEFTOVERS "))


@pytest.mark.parametrize("kind", LEFTOVER_KINDS)
def test_the_last_submission_finds_nothing_left(leftovers, kind):
    """No file, process, IPC object, kernel key, socket, setting or module of an earlier
    submission is there for the last one, graded by the same sandbox as the same user."""
    assert leftovers[kind] == []


def test_grading_leaves_every_submission_byte_identical(run):
    """No attack (and not the grader) changed a submitted file."""
    assert digests(run.course) == run.before


def test_nothing_was_written_outside_the_sandbox(run):
    """Neither the canary in the course folder nor a file in the grader, venv or stdlib exists."""
    written = [p for p in [run.course.root / "canary.txt", *PLANTED] if p.exists()]
    assert written == []


def test_no_connection_left_the_sandbox(run):
    """The loopback server outside the sandbox was never reached."""
    assert run.connections == 0


def test_no_submission_stops_the_sandbox(run):
    """Whatever a submission does to its own processes, the template it was forked from survives
    it: a template that stops takes the submission's cleanup with it and makes the next one wait
    for a new one."""
    stopped = {s: r.detail for s, r in run.results.items() if "the sandbox stopped" in r.detail}
    protections, _ = detect_protections()
    if protections.own_user:
        assert stopped == {}
    else:  # submissions run as the grader's own user, which can signal the template
        assert set(stopped) <= {STUDENT["kill_the_grader"]}, stopped
        assert "submissions run as the grader's own user" in protections.describe()


def test_recorded_details_hold_no_control_characters(run):
    """What the grader records of each outcome prints as it reads: no escape code, no bidi."""
    unsafe = {
        student: result.detail
        for student, result in run.results.items()
        if not all(char.isprintable() for char in result.detail)
    }
    assert unsafe == {}


def test_autograded_notebooks_stay_within_the_output_budget(run):
    """What the grader writes for a submission is bounded by the output it allows the run."""
    budget = LIMITS.output_bytes * 4 + 1_000_000
    sizes = {
        student: path.stat().st_size
        for student, _ in ROSTER
        if (path := run.course.root / "autograded" / student / LESSON / f"{LESSON}.ipynb").is_file()
    }
    submitted = len(solution_notebook(LESSON).read_bytes())
    over = {student: size for student, size in sizes.items() if size > budget + 2 * submitted}
    assert over == {}


def test_every_autograded_notebook_is_a_valid_notebook(run):
    """Whatever outputs an attack makes, the notebook the grader writes holds to the schema
    (it is written without a second check against it)."""
    invalid = {}
    for student, _ in ROSTER:
        path = run.course.root / "autograded" / student / LESSON / f"{LESSON}.ipynb"
        if path.is_file():
            written = nbformat.from_dict(json.loads(path.read_text()))  # as written: no repair
            if not nbformat.validator.isvalid(written):
                invalid[student] = [e.message[:200] for e in iter_validate(written)]
    assert len(invalid) == 0 and len(run.results) > 20, invalid


def test_the_sandbox_is_active_here():
    """The attack tests mean something only with the namespaces on, and each of the memory
    cgroup, the CPU share, users of the sandbox's own and a /proc of each submission's own on
    wherever the host offers it (root on cgroup v1; on v2, root or a delegated user)."""
    protections, _ = detect_protections()
    host, root = offered(), os.geteuid() == 0
    assert protections.pid_namespace and protections.per_submission, protections.describe()
    assert protections.own_user == protections.processes_hidden == root, protections.describe()
    assert protections.memory_cgroup == host.memory, protections.describe()
    assert protections.cpu_share == host.cpu, protections.describe()


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
    seen = cell_text(autograded(course, "b_looks"), "make_leaf")
    assert "submission" in seen, seen
    assert not any(name in seen for name in ("note", "left", "link")), seen


def test_the_grading_process_environment_never_reaches_a_submission(run):
    """A password in the grader's environment is not in any autograded notebook, even the one
    of the attack that prints its whole environment."""
    leaked = [
        student
        for student, _ in ROSTER
        if (path := run.course.root / "autograded" / student / LESSON / f"{LESSON}.ipynb").is_file()
        and SECRET in path.read_text(errors="replace")
    ]
    assert leaked == []
    student = STUDENT["environment_of_the_grader_printed"]
    printed = run.course.root / "autograded" / student / LESSON
    # what it does see is what stock nbgrader's autograde sets: a notebook can tell it is graded
    assert "'NBGRADER_EXECUTION': 'autograde'" in (printed / f"{LESSON}.ipynb").read_text()


def _hidden_test_lines() -> set[str]:
    """The lines of every lesson's hidden tests that no released notebook and no attack holds,
    whole or inside a longer line."""
    hidden, public = set(), set(yaml.safe_dump(ATTACKS).splitlines())
    for lesson in lessons():
        for cell in nbformat.read(student_notebook(lesson), as_version=4).cells:
            public.update(line.strip() for line in cell.source.splitlines())
        for cell in nbformat.read(solution_notebook(lesson), as_version=4).cells:
            inside = False
            for line in cell.source.splitlines() if is_test(cell) else []:
                if "BEGIN HIDDEN TESTS" in line or "END HIDDEN TESTS" in line:
                    inside = "BEGIN" in line
                elif inside:
                    hidden.add(line.strip())
    shown = "\n".join(public)  # a hidden line that a public one contains is no secret
    return {line for line in hidden - public if len(line) > 15 and line not in shown}


def _texts(value) -> list[str]:
    """Every string in a notebook's outputs."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _texts(item)]


def test_no_hidden_test_of_any_lesson_is_in_a_submissions_process(run):
    """No submission finds a hidden test of any lesson in its process, though the one that looks
    everywhere finds every lesson's released test cells: no output of the run quotes one."""
    searcher = autograded(run.course, STUDENT["hidden_tests_anywhere_in_the_process"])
    found = cell_text(searcher, "make_leaf")
    assert int(found.split()[0]) >= 40, found  # it reached the template's remembered cells
    lines = _hidden_test_lines()
    assert len(lines) > 100
    quoted = {}
    for student, _ in ROSTER:
        path = run.course.root / "autograded" / student / LESSON / f"{LESSON}.ipynb"
        if path.is_file():
            outputs = [c.get("outputs", []) for c in nbformat.read(path, as_version=4).cells]
            text = "\n".join(_texts(outputs))
            quoted[student] = [line for line in lines if line in text]
    assert {student: lines for student, lines in quoted.items() if lines} == {}


def test_answers_that_reach_for_internals_are_flagged_for_review(run):
    """Attacks whose answer cell imports gc or walks the shell are flagged in the results and the
    export, naming the cell; no honest submission is (the observer is: it imports ctypes)."""
    flagged = {student: result.review for student, result in run.results.items() if result.review}
    for name in ("print_hidden_tests_and_probes", "hidden_tests_anywhere_in_the_process"):
        assert flagged[STUDENT[name]].startswith("make_leaf imports gc"), flagged
    honest = [student for student, attack in ROSTER[:-1] if attack is None]
    assert [student for student in honest if student in flagged] == []
    _, rows = grade_rows(run.course)
    exported = {row["student_id"]: row["review"] for row in rows if row["assignment"] == LESSON}
    assert {student: exported[student] for student in flagged} == flagged
