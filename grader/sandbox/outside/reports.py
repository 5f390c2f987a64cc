"""Runs in the grading process: reads one submission's reports, which are untrusted.

Messages must arrive in the order the cell runner sends them, within the time and output limits;
a submission that writes into the channel gets no grade. Only well-formed outputs are kept. Its
probes' asks of their drawn functions are answered here, by the run's oracle
(`grader.function_oracle`), on the pipe its request came by.
"""

import os
import re
import select
import socket
import time
from dataclasses import dataclass, field

import nbformat

from grader.outcome import Outcome
from grader.sandbox import wire
from grader.sandbox.outside.isolation import Limits
from grader.sandbox.wire import FILES_BACK_BYTES, FILES_BACK_COUNT, MAX_OUTPUTS, Kind
from grader.timings import Timings

CELL_GRACE = 2.0  # seconds the submission's own interruption of a cell is given to arrive
ASK_BYTES = 256 * 1024**2  # what a run's asks of its drawn functions may send in all
UNREAD_ANSWERS = (
    64 * 1024**2
)  # answers written and not yet read: more is not asking, it is flooding
HEX = re.compile(r"(?:[0-9a-f]{2})*")


@dataclass
class RunReport:
    """What came back from one submission's run."""

    outcome: Outcome = Outcome.GRADED
    detail: str = ""
    where: int | None = None  # the cell the detail happened in (an index into the notebook)
    cells: dict[int, dict] = field(default_factory=dict)
    probes: dict[str, list] = field(default_factory=dict)
    timings: Timings = field(default_factory=Timings)  # fork, student cells, probes, clean
    files: dict[str, bytes] = field(default_factory=dict)  # left in its folder, where asked for
    files_left_out: int = 0  # of those, over the limits on what comes back
    interrupted: list[int] = field(default_factory=list)  # cells stopped at the cell time limit


class ReportWatch:
    """Follows one submission's reports while enforcing the time and output limits.

    A cell that runs to the cell limit is interrupted and the notebook goes on, as nbgrader's
    kernel is interrupted on a cell timeout: its time is not charged to the notebook limit, so a
    stuck function costs each test that calls it, not the tests after them (up to the notebook
    limit's worth of stopped cells: no notebook runs longer than twice that limit).
    """

    def __init__(
        self,
        limits: Limits,
        probes_at: dict,
        files_back: bool = False,
        cells: frozenset[int] = frozenset(),
        oracle=None,
    ):
        self.limits, self.probes_at, self.files_back = limits, probes_at, files_back
        self.cells = cells  # the indices of the cells sent to run
        self.oracle = oracle  # answers the asks of its drawn functions, where it has any
        self.unsent = b""  # answers not yet written to the submission
        self.asked = 0  # bytes of asks read
        self.report = RunReport()
        self.budget, self.written = limits.output_bytes * 4 + 1_000_000, 0
        self.current: int | None = None
        self.expect_probe: str | None = None
        self.finished = False

    def follow(self, reports: int, control: socket.socket, answers: int = -1) -> RunReport:
        """Read until the submission finishes, dies, overruns a limit or breaks the protocol;
        answer its asks on `answers` (non-blocking)."""
        limits, report = self.limits, self.report
        files = 2 * FILES_BACK_BYTES + 1_000_000 if self.files_back else 0  # sent as hex
        frames = wire.Frames(reports, limits.output_bytes * 4 + 1_000_000 + files)
        started = cell_started = last = time.monotonic()
        exited, grace = None, None
        watched = [reports, control]
        excused = 0.0  # seconds spent in cells stopped at the cell limit
        while not self.finished:
            notebook_end = started + limits.notebook_seconds + excused
            # the submission's process interrupts a cell, then its probe, each at cell_seconds
            cell_end = cell_started + 2 * limits.cell_seconds + CELL_GRACE
            deadline = min(notebook_end, cell_end, grace or notebook_end)
            now = time.monotonic()
            if now >= deadline:
                if exited is None:
                    which = "notebook" if deadline == notebook_end else "cell"
                    report.outcome = Outcome.TIMED_OUT
                    report.detail, report.where = (
                        f"the {which} time limit was reached",
                        self.current,
                    )
                break
            writing = [answers] if self.unsent else []
            ready, writable, _ = select.select(watched, writing, [], deadline - now)
            if writable:
                self._write_answers(answers)
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
            for message, size in zip(messages, frames.sizes, strict=True):
                problem = self._take(message)
                if message.get("kind") == Kind.ASK and not problem:
                    frames.refund(size)  # counted against the asks' own limit
                    self.asked += size
                    problem = self._answer(message, answers)
                if problem:
                    report.outcome = Outcome.NOT_GRADED
                    report.detail = f"the submission wrote into the grader's channel ({problem})"
                    return report
                now = time.monotonic()
                probing = message.get("kind") in (Kind.PROBE, Kind.ASK)
                spent = "probes" if probing else "student cells"
                report.timings.add(spent, now - last)
                last = now
                if message.get("kind") == Kind.START:
                    cell_started = now
                elif message.get("kind") == Kind.CELL:
                    spent = now - cell_started
                    # Whoever says so (the process's alarm, or the time it took), each cell of
                    # the notebook once: never more than stock nbgrader would spend on it.
                    stopped = message.get("interrupted") is True or spent >= limits.cell_seconds
                    if stopped and self.current in self.cells:
                        # at most the notebook limit's worth in all: however many cells a
                        # submission stops, it holds its grading process at most twice that
                        stopped_for = min(spent, limits.cell_seconds + CELL_GRACE)
                        excused = min(limits.notebook_seconds, excused + stopped_for)
                        report.interrupted.append(self.current)
        if not self.finished and report.outcome == Outcome.GRADED:
            report.outcome = Outcome.KERNEL_DIED
            report.detail, report.where = exited or "the process ended", self.current
        return report

    def _answer(self, ask: dict, answers: int) -> str | None:
        """Answer an ask of a drawn function; what is wrong, if the submission floods."""
        if self.asked > ASK_BYTES:
            return f"asks of drawn functions over {ASK_BYTES} bytes in all"
        answer = self.oracle.answer(ask)
        self.unsent += wire.encode(Kind.ANSWER, **answer)
        if len(self.unsent) > UNREAD_ANSWERS:
            return "asks whose answers it does not read"
        self._write_answers(answers)
        return None

    def _write_answers(self, answers: int) -> None:
        """Write what the pipe takes now of the answers not yet sent."""
        try:
            written = os.write(answers, self.unsent)
        except BlockingIOError:
            return
        except OSError:  # it closed its end: it asks nothing more
            written = len(self.unsent)
        self.unsent = self.unsent[written:]

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
                self.report.detail = f"more than {MAX_OUTPUTS} outputs"
                self.report.where = self.current
            self.written += written_size(raw, self.budget - self.written)
            if self.written > self.budget:  # what it would take once written as a notebook
                self.report.outcome = Outcome.OUTPUT_LIMIT
                self.report.detail = f"the outputs would take over {self.budget} bytes written"
                raw = []
            self.report.cells[self.current] = {
                "outputs": well_formed_outputs(raw),
                "execution_count": well_formed_count(message.get("count")),
            }
            self.expect_probe = self.probes_at.get(str(self.current))
            if message.get("truncated") is True:
                self.report.outcome = Outcome.OUTPUT_LIMIT
                self.report.detail = f"output over {self.limits.output_bytes} bytes was cut"
                self.report.where = self.current
        elif kind == Kind.PROBE:
            if self.expect_probe is None or message.get("test") != self.expect_probe:
                return "a test's report out of turn"
            self.report.probes[self.expect_probe] = message.get("observations")
            self.expect_probe = None
        elif kind == Kind.FILES:
            files = message.get("files")
            if not self.files_back or self.report.files or not _are_files(files):
                return "files out of turn or not files"
            left_out = message.get("left_out")
            if type(left_out) is not int or left_out < 0:
                return "files out of turn or not files"
            self.report.files = {name: bytes.fromhex(data) for name, data in files.items()}
            self.report.files_left_out = left_out
        elif kind == Kind.ASK:
            if self.oracle is None:
                return "an ask of a drawn function where none was drawn"
        elif kind == Kind.FINISHED:
            self.finished = True
        else:
            return f"an unknown message {kind[:40]!r}"
        return None


def _are_files(files) -> bool:
    """Whether a FILES message holds relative paths with hex contents, within the limits."""
    if not isinstance(files, dict) or len(files) > FILES_BACK_COUNT:
        return False
    total = 0
    for name, data in files.items():
        if not (isinstance(name, str) and isinstance(data, str)) or not safe_relative(name):
            return False
        total += len(data) // 2
        if total > FILES_BACK_BYTES or not HEX.fullmatch(data):
            return False
    return True


def safe_relative(name: str) -> bool:
    """Whether `name` is a path inside a folder: relative, without `..`, NUL or backslash."""
    parts = name.split("/")
    return (
        bool(name)
        and not name.startswith("/")
        and "\\" not in name
        and "\0" not in name
        and all(part not in ("", ".", "..") for part in parts)
    )


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


def well_formed_count(value) -> int | None:
    """`value` where it is an execution count a notebook may hold, else None."""
    return value if type(value) is int and 0 <= value < 1 << 31 else None


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
        lambda o: (
            _is_bundle(o)
            and well_formed_count(o.get("execution_count")) == o.get("execution_count")
        ),
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


def well_formed_outputs(raw) -> list:
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
