"""The warm process inside the sandbox: imports torch once, then runs each submission in a fork.

Started by the grading process (`python -m grader.zygote`), it reads requests on stdin and
answers on stdout (see `grader.wire`). For each request it writes the submission's files into a
fresh folder, forks a child that sets resource limits and runs the cells, watches the child's
wall-clock time and output, and afterwards kills every process the submission left behind.
"""

import contextlib
import ctypes
import json
import os
import resource
import select
import shutil
import signal
import sys
import time

from grader import probing, wire

WORK = "/tmp/submission"
REQUEST_LIMIT = 256 * 1024**2


def _warm():
    """Import and exercise what every lesson uses, so that each fork starts warm."""
    os.environ.setdefault("MPLCONFIGDIR", "/tmp/matplotlib")
    import matplotlib

    matplotlib.use("module://matplotlib_inline.backend_inline")
    import torch

    torch.set_num_threads(1)
    from grader import checks, probing  # noqa: F401 -- test cells and probes import them
    from grader.cell_runner import CellRunner

    runner = CellRunner()
    for source in [
        "import torch\n(torch.ones(2, requires_grad=True) ** 2).sum().backward()",
        "import matplotlib.pyplot as plt\nplt.plot([0, 1])\nplt.show()",
    ]:
        runner.run(source)
    runner.shell.execution_count = 1
    return runner


def _warm_with(runner, sources: list[str]) -> None:
    """Run the lessons' own cells once, so their imports and first calls are paid here.

    Only lesson cells of the released notebooks come here, never solutions or hidden tests:
    every fork inherits this process's memory.
    """
    for source in sources:
        runner.run(source)
    import matplotlib.pyplot as plt

    plt.close("all")
    runner.shell.reset(new_session=False)
    runner.shell.execution_count = 1


def _own_memory() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _run_child(runner, request: dict, channel: int) -> None:
    """In the fork: limit ourselves, then run every code cell, reporting each one."""
    limits = request["limits"]
    os.setsid()
    address_space = _own_memory() + limits["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
    cpu = int(limits["notebook_seconds"]) + 5
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.chdir(WORK)
    runner.output_limit = limits["output_bytes"]
    probes = request.get("probes") or {"at": {}}
    loaded = probing.load_probes(probes["source"]) if probes["at"] else {}
    for index, source in request["cells"]:
        wire.send(channel, {"start": index})
        outputs, count, _ = runner.run(source)
        message = {"cell": index, "outputs": outputs, "execution_count": count}
        wire.send(channel, {**message, "truncated": runner.outputs.truncated})
        grade_id = probes["at"].get(str(index))
        if grade_id in loaded:
            seen = probing.run_probe(loaded, grade_id, runner.shell.user_ns, probes["seed"])
            wire.send(channel, {"probe": grade_id, "observations": seen})
    wire.send(channel, {"finished": True})


class _Frames:
    """Incremental reader of wire frames from a non-blocking pipe."""

    def __init__(self, fd: int, limit: int):
        self.fd, self.limit, self.buffer, self.total = fd, limit, b"", 0

    def read(self) -> list[dict] | None:
        """The complete messages available now; None once the pipe is closed."""
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            return None
        self.total += len(chunk)
        if self.total > self.limit:
            raise wire.WireError("over the output limit")
        self.buffer += chunk
        messages = []
        while len(self.buffer) >= wire.HEADER.size:
            (size,) = wire.HEADER.unpack(self.buffer[: wire.HEADER.size])
            if len(self.buffer) < wire.HEADER.size + size:
                break
            body = self.buffer[wire.HEADER.size : wire.HEADER.size + size]
            self.buffer = self.buffer[wire.HEADER.size + size :]
            message = json.loads(body)
            if not isinstance(message, dict):
                raise wire.WireError("not a message")
            messages.append(message)
        return messages


def _watch(pid: int, channel: int, limits: dict) -> dict:
    """Collect the child's cells while enforcing the time and output limits."""
    cells, probes, outcome, detail, current = {}, {}, "graded", "", None
    frames = _Frames(channel, limits["output_bytes"] * 4 + 1_000_000)
    started = cell_started = time.monotonic()
    finished = False
    while True:
        now = time.monotonic()
        deadline = min(started + limits["notebook_seconds"], cell_started + limits["cell_seconds"])
        if now >= deadline:
            which = "notebook" if deadline == started + limits["notebook_seconds"] else "cell"
            outcome = "timed out"
            detail = f"the {which} time limit was reached in cell {current}"
            break
        ready, _, _ = select.select([channel], [], [], deadline - now)
        if not ready:
            continue
        try:
            messages = frames.read()
        except (wire.WireError, ValueError) as error:
            outcome, detail = "output limit", f"the submission wrote too much output ({error})"
            break
        if messages is None:
            break
        for message in messages:
            if "start" in message:
                current, cell_started = message["start"], time.monotonic()
            elif "cell" in message:
                cells[str(message["cell"])] = {
                    "outputs": message.get("outputs", []),
                    "execution_count": message.get("execution_count"),
                }
            elif "probe" in message:
                probes[str(message["probe"])] = message.get("observations")
            elif message.get("finished"):
                finished = True
            if message.get("truncated"):
                outcome = "output limit"
                detail = f"output over {limits['output_bytes']} bytes was cut in cell {current}"
        if finished:  # processes the submission left may still hold the pipe open
            break
    os.killpg(pid, signal.SIGKILL) if _alive(pid) else None
    _, status = os.waitpid(pid, 0)
    if outcome in ("graded", "output limit") and not finished:
        outcome, detail = "kernel died", _death(status, current)
    if outcome == "graded" and _ran_out_of_memory(cells):
        outcome, detail = "memory limit", "a cell ran out of memory"
    return {"cells": cells, "probes": probes, "outcome": outcome, "detail": detail}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _death(status: int, cell) -> str:
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        return f"the process was killed by {sig} in cell {cell}"
    return f"the process exited with status {os.WEXITSTATUS(status)} in cell {cell}"


def _ran_out_of_memory(cells: dict) -> bool:
    for cell in cells.values():
        for out in cell["outputs"]:
            if out.get("output_type") == "error" and (
                out.get("ename") == "MemoryError"
                or "can't allocate memory" in out.get("evalue", "")
            ):
                return True
    return False


def _in_sandbox() -> bool:
    """Whether we run in the sandbox's own namespaces (set by `grader.engine`)."""
    return os.environ.get("GRADER_PID_NAMESPACE") == "1"


def _kill_leftovers(child: int) -> None:
    """Kill every process the submission left: in our own PID namespace, all but us and init.

    Without a PID namespace only the child's session can be found (and a submission that left
    it escapes): the sandbox's namespaces are what make this complete.
    """
    if not _in_sandbox() or os.getpid() > 3:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child, signal.SIGKILL)
        return
    me = os.getpid()
    for _ in range(3):
        others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        if not others:
            return
        for pid in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in others:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.01)


def _mounts_under(folder: str) -> set[str]:
    """The mount points below `folder` (binds of a checkout under /tmp), and their parents."""
    kept = set()
    with open("/proc/self/mountinfo") as table:
        for line in table:
            point = line.split()[4]
            while point.startswith(folder + "/"):
                kept.add(point)
                point = os.path.dirname(point)
    return kept


def _wipe_scratch() -> None:
    """Empty the sandbox's own /tmp and /dev/shm, so nothing passes to the next submission."""
    if not _in_sandbox():
        return  # outside the sandbox these are the machine's own folders
    for scratch in ("/tmp", "/dev/shm"):
        kept = _mounts_under(scratch)
        for folder, dirs, files in os.walk(scratch):
            for name in files:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))
            for name in list(dirs):
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                    dirs.remove(name)
                elif path not in kept:
                    shutil.rmtree(path, ignore_errors=True)
                    dirs.remove(name)
                elif os.path.ismount(path):
                    dirs.remove(name)


def _prepare_folder(files: dict) -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for name, text in files.items():
        path = os.path.normpath(os.path.join(WORK, name))
        if path.startswith(WORK + os.sep):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(bytes.fromhex(text))


def grade(runner, request: dict, private: tuple[int, ...] = ()) -> dict:
    """Run one submission in a limited fork and report its cells and outcome.

    `private` are our own channels to the grading process: the fork closes them.
    """
    _prepare_folder(request.get("files", {}))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in (read_end, *private):
            os.close(fd)
        try:
            _run_child(runner, request, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        return _watch(pid, read_end, request["limits"])
    finally:
        os.close(read_end)
        _kill_leftovers(pid)
        _wipe_scratch()


def main() -> None:
    """Serve requests until stdin closes."""
    libc = ctypes.CDLL(None)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: forks may not ptrace or read our memory
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    stdin, stdout = sys.stdin.fileno(), os.dup(sys.stdout.fileno())
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    runner = _warm()
    wire.send(stdout, {"ready": True})
    while True:
        try:
            request = wire.receive(stdin, REQUEST_LIMIT)
        except wire.WireError:
            return
        if "warm" in request:
            _warm_with(runner, request["warm"])
            wire.send(stdout, {"warmed": True})
        else:
            wire.send(stdout, grade(runner, request, private=(stdin, stdout)))


if __name__ == "__main__":
    main()
