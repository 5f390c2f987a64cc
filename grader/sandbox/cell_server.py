"""The warm cell server inside the sandbox: it runs submissions' cells, and grades nothing.

Started by the grading side (`python -m grader.sandbox.cell_server`), the template imports torch
once and warms itself with the released lessons' own cells (instructor code, never a
submission's, read from its stdin). Each grading process has a channel into it: a control
socket, and the cgroups its submissions go to. The template forks an *attendant* for each
channel; when a channel asks for a lesson, the template passes it on to that lesson's *lesson
server* (forked from the template, it runs the lesson's first cells once), which forks a new
attendant for the channel from there. Each of them shares the warm memory it was forked from.

For each submission the grading process hands its attendant two fresh pipes; the attendant
gives them to a child it forked ahead (once the last submission's processes were gone), which
has isolated itself meanwhile, and closes its own copies: no server ever reads a request, a cell
or a report, so no submission's data is ever in the memory the next submission's process is
forked from. The child reads its request and reports its cells straight to the grading process.
When told to clean, the attendant kills every process below itself, answers once none of them can
run again, and waits for them all to end before it takes the next submission.

The child isolates itself before it runs anything of the submission: as root it enters the
memory cgroup it is given, unshares a mount, an IPC and a network namespace, mounts a fresh /tmp
and /dev/shm, and drops to a user of its own; then it installs the system-call filter
(`grader.sandbox.syscall_filter`: no keyrings, namespaces, tracing or mounts) and sets its
resource limits.
"""

import contextlib
import ctypes
import os
import resource
import secrets
import select
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from functools import partial

from grader.forking import back_with_huge_pages, prepare_to_fork
from grader.sandbox import syscall_filter, wire
from grader.sandbox.wire import Kind

WORK = "/tmp/submission"
REQUEST_LIMIT = 256 * 1024**2
SCRATCH = ("/tmp", "/dev/shm")
VIRTUAL_HEADROOM = 4 * 1024**3
UID_FIRST, UID_COUNT = 1_000_000_000, 1_000_000_000  # owned by no one on a real system
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 2, 4, 4096, 8192, 16384, 1 << 18
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 4, 36, 38

_libc = ctypes.CDLL(None, use_errno=True)


def _warm():
    """Import and exercise what every lesson uses, so that each fork starts warm."""
    os.environ.setdefault("MPLCONFIGDIR", "/tmp/matplotlib")
    import matplotlib

    matplotlib.use("module://matplotlib_inline.backend_inline")
    import torch

    torch.set_num_threads(1)
    from grader import checks, probing  # noqa: F401 -- test cells and probes import them
    from grader.sandbox.cell_runner import CellRunner

    runner = CellRunner()
    for source in [
        "import torch\n(torch.ones(2, requires_grad=True) ** 2).sum().backward()",
        "import matplotlib.pyplot as plt\nplt.plot([0, 1])\nplt.show()",
        # An optimizer's first step imports torch._dynamo (0.7 s): paid here once, not by the
        # server of each lesson that trains.
        "torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1).step()",
    ]:
        runner.run(source)
    runner.shell.execution_count = 1
    return runner


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def _mount(source, target, fstype, flags, options=None) -> None:
    enc = lambda s: s.encode() if isinstance(s, str) else s  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(options)), target)


def _binds_under(folder: str) -> list[str]:
    """The outermost mount points below `folder`: the checkout's binds when it lives in /tmp."""
    points = []
    with open("/proc/self/mountinfo") as table:
        for line in table:
            point = line.split()[4]
            if point.startswith(folder + "/"):
                points.append(point)
    return [p for p in points if not any(p.startswith(q + "/") for q in points if q != p)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]


def _own_user_namespace() -> None:
    """Unprivileged: a user namespace of our own (same ids) whose capabilities allow the mounts."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET), "unshare")
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # the template is not: its forks own no /proc/self
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _drop_capabilities() -> None:
    """Give up every capability the user namespace gave us (our ids are not 0 in it)."""
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def _fresh_scratch(size: int, as_root: bool) -> None:
    """Our own mount, IPC and network namespaces, with a new, empty /tmp and /dev/shm (and no
    socket another submission listens on).

    A new tmpfs is staged on /dev/shm, the binds that live under /tmp are bound into it, and it
    is moved over /tmp; then /dev/shm gets a tmpfs of its own.
    """
    if as_root:
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET), "unshare")
    else:
        _own_user_namespace()
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    options = f"size={size},mode=1777"
    binds = _binds_under("/tmp")
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, options)
    for point in binds:
        staged = "/dev/shm" + point[len("/tmp") :]
        os.makedirs(staged, exist_ok=True)
        _mount(point, staged, None, MS_BIND | MS_REC)
    _mount("/dev/shm", "/tmp", None, MS_MOVE)
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, options)


def submission_uid() -> int:
    """A user id of the submission's own: no file, process or limit is shared."""
    return UID_FIRST + secrets.randbelow(UID_COUNT)


def _drop_privileges(uid: int) -> None:
    """Become the submission's own user, with no capability left and none to regain."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _limit(limits: dict, counted_by_cgroup: bool) -> None:
    """Set the per-process limits. Where the cgroup counts memory, the address-space limit only
    turns one huge request into a MemoryError: virtual size is not memory, so it gets headroom.
    """
    headroom = VIRTUAL_HEADROOM if counted_by_cgroup else 0
    address_space = _own_memory() + limits["memory_bytes"] + headroom
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
    cpu = int(limits["notebook_seconds"]) + 5
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _own_memory() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _writable(path) -> bool:
    """Whether `path` may be a folder the submission can write to (a relative path is its
    working folder)."""
    return not isinstance(path, str) or not os.path.isabs(path) or path.startswith(SCRATCH)


def _clean_import_path() -> None:
    """No folder the submission can write to is searched for modules, nor is a finder the
    template cached for one consulted. Only those finders are dropped: dropping all of them
    cost 5 ms per submission, freeing objects that live in the template's memory."""
    sys.path[:] = [p for p in sys.path if not _writable(p)]
    for path in [p for p in sys.path_importer_cache if _writable(p)]:
        del sys.path_importer_cache[path]


def _prepare_folder(files: dict) -> None:
    os.makedirs(WORK, exist_ok=True)
    for name, text in files.items():
        path = os.path.normpath(os.path.join(WORK, name))
        if path.startswith(WORK + os.sep):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(bytes.fromhex(text))


def _private_files(keep: tuple[int, ...]) -> None:
    """Reopen the files the template left open, so that no offset or flag a submission sets on
    them is seen by the next fork (a fork shares its parent's open file descriptions)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2 or fd in keep:
            continue
        with contextlib.suppress(OSError):
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            position = os.lseek(fd, 0, os.SEEK_CUR)
            private = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
            os.lseek(private, position, os.SEEK_SET)
            os.dup2(private, fd, inheritable=False)
            os.close(private)


def _submission(runner, settings: dict, pipes: socket.socket, cgroup_fd) -> None:
    """In the fork: isolate, then wait for the submission's pipes on `pipes`; limit, then run
    every code cell, reporting each one."""
    os.setsid()
    counted_by_cgroup = cgroup_fd is not None
    if counted_by_cgroup:
        os.write(cgroup_fd, b"0")
        os.close(cgroup_fd)
    _private_files(keep=(pipes.fileno(),))
    if settings["isolate"]:
        as_root = os.geteuid() == 0
        _fresh_scratch(settings["scratch_bytes"], as_root)
        if as_root:
            _drop_privileges(settings["uid"])
        _drop_capabilities()  # what is left (the inheritable set) goes too
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    with contextlib.suppress(OSError):  # where it cannot be installed, the protections line says so
        syscall_filter.install()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _clean_import_path()
    _, (request_fd, report_fd) = wire.receive_fds(pipes)  # its submission has come
    pipes.close()
    request = wire.receive(request_fd, REQUEST_LIMIT)
    os.close(request_fd)
    limits = request["limits"]
    _limit(limits, counted_by_cgroup)
    _prepare_folder(request.get("files", {}))
    os.chdir(WORK)
    runner.output_limit = limits["output_bytes"]
    from grader import probing  # imported by the template's warm-up already

    probes = request.get("probes") or {"at": {}}
    loaded = probing.load_probes(probes["source"]) if probes["at"] else {}
    for index, source in request["cells"]:
        wire.send(report_fd, Kind.START, cell=index)
        outputs, count, _ = runner.run(source)
        truncated = runner.outputs.truncated
        wire.send(
            report_fd, Kind.CELL, cell=index, outputs=outputs, count=count, truncated=truncated
        )
        grade_id = probes["at"].get(str(index))
        if grade_id in loaded:
            seen = probing.run_probe(loaded, grade_id, runner.shell.user_ns, probes["seed"])
            wire.send(report_fd, Kind.PROBE, test=grade_id, observations=seen)
    wire.send(report_fd, Kind.FINISHED)


@dataclass
class _Ahead:
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


def _fork_ahead(runner, settings: dict, control: socket.socket, cgroup_fd) -> _Ahead:
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
            for fd in settings["server_fds"]:  # the lesson server's own channel is not theirs
                os.close(fd)
            _submission(runner, {**settings, "uid": submission_uid()}, theirs, cgroup_fd)
        except BaseException:  # the grading process sees the missing "finished"; the log, why
            traceback.print_exc()
            code = 70
        finally:
            os._exit(code)
    theirs.close()
    return _Ahead(pid, ours)


def _death(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:  # real-time signals have no name
            name = f"signal {number}"
        return f"the process was killed by {name}"
    return f"the process exited with status {os.WEXITSTATUS(status)}"


def _in_sandbox() -> bool:
    """Whether we run in the sandbox's own PID namespace (set by `grader.sandbox.client`)."""
    return os.environ.get("GRADER_PID_NAMESPACE") == "1"


def _kill_leftovers(child: int, settings: dict) -> list[int]:
    """Send SIGKILL to every process the submission started; return a pidfd for each one
    still there (none of them runs its code again), for `_wait_for_leftovers`.

    In the sandbox's PID namespace those are every process below this server: the server is a
    child subreaper, so an orphan of the submission is handed to it, never to a process outside.
    Without one only the child's session can be found (a submission that left it escapes): the
    namespaces are what make this complete.
    """
    if not settings["complete"]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child, signal.SIGKILL)
        return []
    ends = []
    for pid in _descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError):
            ends.append(os.pidfd_open(pid))  # held first: the pid is not reused meanwhile
            os.kill(pid, signal.SIGKILL)
    return ends


def _wait_for_leftovers(child: int, settings: dict, ends: list[int]) -> None:
    """Wait until the processes behind `ends` have ended, killing any they forked before the
    signal came, until no process of the submission is left."""
    for _ in range(200):
        _wait_for_ends(ends, timeout=1.0)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        ends = _kill_leftovers(child, settings)
        if not ends:
            return
    raise RuntimeError("processes of the submission could not be stopped")


def _wait_for_ends(pidfds: list[int], timeout: float) -> None:
    """Wait until the processes behind `pidfds` have ended (or `timeout` passed); close them."""
    deadline = time.monotonic() + timeout
    waiting = list(pidfds)
    while waiting and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select(waiting, [], [], left)
        if not ready:
            break
        for fd in ready:
            waiting.remove(fd)
    for fd in pidfds:
        os.close(fd)


def _descendants(root: int) -> list[int]:
    """Every process below `root`, from the parent each one's /proc/PID/stat names."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
            children.setdefault(parent, []).append(int(name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _wipe_scratch() -> None:
    """Without per-submission namespaces: empty the shared /tmp and /dev/shm instead."""
    if not _in_sandbox():
        return  # outside the sandbox these are the machine's own folders
    for scratch in SCRATCH:
        keep = {p for b in _binds_under(scratch) for p in [b, *_parents(b, scratch)]}
        for folder, dirs, files in os.walk(scratch):
            for name in files:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))
            for name in list(dirs):
                path = os.path.join(folder, name)
                if path in keep:
                    if os.path.ismount(path):
                        dirs.remove(name)
                    continue
                dirs.remove(name)
                if os.path.islink(path):
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                else:
                    _remove_tree(path)


def _remove_tree(path: str) -> None:
    """Remove a folder even where the submission took away the permissions (same user)."""

    def unlock_and_retry(function, failed, _):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            os.chmod(failed, 0o700) if os.path.isdir(failed) else None
            function(failed)

    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    shutil.rmtree(path, onerror=unlock_and_retry)


def _parents(path: str, top: str) -> list[str]:
    parents = []
    while (path := os.path.dirname(path)).startswith(top + "/"):
        parents.append(path)
    return parents


def _attend(control: socket.socket, child: int, settings: dict) -> None:
    """Report the child's end when it comes; on "clean", stop everything it left."""
    pidfd = os.pidfd_open(child)
    status = None
    while True:
        ready, _, _ = select.select([control, pidfd], [], [])
        if pidfd in ready and status is None:
            status = os.waitpid(child, 0)[1]
            wire.send_fds(control, Kind.EXITED, [], how=_death(status))
        if control in ready:
            message, _ = wire.receive_fds(control)
            if message["kind"] != Kind.CLEAN:
                raise wire.WireError(f"expected clean, got {message['kind']}")
            break
    os.close(pidfd)
    ends = _kill_leftovers(child, settings)
    # Nothing of the submission runs its code any more: the grading process goes on while its
    # processes end; the next submission gets its pipes only once they have, and all is clean.
    wire.send_fds(control, Kind.CLEANED, [], leftovers=len(ends))
    _wait_for_leftovers(child, settings, ends)
    if status is None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child, 0)
    if not settings["isolate"]:
        _wipe_scratch()


def _serve(control: socket.socket, runner, settings: dict, cgroup, router) -> tuple | None:
    """Fork a child per submission from `runner`'s state, until asked for another lesson (return
    that request and its descriptors) or the control socket closes (return None). A lesson to
    be asked for later is passed on to the template (`router`) at once.

    Each child is forked ahead of its submission, after the last one was cleaned up."""
    ahead = _fork_ahead(runner, settings, control, cgroup)
    try:
        while True:
            try:
                message, fds = wire.receive_fds(control)
            except (wire.WireError, OSError):
                return None
            if message["kind"] == Kind.FORK and len(fds) == 2:
                child, ahead = ahead, None  # once reaped, its pid is not ours to signal
                child.start(fds)
                wire.send_fds(control, Kind.FORKED, [])
                _attend(control, child.pid, settings)
                ahead = _fork_ahead(runner, settings, control, cgroup)
            elif message["kind"] == Kind.LESSON and len(fds) == 1:
                return message, fds
            elif message["kind"] == Kind.PREPARE and not fds:
                asked = {"lesson": message.get("lesson"), "upto": message.get("upto")}
                wire.send_fds(router, Kind.PREPARE, [], **asked)
            else:
                for fd in fds:
                    os.close(fd)
                return None
    finally:
        if ahead is not None:
            ahead.discard()


@dataclass
class Channel:
    """One grading process's channel, as the template keeps it: its index, and the descriptors
    of its memory cgroup and CPU share (None where there are none)."""

    index: int
    cgroup: int | None
    cpu: int | None

    def fds(self) -> list[int]:
        """The cgroup descriptors, to hand to a new server of the channel."""
        return [fd for fd in (self.cgroup, self.cpu) if fd is not None]


def _attendant(control: socket.socket, channel: Channel, fds: list[int], runner, settings, router):
    """Serve one grading process from `runner`'s state: fork and clean its submissions until it
    asks for another lesson (handed to the template through `router`) or goes away.

    `fds` are the channel's cgroup descriptors (memory, then CPU share, as `channel` has them).
    """
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the submissions' orphans come to us
    held = iter(fds)
    cgroup = next(held) if channel.cgroup is not None else None
    if channel.cpu is not None:
        cpu = next(held)
        os.write(cpu, b"0")
        os.close(cpu)
    wire.send_fds(control, Kind.READY, [])
    mine = {**settings, "server_fds": [router.fileno()]}
    following = _serve(control, runner, mine, cgroup, router)
    if following is not None:
        message, (out,) = following
        asked = {"lesson": message.get("lesson"), "upto": message.get("upto")}
        wire.send_fds(router, Kind.LESSON, [control.fileno(), out], channel=channel.index, **asked)


def _reap(*_) -> None:
    """On SIGCHLD: collect every child that ended (a server or attendant that ended must not
    stay behind as a zombie: submissions see the process table)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _fork_server(close: list[int], work) -> int:
    """Fork a server process that first closes `close` (descriptors not its own), then does
    `work()`; return its pid."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a server waits for its own
            for fd in close:
                os.close(fd)
            work()
        except BaseException:
            traceback.print_exc()
            code = 70
        finally:
            os._exit(code)
    return pid


def _lesson_server(sources: list[str], joins: socket.socket, runner, settings, router) -> None:
    """Run a lesson's first cells (`sources`) once, then, for each grading process that joins
    (its control socket, the pipe their outputs go to, and its cgroups), send the outputs and
    fork an attendant from this state. Ends when the template closes `joins`.

    It runs instructor code only (the released lesson's cells, sent at start-up) and, like the
    template, never reads a request, a cell or a report of a submission.
    """
    signal.signal(signal.SIGCHLD, _reap)  # its attendants, when they end
    os.chdir(tempfile.mkdtemp(prefix="lesson-"))
    cells = []
    for source in sources:
        outputs, count, _ = runner.run(source)
        cells.append({"outputs": outputs, "count": count})
    prepare_to_fork()
    while True:
        try:
            message, fds = wire.receive_fds(joins)
        except (wire.WireError, OSError):
            return
        control, out, *cgroups = fds
        with contextlib.suppress(OSError):  # that grading process gave up waiting
            wire.write_all(out, wire.encode(Kind.PREFIX, cells=cells))
        os.close(out)
        channel = Channel(message["channel"], message["cgroup"], message["cpu"])
        sock = socket.socket(fileno=control)
        attend = partial(_attendant, sock, channel, cgroups, runner, settings, router)
        _fork_server([joins.fileno()], attend)
        sock.close()
        for fd in cgroups:
            os.close(fd)


@dataclass
class LessonServers:
    """The template's lesson servers, by (lesson, cells run), least recently joined first; at
    most `keep` are kept (one let go carries on while grading processes still use it)."""

    keep: int
    running: dict[tuple, socket.socket] = field(default_factory=dict)

    def join(self, key: tuple, start) -> socket.socket:
        """The socket that joins `key`'s server, which `start()` starts (returning it) if
        needed."""
        if key not in self.running:
            while len(self.running) >= self.keep:
                self.running.pop(next(iter(self.running))).close()
            self.running[key] = start()
        self.running[key] = self.running.pop(key)
        return self.running[key]

    def prepare(self, key: tuple, start) -> None:
        """Start `key`'s server now, for a grading process to join later, unless that would
        let go of the server last joined."""
        if key not in self.running and (self.keep > 1 or not self.running):
            if len(self.running) >= self.keep:
                self.running.pop(next(iter(self.running))).close()
            self.running = {key: start(), **self.running}  # not joined yet: first to go

    def drop(self, key: tuple) -> None:
        """Let go of `key`'s server (it failed)."""
        self.running.pop(key).close()

    def fds(self) -> list[int]:
        """Their descriptors, which no process forked from the template may keep."""
        return [joins.fileno() for joins in self.running.values()]


def _route(
    router: socket.socket,
    theirs: socket.socket,
    channels: list[Channel],
    prefixes,
    runner,
    settings,
) -> None:
    """The template's loop: pass each grading process that asks for a lesson (through `router`,
    whose other end `theirs` every attendant holds) to the lesson's server, started on first
    need."""
    servers = LessonServers(keep=len(channels))
    keep_out = [router.fileno(), *(fd for c in channels for fd in c.fds())]

    def start(sources: list[str], passing: list[int]) -> socket.socket:
        ours, joins = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        close = [*keep_out, *servers.fds(), ours.fileno(), *passing]
        _fork_server(close, partial(_lesson_server, sources, joins, runner, settings, theirs))
        joins.close()
        return ours

    while True:
        message, fds = wire.receive_fds(router)
        sources = prefixes.get(str(message.get("lesson")), [])
        upto = message.get("upto")
        upto = upto if type(upto) is int and 0 <= upto <= len(sources) else 0
        key = (message.get("lesson"), upto)
        if message["kind"] == Kind.PREPARE and not fds:
            servers.prepare(key, partial(start, sources[:upto], []))
            continue
        index = message.get("channel")
        if message["kind"] != Kind.LESSON or len(fds) != 2 or index not in range(len(channels)):
            for fd in fds:
                os.close(fd)
            continue
        joins = servers.join(key, partial(start, sources[:upto], fds))
        channel = channels[index]
        try:
            wire.send_fds(
                joins,
                Kind.LESSON,
                fds + channel.fds(),
                channel=index,
                cgroup=channel.cgroup,
                cpu=channel.cpu,
            )
        except OSError:  # its server failed: the grading process sees no answer, and it goes
            servers.drop(key)
        for fd in fds:
            os.close(fd)


def _descriptors(name: str, count: int) -> list[int | None]:
    """The descriptors listed in environment variable `name`, one per channel (or none)."""
    listed = [int(fd) for fd in os.environ.get(name, "").split(",") if fd]
    return listed if len(listed) == count else [None] * count


def main() -> None:
    """Warm up, fork an attendant for each grading process's channel, then route the channels
    that ask for a lesson to its lesson server."""
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # forks may not ptrace or read our memory
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of the servers come to us
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # warming up starts no process to collect
    controls = [int(fd) for fd in os.environ["GRADER_CONTROL_FDS"].split(",")]
    channels = [
        Channel(index, cgroup, cpu)
        for index, (cgroup, cpu) in enumerate(
            zip(
                _descriptors("GRADER_CGROUP_FDS", len(controls)),
                _descriptors("GRADER_CPU_FDS", len(controls)),
                strict=True,
            )
        )
    ]
    settings = {
        "isolate": os.environ.get("GRADER_ISOLATE") == "1",
        "scratch_bytes": int(os.environ.get("GRADER_SCRATCH_BYTES", str(512 * 1024**2))),
        # In the sandbox's PID namespace every process below a server can be found and stopped.
        "complete": _in_sandbox(),
    }
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    runner = _warm()
    warm = wire.receive(sys.stdin.fileno(), REQUEST_LIMIT)
    runner.warm_up(warm["sources"])
    runner.remember(warm["tests"])
    prepare_to_fork()  # before the first fork of a server
    back_with_huge_pages()  # cheaper forks (grader.forking)
    os.dup2(os.open(os.devnull, os.O_RDONLY), sys.stdin.fileno())
    router, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sockets = [socket.socket(fileno=control) for control in controls]
    for channel, sock in zip(channels, sockets, strict=True):
        others = [c for c in controls if c != sock.fileno()]
        others += [fd for c in channels if c is not channel for fd in c.fds()]
        attend = partial(_attendant, sock, channel, channel.fds(), runner, settings, theirs)
        _fork_server([router.fileno(), *others], attend)
    for sock in sockets:  # each attendant has its own
        sock.close()
    signal.signal(signal.SIGCHLD, _reap)
    _reap()  # any that ended before
    _route(router, theirs, channels, warm["prefixes"], runner, settings)


if __name__ == "__main__":
    main()
