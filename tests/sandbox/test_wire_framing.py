"""Framing of the sandbox channel over real pipes and sockets: round trips, kinds, limits, cuts.

tests/sandbox/test_wire.py covers decoding of hostile bodies and the order of the runner's messages;
here the frames themselves are sent and received, and each limit is shown to act at its edge.
"""

import contextlib
import json
import os
import socket
import threading

import pytest

from grader.sandbox import wire

# The kinds the grading process, the template and the submission's process send each other.
KINDS = [
    "warm",
    "ready",
    "fork",
    "forked",
    "request",
    "start",
    "cell",
    "probe",
    "finished",
    "exited",
    "clean",
    "cleaned",
]


@pytest.fixture
def pipe():
    """A pipe (read end, write end); whichever end a test has not closed is closed after it."""
    ends = os.pipe()
    yield ends
    for fd in ends:
        with contextlib.suppress(OSError):
            os.close(fd)


@pytest.fixture
def seqpacket():
    """A connected pair of Unix SOCK_SEQPACKET sockets, as the grader's control channel uses."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        yield ours, theirs


def _body(frame: bytes) -> bytes:
    (size,) = wire.HEADER.unpack(frame[: wire.HEADER.size])
    assert size == len(frame) - wire.HEADER.size
    return frame[wire.HEADER.size :]


def _nested(levels: int) -> dict:
    """A message nested exactly `levels` deep: the message object, then lists inside it."""
    return {"kind": "cell", "v": json.loads("[" * (levels - 1) + "]" * (levels - 1))}


def _frame(body: bytes) -> bytes:
    return wire.HEADER.pack(len(body)) + body


@pytest.mark.parametrize("kind", KINDS)
def test_every_message_carries_its_kind_first(kind):
    """An encoded message is its body's length, then a JSON object whose first key is its kind."""
    frame = wire.encode(kind, cell=3)
    body = _body(frame)
    assert list(json.loads(body)) == ["kind", "cell"]
    assert wire.decode(body) == {"kind": kind, "cell": 3}


def test_a_message_with_no_fields_is_its_kind_alone():
    """A message sent with no fields still arrives as an object holding its kind."""
    assert wire.decode(_body(wire.encode("finished"))) == {"kind": "finished"}


def test_a_message_round_trips_through_a_pipe(pipe):
    """What send writes, receive reads back field for field, text and nesting intact."""
    read_end, write_end = pipe
    outputs = [{"output_type": "stream", "name": "stdout", "text": "é ☃ \x00 \n"}]
    wire.send(write_end, "cell", cell=7, outputs=outputs, count=None, truncated=False)
    assert wire.receive(read_end, 1 << 16) == {
        "kind": "cell",
        "cell": 7,
        "outputs": outputs,
        "count": None,
        "truncated": False,
    }


def test_messages_sent_in_a_row_are_received_one_at_a_time_in_order(pipe):
    """Several frames back to back on one pipe come out one per receive, in the order sent."""
    read_end, write_end = pipe
    for index in range(3):
        wire.send(write_end, "start", cell=index)
    wire.send(write_end, "finished")
    received = [wire.receive(read_end, 1024) for _ in range(4)]
    assert received == [
        {"kind": "start", "cell": 0},
        {"kind": "start", "cell": 1},
        {"kind": "start", "cell": 2},
        {"kind": "finished"},
    ]


def test_a_message_larger_than_the_socket_buffer_round_trips():
    """A 3 MB message crosses a socket in many writes and reads and arrives whole."""
    ours, theirs = socket.socketpair()
    text = "0123456789abcdef" * (3 * 1024**2 // 16)
    writer = threading.Thread(
        target=wire.send, args=(theirs.fileno(), "request"), kwargs={"t": text}
    )
    with ours, theirs:
        writer.start()
        try:
            message = wire.receive(ours.fileno(), 4 * 1024**2)
        finally:
            writer.join()
    assert message["kind"] == "request" and message["t"] == text


def test_the_size_limit_admits_a_body_of_exactly_the_limit(pipe):
    """A body as long as the limit is received; with a limit one byte smaller it is refused."""
    read_end, write_end = pipe
    frame = wire.encode("cell", text="x" * 500)
    size = len(frame) - wire.HEADER.size
    os.write(write_end, frame)
    assert wire.receive(read_end, size)["text"] == "x" * 500
    os.write(write_end, frame)
    with pytest.raises(wire.WireError, match=f"{size} bytes is over the {size - 1}-byte limit"):
        wire.receive(read_end, size - 1)


def test_nesting_at_the_depth_limit_passes_and_one_level_more_is_refused(pipe):
    """A message nested MAX_DEPTH deep is received; one nested a level deeper is a WireError."""
    read_end, write_end = pipe
    at_limit, over = _nested(wire.MAX_DEPTH), _nested(wire.MAX_DEPTH + 1)
    assert wire.depth(at_limit) == wire.MAX_DEPTH
    assert wire.depth(over) == wire.MAX_DEPTH + 1
    wire.send(write_end, "cell", v=at_limit["v"])
    assert wire.receive(read_end, 1 << 16)["v"] == at_limit["v"]
    wire.send(write_end, "cell", v=over["v"])
    with pytest.raises(wire.WireError, match=f"deeper than {wire.MAX_DEPTH}"):
        wire.receive(read_end, 1 << 16)


def test_objects_count_toward_the_depth_as_lists_do():
    """Nested objects, and lists and objects mixed, are measured level by level."""
    assert wire.depth(3) == 0
    assert wire.depth({}) == 1
    assert wire.depth({"a": [{"b": []}]}) == 4
    objects = {"kind": "probe"}
    for _ in range(wire.MAX_DEPTH):
        objects = {"kind": "probe", "o": objects}
    assert wire.depth(objects) == wire.MAX_DEPTH + 1
    with pytest.raises(wire.WireError, match="deeper"):
        wire.decode(json.dumps(objects).encode())


@pytest.mark.parametrize(
    "cut",
    [0, 2, wire.HEADER.size, wire.HEADER.size + 10],
    ids=["nothing sent", "inside the header", "header only", "inside the body"],
)
def test_a_channel_closed_mid_frame_is_a_wire_error(pipe, cut):
    """A frame cut short by the writer closing is refused as a closed channel, never returned."""
    read_end, write_end = pipe
    frame = wire.encode("cell", text="x" * 100)
    os.write(write_end, frame[:cut])
    os.close(write_end)
    with pytest.raises(wire.WireError, match="closed"):
        wire.receive(read_end, 1 << 16)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"null",
        b'"cell"',
        b'{"kind": "cell"} trailing',
        b'{"kind": "a", "n": ' + b"9" * 5000 + b"}",
    ],
    ids=["empty", "null", "a string", "trailing data", "5000-digit number"],
)
def test_a_frame_whose_body_is_not_a_message_is_a_wire_error(pipe, body):
    """Bodies that are not one JSON object with a kind are refused on receive as a WireError."""
    read_end, write_end = pipe
    os.write(write_end, _frame(body))
    with pytest.raises(wire.WireError):
        wire.receive(read_end, 1 << 16)


def test_frames_collect_a_message_split_across_reads(pipe):
    """A frame arriving in pieces (header split, body split) is returned only once complete."""
    read_end, write_end = pipe
    os.set_blocking(read_end, False)
    frames = wire.Frames(read_end, budget=1 << 16)
    frame = wire.encode("start", cell=4)
    for piece in (frame[:2], frame[2:7], frame[7:-1]):
        os.write(write_end, piece)
        assert frames.read() == []
    os.write(write_end, frame[-1:])
    assert frames.read() == [{"kind": "start", "cell": 4}]


def test_frames_return_every_complete_message_of_one_read_and_keep_the_rest(pipe):
    """Two whole frames and part of a third read at once give two messages; the third follows."""
    read_end, write_end = pipe
    os.set_blocking(read_end, False)
    frames = wire.Frames(read_end, budget=1 << 16)
    third = wire.encode("finished")
    os.write(write_end, wire.encode("start", cell=1) + wire.encode("cell", cell=1) + third[:3])
    assert frames.read() == [{"kind": "start", "cell": 1}, {"kind": "cell", "cell": 1}]
    os.write(write_end, third[3:])
    assert frames.read() == [{"kind": "finished"}]


def test_frames_say_none_at_the_end_and_drop_a_cut_frame(pipe):
    """When the writer closes, read gives None; half a frame left over is never a message."""
    read_end, write_end = pipe
    os.set_blocking(read_end, False)
    frames = wire.Frames(read_end, budget=1 << 16)
    os.write(write_end, wire.encode("finished")[:-1])
    assert frames.read() == []
    os.close(write_end)
    assert frames.read() is None


def test_frames_refuse_a_bad_body_as_a_wire_error_not_over_budget(pipe):
    """A complete frame whose body is not a message raises WireError, not OverBudget."""
    read_end, write_end = pipe
    os.set_blocking(read_end, False)
    os.write(write_end, _frame(b"[1, 2]"))
    with pytest.raises(wire.WireError, match="with a kind") as raised:
        wire.Frames(read_end, budget=1 << 16).read()
    assert not isinstance(raised.value, wire.OverBudget)


def test_the_frames_budget_admits_exactly_its_size_and_counts_across_reads(pipe):
    """A budget of N bytes takes frames totalling N; one byte more, in a later read, is over."""
    read_end, write_end = pipe
    os.set_blocking(read_end, False)
    first, second = wire.encode("start", cell=1), wire.encode("cell", cell=1, text="x" * 40)
    frames = wire.Frames(read_end, budget=len(first) + len(second))
    os.write(write_end, first)
    assert frames.read() == [{"kind": "start", "cell": 1}]
    os.write(write_end, second)
    assert frames.read() == [{"kind": "cell", "cell": 1, "text": "x" * 40}]
    os.write(write_end, b"\x00")
    with pytest.raises(wire.OverBudget, match=f"over the {len(first) + len(second)}-byte"):
        frames.read()


def test_over_budget_is_a_wire_error():
    """OverBudget is a kind of WireError, so a reader that catches WireError also stops there."""
    assert issubclass(wire.OverBudget, wire.WireError)


def test_descriptors_sent_with_a_message_arrive_and_work(seqpacket, pipe):
    """send_fds passes a pipe's ends; receive_fds returns the message and usable descriptors."""
    ours, theirs = seqpacket
    read_end, write_end = pipe
    wire.send_fds(ours, "fork", [read_end, write_end], tag="t")
    message, fds = wire.receive_fds(theirs)
    try:
        assert message == {"kind": "fork", "tag": "t"}
        assert len(fds) == 2 and not set(fds) & {read_end, write_end}
        os.write(fds[1], b"through the passed descriptor")
        assert os.read(read_end, 100) == b"through the passed descriptor"
    finally:
        for fd in fds:
            os.close(fd)


def test_a_control_message_without_descriptors_has_none(seqpacket):
    """A message sent with no descriptors comes with an empty list of them."""
    ours, theirs = seqpacket
    wire.send_fds(ours, "cleaned", [], leftovers=2)
    assert wire.receive_fds(theirs) == ({"kind": "cleaned", "leftovers": 2}, [])


def test_receive_fds_reports_a_closed_channel(seqpacket):
    """When the other end of the control socket closes, receive_fds raises WireError."""
    ours, theirs = seqpacket
    ours.close()
    with pytest.raises(wire.WireError, match="closed"):
        wire.receive_fds(theirs)


def test_receive_fds_admits_a_message_of_exactly_its_limit_and_refuses_a_longer_one(seqpacket):
    """A control message as long as the limit is read; one byte longer is cut, and refused."""
    ours, theirs = seqpacket
    frame = wire.encode("exited", how="the process was killed by SIGKILL")
    ours.sendall(frame)
    assert wire.receive_fds(theirs, limit=len(frame))[0]["kind"] == "exited"
    ours.sendall(frame)
    with pytest.raises(wire.WireError, match="one piece"):
        wire.receive_fds(theirs, limit=len(frame) - 1)


def test_receive_fds_refuses_two_messages_run_together_on_a_stream_socket():
    """On a stream socket two frames read at once are not one control message: WireError."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        ours.sendall(wire.encode("forked") + wire.encode("exited", how="x"))
        with pytest.raises(wire.WireError, match="one piece"):
            wire.receive_fds(theirs)


def test_receive_fds_refuses_a_control_message_that_is_not_json(seqpacket):
    """A correctly framed control message whose body is not a JSON message is a WireError."""
    ours, theirs = seqpacket
    ours.sendall(_frame(b"\xff\xfe not json"))
    with pytest.raises(wire.WireError, match="not a JSON message"):
        wire.receive_fds(theirs)
