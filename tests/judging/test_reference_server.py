"""The reference server: one server answers several grading processes, each on its channel,
keeps a lesson per channel, and a channel goes on if its server stops."""

import os
import signal

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
    one.ask(first, 3)
    two.ask(second, 3)
    two.ask(second, 4)
    one.ask(first, 4)
    assert two.answer(second, 3) == reference_server.observe(second, 3)
    assert one.answer(first, 3) == reference_server.observe(first, 3)
    assert one.answer(first, 4) == reference_server.observe(first, 4)
    assert two.answer(second, 4) == reference_server.observe(second, 4)


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
    channel.ask(lesson, 5)
    os.kill(server.process.pid, signal.SIGKILL)
    try:
        assert channel.answer(lesson, 5) == reference_server.observe(lesson, 5)
        assert channel.own is not None  # answered by a server of its own
        assert channel.observe(lesson, 6) == reference_server.observe(lesson, 6)
    finally:
        channel.stop()
        server.stop()


def test_the_solution_failing_is_reported_not_taken_for_a_stopped_server(shared):
    with pytest.raises(ReferenceRunError, match="no such lesson"):
        shared.channel(0).observe("99_no_such_lesson", 1)
    assert shared.channel(0).own is None


def _lesson_processes(server_pid: int) -> set[int]:
    with open(f"/proc/{server_pid}/task/{server_pid}/children") as children:
        return {int(pid) for pid in children.read().split()}


def test_the_lesson_asked_for_next_is_prepared_meanwhile():
    first, second = lessons()[:2]
    server = ReferenceServer(channels=2)
    server.start()
    try:
        channel = server.channel(0)
        channel.ask(first, 1, then=second)
        channel.answer(first, 1)
        prepared = _lesson_processes(server.process.pid)
        assert len(prepared) == 2  # the first lesson's process, and the next one's
        channel.observe(second, 1)
        assert _lesson_processes(server.process.pid) == prepared  # not started again
    finally:
        server.stop()


OBSERVE_BOTH_WAYS = """
import json, os, sys
import nbformat
from grader.course import lessons, solution_notebook
from grader.judging import reference_server as server
from grader.judging.reference import probes_file
from grader.probing import load_probes

runner = server.warm_runner()
ipython = lambda runner, source: runner.run(source)
differ = []
for lesson in lessons():
    notebook = solution_notebook(lesson)
    os.chdir(notebook.parent)
    probes = load_probes(probes_file(lesson).read_text())
    prefix, rest = server._split(nbformat.read(notebook, as_version=4))
    for cell in prefix:
        runner.run(cell.source)
    precompiled = server.precompiled(runner, rest)
    for seed in (1, 2):
        seen = []
        for run in (server.execute, precompiled, ipython):  # each from the lesson's state, forked
            read, write = os.pipe()
            if os.fork() == 0:
                observed = server._observe_exercises(runner, rest, probes, seed, run)
                os.write(write, json.dumps(observed).encode())
                os._exit(0)
            os.close(write)
            with os.fdopen(read) as answer:
                seen.append(json.load(answer))
            os.wait()
        if not seen[0] == seen[1] == seen[2] or not seen[2]:
            differ.append((lesson, seed))
print(json.dumps(differ))
"""


def test_the_solutions_cells_leave_what_a_kernels_run_leaves():
    """The reference runs the exercises' cells without IPython's display machinery, compiled
    in each seed or once before the seeds: every lesson's probes observe the same, seed for
    seed, as after IPython's own run."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", OBSERVE_BOTH_WAYS], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == []
