"""The reference server: one server answers several grading processes, each on its channel,
keeps a lesson per channel, and a channel goes on if its server stops."""

import json
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
        deadline = time.monotonic() + 60  # once the server has warmed up
        while len(prepared := _lesson_processes(server.process.pid)) < 2:
            assert time.monotonic() < deadline, prepared
            time.sleep(0.1)
        assert len(prepared) == 2  # the first lesson's process, and the next one's
        channel.observe(second, 1)
        assert _lesson_processes(server.process.pid) == prepared  # not started again
    finally:
        server.stop()


def _observed_half_and_fully_warm(lesson: str, seed: int) -> list:
    """In this process: a lesson's observations from a process forked off a half-warm runner
    (the names its warming cells made still there), then off the fully warm one."""
    from grader.judging.reference_server import start_lesson, warm_runner, warming_cells
    from grader.sandbox import wire

    runner, cells = warm_runner(warm=False), warming_cells()

    def observed() -> dict:
        process = start_lesson(lesson, [], runner)
        try:
            wire.send(process.requests, "seed", seed=seed)
            return wire.receive(process.answers, 1 << 26)
        finally:
            process.close()

    for source in cells[: len(cells) // 2]:
        runner.run(source)
    half_warm = ["plain" in runner.shell.user_ns, observed()]  # lesson 1's first cells ran
    runner.warm_up(cells[len(cells) // 2 :])
    return [*half_warm, observed()]


def test_a_lesson_process_forked_while_the_server_warms_up_observes_the_same():
    """The server answers before it has run all its warming cells: a lesson process forked
    half-way forgets them, and observes what one forked from the warm server does. (Run in a
    child: the cell runner's shell is one per process.)"""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, json.dumps(_observed_half_and_fully_warm(lessons()[1], 7)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        names_left, half_warm, warm = json.loads(answer.read())
    os.waitpid(pid, 0)
    assert names_left and half_warm["kind"] == "observations" and half_warm == warm
