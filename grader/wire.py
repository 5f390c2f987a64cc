"""Length-prefixed JSON messages between the grading process and the sandbox.

Only JSON crosses: nothing the sandbox sends is ever unpickled or executed by the grader.
"""

import json
import os
import struct

HEADER = struct.Struct(">I")


class WireError(RuntimeError):
    """The other side closed the channel or sent something that is not a message."""


def send(fd: int, message: dict) -> None:
    """Write one message to a file descriptor."""
    data = json.dumps(message).encode()
    _write_all(fd, HEADER.pack(len(data)) + data)


def receive(fd: int, limit: int) -> dict:
    """Read one message of at most `limit` bytes from a file descriptor."""
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size))
    if size > limit:
        raise WireError(f"message of {size} bytes is over the {limit}-byte limit")
    try:
        message = json.loads(_read_exactly(fd, size))
    except ValueError as error:
        raise WireError(f"not a JSON message: {error}") from None
    if not isinstance(message, dict):
        raise WireError("a message must be a JSON object")
    return message


def _write_all(fd: int, data: bytes) -> None:
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
