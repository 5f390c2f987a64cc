"""Length-prefixed JSON messages between the grading process and the sandbox, each with a kind.

Only JSON crosses: nothing the sandbox sends is ever unpickled or executed by the grader. What
comes from the sandbox is untrusted, so every message is checked for size and nesting depth
before anyone walks it, and a frame that breaks a rule ends the conversation with a WireError.
Both sides import it: `inside/` and `outside/` share nothing else.
"""

import json
import os
import socket
import struct

from grader.compat import StrEnum

HEADER = struct.Struct(">I")
MAX_DEPTH = 64
MAX_OUTPUTS = 1000  # outputs per cell: more is flooding, however small each one is
# What a run leaves in its folder for the assignment's next notebook, sent back where asked
FILES_BACK_BYTES, FILES_BACK_COUNT = 8 * 1024**2, 500


class Kind(StrEnum):
    """Every kind of message, named once. Grading process <-> cell server: WARM (the lesson
    cells and the test cells), READY, LESSON (run a lesson's first cells once), PREPARE (have
    them run, for later), PREFIX (their outputs), FORK, FORKED, CLEAN, EXITED, CLEANED; grading
    process -> submission: REQUEST, then an ANSWER to each ASK; submission -> grading process:
    START, CELL, PROBE, ASK (of a drawn function), FILES, FINISHED; grading process <->
    reference server: OBSERVE, SEED, OBSERVATIONS, FAILED."""

    WARM = "warm"
    LESSON = "lesson"
    PREPARE = "prepare"
    PREFIX = "prefix"
    READY = "ready"
    FORK = "fork"
    FORKED = "forked"
    REQUEST = "request"
    START = "start"
    CELL = "cell"
    PROBE = "probe"
    FILES = "files"
    FINISHED = "finished"
    CLEAN = "clean"
    CLEANED = "cleaned"
    EXITED = "exited"
    OBSERVE = "observe"
    OBSERVATIONS = "observations"
    FAILED = "failed"
    SEED = "seed"
    ASK = "ask"
    ANSWER = "answer"


class WireError(RuntimeError):
    """The other side closed the channel or sent something that is not a message."""


class OverBudget(WireError):
    """More bytes came than the reader allows in all."""


def encode(kind: Kind, **fields) -> bytes:
    """One framed message: `{"kind": kind, **fields}` with its length in front."""
    data = json.dumps({"kind": Kind(kind).value, **fields}).encode()
    return HEADER.pack(len(data)) + data


def send(fd: int, kind: Kind, **fields) -> None:
    """Write one message to a file descriptor."""
    write_all(fd, encode(kind, **fields))


def receive(fd: int, limit: int) -> dict:
    """Read one message of at most `limit` bytes from a file descriptor."""
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size))
    if size > limit:
        raise WireError(f"message of {size} bytes is over the {limit}-byte limit")
    return decode(_read_exactly(fd, size))


def decode(body: bytes) -> dict:
    """A message from its JSON body: an object with a string kind, nested at most MAX_DEPTH."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise WireError(f"not a JSON message: {type(error).__name__}") from None
    if not isinstance(message, dict) or not isinstance(message.get("kind"), str):
        raise WireError("a message must be a JSON object with a kind")
    if depth(message) > MAX_DEPTH:
        raise WireError(f"a message nested deeper than {MAX_DEPTH} levels")
    return message


def depth(value) -> int:
    """How deeply lists and objects nest in a decoded JSON value, counted without recursion
    (and without visiting its numbers and strings one by one: JSON's containers are exactly
    dicts and lists)."""
    if type(value) not in CONTAINERS:
        return 0
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:
            children = item.values() if type(item) is dict else item
            stack += [(child, level + 1) for child in children if type(child) in CONTAINERS]
    return deepest


CONTAINERS = (dict, list)


class Frames:
    """Incremental reader of messages from a non-blocking descriptor, with a total byte budget."""

    def __init__(self, fd: int, budget: int):
        self.fd, self.budget, self.buffer, self.total = fd, budget, b"", 0
        self.sizes: list[int] = []  # the framed size of each message the last read returned

    def refund(self, size: int) -> None:
        """Take `size` bytes already read off the budget (a message counted elsewhere)."""
        self.total -= size

    def read(self) -> list[dict] | None:
        """The complete messages available now; None once the other side has closed."""
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            return None
        self.total += len(chunk)
        if self.total > self.budget:
            raise OverBudget(f"over the {self.budget}-byte output budget")
        self.buffer += chunk
        messages, self.sizes = [], []
        while len(self.buffer) >= HEADER.size:
            (size,) = HEADER.unpack(self.buffer[: HEADER.size])
            if len(self.buffer) < HEADER.size + size:
                break
            body = self.buffer[HEADER.size : HEADER.size + size]
            self.buffer = self.buffer[HEADER.size + size :]
            messages.append(decode(body))
            self.sizes.append(HEADER.size + size)
        return messages


def send_fds(sock: socket.socket, kind: str, fds: list[int], **fields) -> None:
    """Send one small message with file descriptors attached (SCM_RIGHTS)."""
    socket.send_fds(sock, [encode(kind, **fields)], fds)


def receive_fds(sock: socket.socket, limit: int = 1 << 16) -> tuple[dict, list[int]]:
    """Receive one small message and the descriptors sent with it."""
    data, fds, _, _ = socket.recv_fds(sock, limit, 4)
    if len(data) < HEADER.size:
        raise WireError("the channel closed")
    (size,) = HEADER.unpack(data[: HEADER.size])
    if size != len(data) - HEADER.size:
        raise WireError("a control message must come in one piece")
    return decode(data[HEADER.size :]), fds


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data`, however many writes it takes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise WireError("the channel closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
