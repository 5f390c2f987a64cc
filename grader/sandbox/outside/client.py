"""Runs in the grading process: starts the template inside bubblewrap and runs one submission.

`Sandbox` starts the template process (`grader.sandbox.inside.cell_server`) inside bubblewrap and,
for each submission, hands it two fresh pipes: the submission's own process reads its request
(then the answers to its drawn functions' asks) from one and reports its cells on the other,
straight to this process, which enforces the time and output limits while it reads them
(`grader.sandbox.outside.reports`).
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
from dataclasses import asdict, dataclass
from pathlib import Path

import grader
from grader.course import lesson_probes, released_lesson_code, released_test_code
from grader.outcome import Outcome
from grader.sandbox import wire
from grader.sandbox.outside import cgroups
from grader.sandbox.outside.isolation import Limits, detect_protections
from grader.sandbox.outside.reports import (
    ReportWatch,
    RunReport,
    well_formed_count,
    well_formed_outputs,
)
from grader.sandbox.wire import Kind
from grader.timings import Timings

SAFE_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME")
CONTROL_SECONDS = 30
PREFIX_SECONDS = 300  # a lesson's own first cells, run once per lesson
PREFIX_LIMIT = 256 * 1024**2
LEFT_CHARGED_SHARE = 4  # a new submission starts with under a quarter of the limit charged


@dataclass
class TemplateChannel:
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
        self.channels: list[TemplateChannel] = []
        self.cpus: list[Path] = []
        # The template's own errors, for diagnosis.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the sandbox

    @property
    def shareable(self) -> bool:
        """Whether submissions of several grading processes may run in it at once
        (`Protections.shareable`)."""
        return self.protections.shareable

    def start(self, wait: bool = True) -> None:
        """Start the template; unless told not to `wait`, wait until it has imported torch, run
        the lessons' cells and started a server for each channel."""
        # Only what the template needs: the grader's own environment (database passwords,
        # cloud keys) must not be readable by student code.
        env = {
            **{k: os.environ[k] for k in SAFE_ENVIRONMENT if k in os.environ},
            "OMP_NUM_THREADS": "1",
            "NBGRADER_EXECUTION": "autograde",  # as stock nbgrader's autograde sets it
            "PYTHONDONTWRITEBYTECODE": "1",
            # The grader that runs this, also where it is not the installed one (a checkout):
            # the sandbox sees its package folder only.
            "PYTHONPATH": str(Path(grader.__file__).resolve().parent.parent),
            "GRADER_PID_NAMESPACE": "1" if self.protections.pid_namespace else "0",
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
            self.channels.append(TemplateChannel(ours, group, prefixes))
        env["GRADER_CONTROL_FDS"] = ",".join(map(str, controls))
        env["GRADER_CGROUP_FDS"] = ",".join(map(str, memory))
        env["GRADER_CPU_FDS"] = ",".join(map(str, cpu))
        self.process = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "grader.sandbox.inside.cell_server"],
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
                Kind.WARM,
                sources=sources,
                prefixes=prefixes,
                tests=released_test_code(),
                probes=lesson_probes(),
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

    def __init__(self, limits: Limits, shared: TemplateChannel | None = None):
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
        files_back: bool = False,
        oracle=None,
        environment: dict[str, str] | None = None,
    ) -> RunReport:
        """Run the cells, with the files beside them, in a fresh fork; return what came back
        (with `files_back`, also the files the run left in its folder).

        `probes` ({"source", "seed", "at": {cell index: grade id}}) run after their cells, their
        drawn functions asked of `oracle` (`grader.function_oracle.FunctionOracle`). For a
        `lesson`, the fork starts from the server's run of the lesson's first cells, as far as
        the submission's cells are the same, and those cells' outputs are copied. The lesson
        graded next (`then`) has its first cells run meanwhile. `environment`: variables set
        for the cells that are not the lesson's shared first ones.
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
            "files_back": files_back,
            "environment": environment or {},
        }
        probes_at = (probes or {}).get("at", {})
        try:
            try:
                report = self._run(request, probes_at, files_back, oracle)
            except _NotStarted:  # the sandbox broke after the last submission: afresh, once
                self._afresh(lesson, shared)
                report = self._run(request, probes_at, files_back, oracle)
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
                "outputs": well_formed_outputs(ran.get("outputs")),
                "execution_count": well_formed_count(ran.get("count")),
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

    def _run(self, request: dict, probes_at: dict, files_back: bool, oracle) -> RunReport:
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
            os.set_blocking(report_read, False)
            os.set_blocking(request_write, False)  # its drawn functions' answers go there
            sent = frozenset(index for index, _ in request["cells"])
            watch = ReportWatch(self.limits, probes_at, files_back, sent, oracle)
            report = watch.follow(report_read, self.channel.control, request_write)
        finally:
            os.close(report_read)
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
