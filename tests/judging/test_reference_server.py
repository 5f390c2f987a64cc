"""The reference server: one server answers several grading processes, each on its channel,
keeps a lesson per channel, and a channel goes on if its server stops."""

import contextlib
import io
import os
import signal
import time

import pytest

from grader.course import lessons
from grader.judging.reference import ReferenceRunError, ReferenceServer


@pytest.fixture(scope="module")
def shared():
    """A reference server with two channels, as two grading processes share it."""
    server = ReferenceServer(channels=2)
    server.start()
    yield server
    server.stop()


def test_two_channels_asking_at_once_each_get_their_own_answers(shared, reference_server):
    first, second = lessons()[:2]
    one, two = shared.channel(0), shared.channel(1)
    one.ask(first, [3])
    two.ask(second, [3])
    two.ask(second, [4])
    one.ask(first, [4])
    assert two.answer(second, [3]).of(3) == reference_server.observe(second, 3)
    assert one.answer(first, [3]).of(3) == reference_server.observe(first, 3)
    assert one.answer(first, [4]).of(4) == reference_server.observe(first, 4)
    assert two.answer(second, [4]).of(4) == reference_server.observe(second, 4)


def test_a_lesson_is_kept_per_channel(shared):
    first, second = lessons()[:2]
    shared.channel(0).observe(first, 1)
    shared.channel(1).observe(second, 1)
    kept = _lesson_processes(shared.process.pid)
    assert len(kept) == 2
    shared.channel(0).observe(first, 2)
    shared.channel(1).observe(second, 2)
    assert _lesson_processes(shared.process.pid) == kept  # neither was run again
    shared.channel(0).observe(lessons()[2], 1)  # a third lesson takes the place of one
    assert len(_lesson_processes(shared.process.pid)) == 2


def test_a_channel_whose_server_stopped_goes_on_with_its_own(reference_server):
    lesson = lessons()[0]
    server = ReferenceServer(channels=2)
    server.start()
    channel = server.channel(1)
    channel.ask(lesson, [5])
    os.kill(server.process.pid, signal.SIGKILL)
    try:
        assert channel.answer(lesson, [5]).of(5) == reference_server.observe(lesson, 5)
        assert channel.own is not None  # answered by a server of its own
        assert channel.observe(lesson, 6) == reference_server.observe(lesson, 6)
    finally:
        channel.stop()
        server.stop()


def test_the_solution_failing_is_reported_not_taken_for_a_stopped_server(shared):
    with pytest.raises(ReferenceRunError, match="no such lesson"):
        shared.channel(0).observe("99_no_such_lesson", 1)
    assert shared.channel(0).own is None


def test_a_server_forked_from_its_grading_process_starts_afresh(tmp_path, reference_server):
    """Forked from the process that starts it, the server keeps none of that process's files
    open (each descriptor is /dev/null), runs in a session of its own, ends when its channels
    close, and its lessons run in a shell of their own, whatever shell and standard streams that
    process has."""
    from IPython.core.interactiveshell import InteractiveShell

    lesson = lessons()[0]
    had_shell = InteractiveShell.initialized()
    InteractiveShell.instance()  # a plain shell, which the server's lesson shell would refuse
    with open(tmp_path / "grading-process-file", "w"), contextlib.redirect_stdout(io.StringIO()):
        server = ReferenceServer()  # started where standard output is no file (pytest's capsys)
        server.start()
    try:
        assert server.channel(0).observe(lesson, 3) == reference_server.observe(lesson, 3)
        assert server.channel(0).own is None  # answered by this server, not a stand-in
        held = {os.readlink(f"/proc/{server.process.pid}/fd/{fd}") for fd in _fds(server)}
        assert not any("grading-process-file" in path for path in held), held
        assert os.getsid(server.process.pid) == server.process.pid
        server.channels[0].sock.close()  # its one channel hangs up: it ends
        for _ in range(300):
            if server.process.poll() is not None:
                break
            time.sleep(0.1)
        assert server.process.poll() is not None
    finally:
        server.stop()
        if not had_shell:
            InteractiveShell.clear_instance()


def _fds(server) -> list[str]:
    return os.listdir(f"/proc/{server.process.pid}/fd")


def _lesson_processes(server_pid: int) -> set[int]:
    with open(f"/proc/{server_pid}/task/{server_pid}/children") as children:
        return {int(pid) for pid in children.read().split()}


def test_the_lesson_asked_for_next_is_prepared_meanwhile():
    first, second = lessons()[:2]
    server = ReferenceServer(channels=2)
    server.start()
    try:
        channel = server.channel(0)
        channel.ask(first, [1], then=second)
        channel.answer(first, [1])
        prepared = _lesson_processes(server.process.pid)
        assert len(prepared) == 2  # the first lesson's process, and the next one's
        channel.observe(second, 1)
        assert _lesson_processes(server.process.pid) == prepared  # not started again
    finally:
        server.stop()


OBSERVE_BOTH_WAYS = """
import json, os, sys
import nbformat
from grader.course import solution_notebook
from grader.judging import reference_server as server
from grader.judging.reference import probes_file
from grader.forking import prepare_to_fork
from grader.probing import load_probes
import torch

torch.set_num_threads(1)  # as the server runs: a fork after torch's thread pool ran can hang
SEEDS = [1, 2, 3]
runner = server.warm_runner()
ipython = lambda runner, source: runner.run(source)
differ = []
for lesson in sys.argv[1:]:
    notebook = solution_notebook(lesson)
    os.chdir(notebook.parent)
    probes = load_probes(probes_file(lesson).read_text())
    prefix, rest = server._split(nbformat.read(notebook, as_version=4))
    for cell in prefix:
        runner.run(cell.source)
    precompiled = server.precompiled(runner, rest)
    prepare_to_fork()

    def observed(seeds, run):  # from the lesson's state, in a fork
        read, write = os.pipe()
        if os.fork() == 0:
            found = server._observe_exercises(runner, rest, probes, seeds, run)
            os.write(write, json.dumps(found).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as answer:
            found = json.load(answer)
        os.wait()
        return found

    batch = observed(SEEDS, precompiled)
    for seed, in_batch in zip(SEEDS, batch):
        alone = [observed([seed], run)[0] for run in (server.execute, precompiled, ipython)]
        if not alone[0] == alone[1] == alone[2] == in_batch or not alone[2]:
            differ.append((lesson, seed))
print(json.dumps(differ))
"""


def test_the_solutions_cells_leave_what_a_kernels_run_leaves(lesson):
    """The reference runs the exercises' cells without IPython's display machinery, compiled
    in each seed or once before the seeds, and once for a batch of seeds: every lesson's probes
    observe the same, seed for seed, as after IPython's own run for that seed alone (no probe
    changes what the cells after it, or the next seed's probe, see). One lesson per test, so
    the lessons spread over the workers and each has the whole time limit."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", OBSERVE_BOTH_WAYS, lesson],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_a_batch_of_seeds_is_answered_seed_for_seed_as_each_alone(shared, reference_server):
    lesson = lessons()[3]
    shared.channel(0).ask(lesson, [21, 22, 23])
    answers = shared.channel(0).answer(lesson, [21, 22, 23])
    assert [answers.of(seed) for seed in (21, 22, 23)] == [
        reference_server.observe(lesson, seed) for seed in (21, 22, 23)
    ]
    assert answers.of(21) != answers.of(22)


@pytest.mark.parametrize("seeds", [[], [True], ["1"], 7, [1] * 65, None])
def test_a_request_without_a_usable_list_of_seeds_is_refused(shared, seeds):
    channel = shared.channel(0)
    channel.send(lessons()[0], seeds, None)
    with pytest.raises(ReferenceRunError, match="no such lesson or seeds"):
        channel.receive(lessons()[0], seeds, timeout=60)
    assert channel.observe(lessons()[0], 1)  # the server goes on
