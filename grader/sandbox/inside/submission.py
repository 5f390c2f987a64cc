"""Runs inside the sandbox, in each submission's process: forked ahead by its attendant, it
isolates itself, waits for its submission's pipes, then runs the cells and reports each one.

No server ever reads a request, a cell or a report: the process reads its request and reports
its cells straight to the grading process, so no submission's data is ever in the memory the next
submission's process is forked from.
"""

import contextlib
import dataclasses
import os
import signal
import socket
import sys
import traceback
from dataclasses import dataclass

from grader.alarm import alarm_after
from grader.sandbox import wire
from grader.sandbox.inside.import_path import search_folder_first
from grader.sandbox.inside.isolate import isolate, limit, submission_uid
from grader.sandbox.inside.settings import Settings
from grader.sandbox.wire import FILES_BACK_BYTES, FILES_BACK_COUNT, Kind

WORK = "/tmp/submission"
REQUEST_LIMIT = 256 * 1024**2


def _prepare_folder(files: dict) -> None:
    os.makedirs(WORK, exist_ok=True)
    for name, text in files.items():
        path = os.path.normpath(os.path.join(WORK, name))
        if path.startswith(WORK + os.sep):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(bytes.fromhex(text))


@contextlib.contextmanager
def interrupted_after(seconds: float):
    """Interrupt the code that runs longer than `seconds` (KeyboardInterrupt), as nbgrader's
    kernel is interrupted on a cell timeout: the cell fails and the notebook goes on. A
    submission that turns the alarm off only loses that: the grading process's limits stand.
    Gives a list that holds True once the alarm has rung."""
    rang = []

    def interrupt(signum, frame):
        rang.append(True)
        signal.default_int_handler(signum, frame)

    with alarm_after(seconds, interrupt):
        yield rang


def _run_submission(runner, settings: Settings, pipes: socket.socket, cgroup_fd) -> None:
    """In the fork: isolate, then wait for the submission's pipes on `pipes`; limit, then run
    every code cell, reporting each one."""
    os.setsid()
    counted_by_cgroup = cgroup_fd is not None
    if counted_by_cgroup:
        os.write(cgroup_fd, b"0")
        os.close(cgroup_fd)
    isolate(settings, keep=(pipes.fileno(),))
    _, (request_fd, report_fd) = wire.receive_fds(pipes)  # its submission has come
    pipes.close()
    request = wire.receive(request_fd, REQUEST_LIMIT)  # then its drawn functions' answers
    limits = request["limits"]
    limit(limits, counted_by_cgroup)
    environment = request.get("environment") or {}
    os.environ.update({k: v for k, v in environment.items() if type(k) is type(v) is str})
    _prepare_folder(request.get("files", {}))
    os.chdir(WORK)
    runner.output_limit = limits["output_bytes"]
    from grader import probing  # imported by the template's warm-up already
    from grader.remote_functions import RemoteFunctions

    probes = request.get("probes") or {"at": {}}
    functions = RemoteFunctions.over_pipes(report_fd, request_fd)
    drawing = probing.Drawing(probes.get("seed", 0), functions)
    loaded = probing.load_probes(probes["source"]) if probes["at"] else {}
    if probes["at"]:
        # A lesson judged by its probes ships no module: a file beside its notebook is found
        # last, so none stands in for a module the judge's reading of the cells knows (numpy)
        sys.path.append(WORK)
    else:
        # As a kernel started in the folder: an assignment's helper module there wins, whatever
        # module of its name the template imported.
        search_folder_first(WORK)
    seconds = limits["cell_seconds"]
    for index, source in request["cells"]:
        wire.send(report_fd, Kind.START, cell=index)
        rang = []
        try:
            with interrupted_after(seconds) as rang:
                outputs, count, _ = runner.run(source)
        except KeyboardInterrupt:  # the alarm rang after the cell's end, before it was disarmed
            outputs, count = runner.outputs.items, None
        truncated = runner.outputs.truncated
        wire.send(
            report_fd,
            Kind.CELL,
            cell=index,
            outputs=outputs,
            count=count,
            truncated=truncated,
            interrupted=bool(rang),
        )
        grade_id = probes["at"].get(str(index))
        if grade_id in loaded:
            with interrupted_after(seconds):  # run_probe reports the interruption as an error
                seen = probing.run_probe(loaded, grade_id, runner.shell.user_ns, drawing)
            wire.send(report_fd, Kind.PROBE, test=grade_id, observations=seen)
    if request.get("files_back"):
        files, left_out = _files_left(request.get("files", {}))
        wire.send(report_fd, Kind.FILES, files=files, left_out=left_out)
    wire.send(report_fd, Kind.FINISHED)


def _files_left(given: dict[str, str]) -> tuple[dict[str, str], int]:
    """The regular files the run left in its folder that it was not given as they are (no
    notebook), hex-encoded, up to FILES_BACK_BYTES and FILES_BACK_COUNT in all, and how many
    were left out for those limits: the next notebook of the assignment runs beside them, as it
    would in nbgrader's one folder."""
    found, total, left_out = {}, 0, 0
    for root, dirs, names in os.walk(WORK):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            if name.endswith(".ipynb") or not os.path.isfile(path) or os.path.islink(path):
                continue
            size, relative = os.path.getsize(path), os.path.relpath(path, WORK)
            if total + size > FILES_BACK_BYTES or len(found) >= FILES_BACK_COUNT:
                left_out += 1
                continue
            with open(path, "rb") as handle:
                data = handle.read(size).hex()
            if given.get(relative) != data:
                found[relative] = data
                total += size
    return found, left_out


@dataclass
class Ahead:
    """The next submission's process, forked before its submission comes: `pipes` takes it the
    submission's two pipes."""

    pid: int
    pipes: socket.socket

    def start(self, fds: list[int]) -> None:
        """Hand it the submission's pipes (closing ours): it runs the submission now."""
        try:
            wire.send_fds(self.pipes, Kind.FORK, fds)
        finally:
            self.pipes.close()
            for fd in fds:
                os.close(fd)

    def discard(self) -> None:
        """Stop it unused."""
        self.pipes.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def fork_ahead(runner, settings: Settings, control: socket.socket, cgroup_fd) -> Ahead:
    """Fork the next submission's process now, when the last one's processes are gone: it
    isolates itself while the grading process records the last one's grades (entering the
    memory cgroup alone waits out a kernel grace period, about 10 ms), then waits for its
    submission."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            ours.close()
            control.close()
            for fd in settings.server_fds:  # the lesson server's own channel is not theirs
                os.close(fd)
            own = dataclasses.replace(settings, uid=submission_uid())
            _run_submission(runner, own, theirs, cgroup_fd)
        except BaseException:  # the grading process sees the missing "finished"; the log, why
            traceback.print_exc()
            code = 70
        finally:
            os._exit(code)
    theirs.close()
    return Ahead(pid, ours)
