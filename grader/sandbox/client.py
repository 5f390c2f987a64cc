"""The grading side of the sandbox: start the template, run one submission, watch its limits.

`Sandbox` starts the template process (`grader.sandbox.cell_server`) inside bubblewrap and, for each
submission, hands it two fresh pipes: the submission's own process reads its request from one
and reports its cells on the other, straight to this process, which enforces the time and output
limits while it reads. Everything that comes back is untrusted: messages must arrive in the order
the cell runner sends them, and a submission that writes into the channel gets no grade.
"""

import contextlib
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from grader.cells import is_graded
from grader.course import released_lesson_code, released_test_code
from grader.grading.outcomes import Outcome
from grader.grading.submission_check import regular_files
from grader.sandbox import cgroups, wire
from grader.sandbox.cell_runner import MAX_OUTPUTS
from grader.sandbox.isolation import Limits, detect_protections
from grader.sandbox.wire import Kind
from grader.timings import Timings

FILE_LIMIT = 32 * 1024**2
SAFE_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME")
CONTROL_SECONDS = 30
PREFIX_SECONDS = 300  # a lesson's own first cells, run once per lesson
PREFIX_LIMIT = 256 * 1024**2
LEFT_CHARGED_SHARE = 4  # a new submission starts with under a quarter of the limit charged


@dataclass
class RunReport:
    """What came back from one submission's run."""

    outcome: Outcome = Outcome.GRADED
    detail: str = ""
    cells: dict[int, dict] = field(default_factory=dict)
    probes: dict[str, list] = field(default_factory=dict)
    timings: Timings = field(default_factory=Timings)  # fork, student cells, probes, clean


@dataclass
class SandboxChannel:
    """One grading process's way into a running template: its control socket, and the memory
    cgroup its submissions are counted in."""

    control: socket.socket
    cgroup: cgroups.MemoryCgroup | None
    prefixes: dict[str, list[str]]  # lesson -> its code cells before the first exercise
    ready: bool = False  # its server has said it is ready

    def wait_ready(self, timeout: float = 300) -> None:
        """Wait until the channel's server is ready (the template warms up first)."""
        if not self.ready:
            _expect(self.control, Kind.READY, timeout)
            self.ready = True

    def close(self) -> None:
        """Let go of the channel (its server in the sandbox stops)."""
        self.control.close()


class SandboxProcess:
    """The template inside bubblewrap, serving `channels` grading processes: each has a control
    socket, a memory cgroup and a CPU share of its own, and all share the template's memory."""

    def __init__(self, limits: Limits, channels: int = 1):
        self.limits = limits
        self.protections, self.prefix = detect_protections()
        self.count = channels
        self.process: subprocess.Popen | None = None
        self.channels: list[SandboxChannel] = []
        self.cpus: list[Path] = []
        # The template's own errors, for diagnosis.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the sandbox

    @property
    def shareable(self) -> bool:
        """Whether submissions of several grading processes may run in it at once: only where
        each has its own user, mounts and namespaces, and the PID namespace shows every one of
        its processes."""
        p = self.protections
        return p.namespaces and p.unprivileged and p.per_submission

    def start(self, wait: bool = True) -> None:
        """Start the template; unless told not to `wait`, wait until it has imported torch, run
        the lessons' cells and started a server for each channel."""
        # Only what the template needs: the grader's own environment (database passwords,
        # cloud keys) must not be readable by student code.
        env = {
            **{k: os.environ[k] for k in SAFE_ENVIRONMENT if k in os.environ},
            "OMP_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "GRADER_PID_NAMESPACE": "1" if self.protections.namespaces else "0",
            "GRADER_ISOLATE": "1" if self.protections.per_submission else "0",
            "GRADER_SCRATCH_BYTES": str(self.limits.memory_bytes),
        }
        sources, prefixes = released_lesson_code()
        passed, controls, memory, cpu = [], [], [], []
        for index in range(self.count):
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            passed.append(theirs.detach())
            controls.append(passed[-1])
            group = None
            name = f"grader-c{index}-{secrets.token_hex(4)}-{os.getpid()}"  # never one left over
            if self.protections.memory_cgroup:
                group, _ = cgroups.create(name)
            if group is not None:
                group.limit(self.limits.memory_bytes)
                passed.append(group.open_procs())
                memory.append(passed[-1])
            share = cgroups.create_cpu_share(name, self.limits.cpu_cores)
            if share is not None:
                self.cpus.append(share)
                passed.append(os.open(share / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
                cpu.append(passed[-1])
            self.channels.append(SandboxChannel(ours, group, prefixes))
        env["GRADER_CONTROL_FDS"] = ",".join(map(str, controls))
        env["GRADER_CGROUP_FDS"] = ",".join(map(str, memory))
        env["GRADER_CPU_FDS"] = ",".join(map(str, cpu))
        self.process = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "grader.sandbox.cell_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env=env,
            pass_fds=passed,
            start_new_session=True,  # bubblewrap's two processes, to be stopped together
        )
        for fd in passed:
            os.close(fd)
        try:
            warm = wire.encode(
                Kind.WARM, sources=sources, prefixes=prefixes, tests=released_test_code()
            )
            self.process.stdin.write(warm)
            self.process.stdin.close()
            for channel in self.channels if wait else []:
                channel.wait_ready()
        except (wire.WireError, OSError, TimeoutError) as error:
            self.log.seek(0)
            said = self.log.read().decode(errors="replace").strip().splitlines()[-3:]
            self.stop()
            raise RuntimeError(f"the sandbox did not start ({error}): {' / '.join(said)}") from None

    def stop(self) -> None:
        """Stop the template and everything in its namespaces."""
        if self.process is not None:
            # Both of bubblewrap's processes: one killed while the other was still being set
            # up would leave it holding the channels open, and the grading processes waiting.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.process = None
        for channel in self.channels:
            channel.close()
            if channel.cgroup is not None:
                channel.cgroup.remove()
        self.channels = []
        for share in self.cpus:
            cgroups.remove_when_empty(share)
        self.cpus = []


class Sandbox:
    """One grading process's use of a template: a channel of a shared one (`shared`), or else
    one of its own; restarted when it stops answering."""

    def __init__(self, limits: Limits, shared: SandboxChannel | None = None):
        self.limits = limits
        self.channel = shared
        self.own: SandboxProcess | None = None
        self.shared_run: tuple[str, int] | None = None  # the lesson and cells the server ran
        self.shared_cells: list[dict] = []  # what those cells printed
        self.prepared: set[str] = set()  # lessons whose first cells were asked for, for later

    def start(self) -> None:
        """Start a template of our own (a shared one is never restarted from here)."""
        self.own = SandboxProcess(self.limits)
        self.own.start()
        self.channel = self.own.channels[0]

    def _ready(self) -> None:
        """Make sure a template answers: the shared one, once it has warmed up, or our own."""
        if self.channel is not None and not self.channel.ready:
            try:
                self.channel.wait_ready()
            except (wire.WireError, OSError, TimeoutError):
                self.stop()
        if self.channel is None:
            self.start()

    def stop(self) -> None:
        """Let go of the channel; stop our own template and everything in its namespaces."""
        self.shared_run, self.shared_cells, self.prepared = None, [], set()
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.own is not None:
            self.own.stop()
            self.own = None

    def run(
        self,
        cells: list[tuple[int, str]],
        files: dict[str, bytes],
        probes=None,
        lesson=None,
        then=None,
    ) -> RunReport:
        """Run the cells, with the files beside them, in a fresh fork; return what came back.

        `probes` ({"source", "seed", "at": {cell index: grade id}}) run after their cells. For a
        `lesson`, the fork starts from the server's run of the lesson's first cells, as far as
        the submission's cells are the same, and those cells' outputs are copied. The lesson
        graded next (`then`) has its first cells run meanwhile.
        """
        started = Timings()
        with started.step("start-up"):
            self._ready()
        shared = 0
        if lesson in self.channel.prefixes:
            shared = _same_start(self.channel.prefixes[lesson], [s for _, s in cells])
            try:
                with started.step("lesson prefix"):
                    self._run_prefix(lesson, shared)
            except (wire.WireError, OSError, TimeoutError):
                try:  # a server a submission before broke: start afresh, once
                    with started.step("lesson prefix"):
                        self._afresh(lesson, shared)
                except (OSError, TimeoutError, RuntimeError) as error:
                    self.stop()
                    return RunReport(Outcome.KERNEL_DIED, f"the sandbox stopped: {error}")
        if then in self.channel.prefixes and then not in self.prepared:
            self.prepared.add(then)
            upto = len(self.channel.prefixes[then])
            with contextlib.suppress(OSError):  # a broken channel shows in the run
                wire.send_fds(self.channel.control, Kind.PREPARE, [], lesson=then, upto=upto)
        request = {
            "cells": cells[shared:],
            "files": {name: data.hex() for name, data in files.items()},
            "limits": asdict(self.limits),
            "probes": probes,
        }
        probes_at = (probes or {}).get("at", {})
        try:
            try:
                report = self._run(request, probes_at)
            except _NotStarted:  # the sandbox broke after the last submission: afresh, once
                self._afresh(lesson, shared)
                report = self._run(request, probes_at)
        except (OSError, TimeoutError, RuntimeError) as error:
            self.stop()
            return RunReport(Outcome.KERNEL_DIED, f"the sandbox stopped: {error}")
        except Exception as error:  # a report the grader could not take in: never the next one's
            self.stop()
            return RunReport(
                Outcome.NOT_GRADED, f"its report could not be read ({type(error).__name__})"
            )
        if report.outcome == Outcome.GRADED and _ran_out_of_memory(report.cells):
            report.outcome, report.detail = Outcome.MEMORY_LIMIT, "a cell ran out of memory"
        report.timings.update(started)
        for (index, _), ran in zip(cells[:shared], self.shared_cells, strict=True):
            report.cells[index] = {
                "outputs": _outputs(ran.get("outputs")),
                "execution_count": _count(ran.get("count")),
            }
        return report

    def _run_prefix(self, lesson: str, upto: int) -> None:
        """Have the server run `lesson`'s first `upto` cells once (if it has not already)."""
        if self.shared_run == (lesson, upto):
            return
        self.shared_run, self.shared_cells = None, []
        read, write = os.pipe()
        try:
            wire.send_fds(self.channel.control, Kind.LESSON, [write], lesson=lesson, upto=upto)
        finally:
            os.close(write)
        try:
            ready, _, _ = select.select([read], [], [], PREFIX_SECONDS)
            if not ready:
                raise TimeoutError(f"the lesson's first cells took over {PREFIX_SECONDS} s")
            ran = wire.receive(read, PREFIX_LIMIT)
        finally:
            os.close(read)
        _expect(self.channel.control, Kind.READY, timeout=PREFIX_SECONDS)
        cells = ran.get("cells")
        if ran["kind"] != Kind.PREFIX or not isinstance(cells, list) or len(cells) != upto:
            raise wire.WireError("the lesson's first cells did not all report")
        self.shared_run, self.shared_cells = (lesson, upto), cells

    def _afresh(self, lesson: str | None, shared: int) -> None:
        """Stop, then start a template of our own and run the lesson's first `shared` cells."""
        self.stop()
        self.start()
        if lesson in self.channel.prefixes:
            self._run_prefix(lesson, shared)

    def _run(self, request: dict, probes_at: dict) -> RunReport:
        request_read, request_write = os.pipe()
        report_read, report_write = os.pipe()
        timings = Timings()
        try:
            with timings.step("fork"):
                wire.send_fds(self.channel.control, Kind.FORK, [request_read, report_write])
                _expect(self.channel.control, Kind.FORKED, timeout=CONTROL_SECONDS)
        except (wire.WireError, OSError, TimeoutError) as error:
            os.close(request_write)
            os.close(report_read)
            raise _NotStarted(error) from error
        finally:
            os.close(request_read)
            os.close(report_write)
        cgroup = self.channel.cgroup
        try:
            if cgroup:  # what the last submission left charged is given back first
                cgroup.wait_until_below(self.limits.memory_bytes // LEFT_CHARGED_SHARE)
            # Counted from here: the last submission's processes have all ended by now.
            oom_before = cgroup.oom_kills() if cgroup else 0
            # If the fork died before reading it, the watch says how.
            with contextlib.suppress(BrokenPipeError):
                wire.write_all(request_write, wire.encode(Kind.REQUEST, **request))
            os.close(request_write)
            request_write = -1
            os.set_blocking(report_read, False)
            report = _Watch(self.limits, probes_at).follow(report_read, self.channel.control)
        finally:
            os.close(report_read)
            if request_write >= 0:
                os.close(request_write)
            with timings.step("clean"):
                self._clean()
        if cgroup and cgroup.oom_kills() > oom_before:
            report.outcome = Outcome.MEMORY_LIMIT
            report.detail = "the submission's processes went over the memory limit together"
        report.timings.update(timings)
        return report

    def _clean(self) -> None:
        """Have the template stop everything the submission started: it answers once nothing
        of it can run again, and takes the next submission once all of it has ended."""
        control = self.channel.control
        wire.send_fds(control, Kind.CLEAN, [])
        answers = (Kind.CLEANED, Kind.EXITED)
        while _expect(control, answers, CONTROL_SECONDS)["kind"] != Kind.CLEANED:
            pass


class _NotStarted(RuntimeError):
    """The sandbox failed before the submission's process was handed its pipes (the attendant
    ends its clean-up after answering): nothing of the submission ran."""


def _expect(control: socket.socket, kinds, timeout: float) -> dict:
    """The next message on `control`, which must be one of `kinds`."""
    kinds = (kinds,) if isinstance(kinds, str) else kinds
    ready, _, _ = select.select([control], [], [], timeout)
    if not ready:
        raise TimeoutError(f"no answer from the sandbox in {timeout:.0f} s")
    message, fds = wire.receive_fds(control)
    for fd in fds:
        os.close(fd)
    if message["kind"] not in kinds:
        raise wire.WireError(f"the sandbox said {message['kind']}, expected {kinds[0]}")
    return message


class _Watch:
    """Follows one submission's reports while enforcing the time and output limits."""

    def __init__(self, limits: Limits, probes_at: dict):
        self.limits, self.probes_at = limits, probes_at
        self.report = RunReport()
        self.budget, self.written = limits.output_bytes * 4 + 1_000_000, 0
        self.current: int | None = None
        self.expect_probe: str | None = None
        self.finished = False

    def follow(self, reports: int, control: socket.socket) -> RunReport:
        """Read until the submission finishes, dies, overruns a limit or breaks the protocol."""
        limits, report = self.limits, self.report
        frames = wire.Frames(reports, limits.output_bytes * 4 + 1_000_000)
        started = cell_started = last = time.monotonic()
        exited, grace = None, None
        watched = [reports, control]
        while not self.finished:
            notebook_end = started + limits.notebook_seconds
            deadline = min(notebook_end, cell_started + limits.cell_seconds, grace or notebook_end)
            now = time.monotonic()
            if now >= deadline:
                if exited is None:
                    which = "notebook" if deadline == notebook_end else "cell"
                    report.outcome = Outcome.TIMED_OUT
                    report.detail = f"the {which} time limit was reached in cell {self.current}"
                break
            ready, _, _ = select.select(watched, [], [], deadline - now)
            if control in ready:
                message, _ = wire.receive_fds(control)
                exited = message.get("how", "the process ended")
                watched.remove(control)
                grace = time.monotonic() + 0.5  # what it wrote before it died is still coming
            if reports not in ready:
                continue
            try:
                messages = frames.read()
            except wire.OverBudget as error:
                report.outcome = Outcome.OUTPUT_LIMIT
                report.detail = f"the submission wrote too much output ({error})"
                return report
            except wire.WireError as error:
                report.outcome = Outcome.NOT_GRADED
                report.detail = f"the submission wrote into the grader's channel ({error})"
                return report
            if messages is None:
                break
            for message in messages:
                problem = self._take(message)
                if problem:
                    report.outcome = Outcome.NOT_GRADED
                    report.detail = f"the submission wrote into the grader's channel ({problem})"
                    return report
                now = time.monotonic()
                spent = "probes" if message.get("kind") == Kind.PROBE else "student cells"
                report.timings.add(spent, now - last)
                last = now
                if message.get("kind") == Kind.START:
                    cell_started = now
        if not self.finished and report.outcome == Outcome.GRADED:
            report.outcome = Outcome.KERNEL_DIED
            report.detail = f"{exited or 'the process ended'} in cell {self.current}"
        return report

    def _take(self, message: dict) -> str | None:
        """Record one message; what is wrong with it, if it breaks the runner's order."""
        kind = message["kind"]
        if self.finished:
            return f"{kind} after the end"
        if kind == Kind.START:
            cell = message.get("cell")
            if type(cell) is not int or (self.current is not None and cell <= self.current):
                return "a cell out of order"
            self.current, self.expect_probe = cell, None
        elif kind == Kind.CELL:
            if message.get("cell") != self.current or self.current in self.report.cells:
                return "a cell's outputs out of turn"
            raw = message.get("outputs")
            if isinstance(raw, list) and len(raw) > MAX_OUTPUTS:
                self.report.outcome = Outcome.OUTPUT_LIMIT
                self.report.detail = f"more than {MAX_OUTPUTS} outputs in cell {self.current}"
            self.written += written_size(raw, self.budget - self.written)
            if self.written > self.budget:  # what it would take once written as a notebook
                self.report.outcome = Outcome.OUTPUT_LIMIT
                self.report.detail = f"the outputs would take over {self.budget} bytes written"
                raw = []
            self.report.cells[self.current] = {
                "outputs": _outputs(raw),
                "execution_count": _count(message.get("count")),
            }
            self.expect_probe = self.probes_at.get(str(self.current))
            if message.get("truncated") is True:
                self.report.outcome = Outcome.OUTPUT_LIMIT
                self.report.detail = (
                    f"output over {self.limits.output_bytes} bytes was cut in cell {self.current}"
                )
        elif kind == Kind.PROBE:
            if self.expect_probe is None or message.get("test") != self.expect_probe:
                return "a test's report out of turn"
            self.report.probes[self.expect_probe] = message.get("observations")
            self.expect_probe = None
        elif kind == Kind.FINISHED:
            self.finished = True
        else:
            return f"an unknown message {kind[:40]!r}"
        return None


def written_size(value, cap: int) -> int:
    """About how many bytes `value` takes in a notebook file, where each line of a text and each
    item of a list or object goes on a line of its own, indented; counting stops past `cap`."""
    size, stack = 0, [(value, 1)]
    while stack and size <= cap:
        item, depth = stack.pop()
        if isinstance(item, str):
            size += len(item) + (item.count("\n") + 1) * (depth + 4)
        elif isinstance(item, dict):
            size += sum(len(key) + depth + 4 for key in item)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            size += len(item) * (depth + 2)
            stack.extend((child, depth + 1) for child in item)
        else:
            size += 24
    return size


def _count(value) -> int | None:
    return value if type(value) is int and 0 <= value < 1 << 31 else None


def _ran_out_of_memory(cells: dict) -> bool:
    for cell in cells.values():
        for out in cell["outputs"]:
            if out.get("output_type") == "error" and (
                out.get("ename") == "MemoryError"
                or "can't allocate memory" in out.get("evalue", "")
            ):
                return True
    return False


def _same_start(prefix: list[str], sources: list[str]) -> int:
    """How many of the first cells of `sources` are the prefix's, in order."""
    same = 0
    for ours, theirs in zip(prefix, sources, strict=False):
        if ours != theirs:
            break
        same += 1
    return same


def folder_files(folder: Path, notebook: str) -> dict[str, bytes]:
    """The regular files beside the notebook in a submission folder, up to FILE_LIMIT bytes."""
    files, total = {}, 0
    for path in regular_files(folder):
        if path.name != notebook:
            total += path.lstat().st_size
            if total <= FILE_LIMIT:
                files[str(path.relative_to(folder))] = path.read_bytes()
    return files


def apply_run(nb, report: RunReport) -> None:
    """Put the run's outputs into the notebook as a kernel would; unrun test cells say why."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        done = report.cells.get(index)
        cell.outputs = done["outputs"] if done else []
        cell.execution_count = done["execution_count"] if done else None
        graded = is_graded(cell)
        if done is None and report.outcome != Outcome.GRADED and graded:
            cell.outputs = [_not_run(report)]


def _is_text(value) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(line, str) for line in value)
    )


def _is_bundle(out: dict) -> bool:
    data, metadata = out.get("data"), out.get("metadata", {})
    return (
        isinstance(data, dict)
        and isinstance(metadata, dict)
        and all(_is_text(v) or isinstance(v, dict) for v in data.values())
    )


# The fields of each output type, and what makes one well-formed (nbformat 4's schema).
OUTPUT_RULES = {
    "stream": (
        ("name", "text"),
        lambda o: o.get("name") in ("stdout", "stderr") and isinstance(o.get("text"), str),
    ),
    "display_data": (("data", "metadata"), _is_bundle),
    "execute_result": (
        ("data", "metadata", "execution_count"),
        lambda o: _is_bundle(o) and _count(o.get("execution_count")) == o.get("execution_count"),
    ),
    "error": (
        ("ename", "evalue", "traceback"),
        lambda o: (
            isinstance(o.get("ename"), str)
            and isinstance(o.get("evalue"), str)
            and isinstance(o.get("traceback"), list)
            and all(isinstance(line, str) for line in o["traceback"])
        ),
    ),
}


def _outputs(raw) -> list:
    """The sandbox's outputs as notebook nodes, keeping only well-formed ones (at most
    MAX_OUTPUTS: the cell runner never sends more)."""
    kept = []
    for out in raw[:MAX_OUTPUTS] if isinstance(raw, list) else []:
        kind = out.get("output_type") if isinstance(out, dict) else None
        rule = OUTPUT_RULES.get(kind) if isinstance(kind, str) else None
        if rule is not None and rule[1](out):
            fields = {k: out[k] for k in rule[0] if k in out}
            if "data" in fields:
                fields.setdefault("metadata", {})
            if out["output_type"] == "execute_result":
                fields.setdefault("execution_count", None)
            kept.append(nbformat.from_dict({"output_type": out["output_type"], **fields}))
    return kept


def _not_run(report: RunReport) -> dict:
    return nbformat.from_dict(
        {
            "output_type": "error",
            "ename": "NotRun",
            "evalue": f"this test did not run: {report.outcome} ({report.detail})",
            "traceback": [],
        }
    )
