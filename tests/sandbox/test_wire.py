"""What crosses from the sandbox is checked before the grader walks it: size, depth, kind, order."""

import json
import os

import pytest

from grader.judging.verdict import verdict
from grader.sandbox import wire
from grader.sandbox.outside.isolation import Limits
from grader.sandbox.outside.reports import ReportWatch, RunReport, well_formed_outputs
from grader.sandbox.wire import FILES_BACK_BYTES, Kind

RULE = {"rtol": 1e-4, "atol": 1e-5}


def test_a_deeply_nested_message_is_refused_without_a_crash():
    """100,000 nested lists (RecursionError in json) and 65 (over the depth limit) are refused."""
    with pytest.raises(wire.WireError):
        wire.decode(b'{"kind": "x", "v": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    nested = json.dumps({"kind": "x", "v": json.loads("[" * 64 + "]" * 64)})
    with pytest.raises(wire.WireError, match="deeper"):
        wire.decode(nested.encode())
    assert wire.decode(json.dumps({"kind": "x", "v": [[1]]}).encode())["v"] == [[1]]


def test_a_message_needs_a_kind_and_an_object():
    """A list, a number or an object without a string kind is not a message."""
    for body in (b"[1]", b"3", b'{"cell": 1}', b'{"kind": 5}', b"\xff"):
        with pytest.raises(wire.WireError):
            wire.decode(body)


def test_an_oversized_frame_is_refused_before_it_is_read():
    """The length in front is checked against the limit first."""
    read_end, write_end = os.pipe()
    os.write(write_end, wire.HEADER.pack(10**9))
    with pytest.raises(wire.WireError, match="over the"):
        wire.receive(read_end, 1024)
    os.close(read_end)
    os.close(write_end)


def test_frames_stop_at_the_output_budget():
    """A stream of messages over the budget ends with a WireError, not a full memory."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.write(write_end, wire.encode("cell", text="x" * 5000))
    frames = wire.Frames(read_end, budget=4000)
    with pytest.raises(wire.OverBudget, match="budget"):
        frames.read()
    os.close(read_end)
    os.close(write_end)


def _watch(*messages) -> RunReport:
    watch = ReportWatch(Limits(), {"1": "test_a"})
    for message in messages:
        problem = watch._take({"kind": message[0], **message[1]})
        if problem:
            return problem
    return watch.report


def test_messages_in_the_runners_order_are_recorded():
    """start, cell, probe and finished in order give the cell's outputs and the probe's report."""
    report = _watch(
        ("start", {"cell": 1}),
        ("cell", {"cell": 1, "outputs": [], "count": 1}),
        ("probe", {"test": "test_a", "observations": [["x", 1]]}),
        ("finished", {}),
    )
    assert report.cells == {1: {"outputs": [], "execution_count": 1}}
    assert report.probes == {"test_a": [["x", 1]]}


@pytest.mark.parametrize(
    "messages",
    [
        [("probe", {"test": "test_a", "observations": []})],
        [("start", {"cell": 1}), ("cell", {"cell": 2, "outputs": []})],
        [("start", {"cell": 2}), ("start", {"cell": 1})],
        [("start", {"cell": "1"})],
        [("start", {"cell": 1}), ("cell", {"cell": 1}), ("cell", {"cell": 1})],
        [("start", {"cell": 1}), ("cell", {"cell": 1}), ("probe", {"test": "test_b"})],
        [("finished", {}), ("start", {"cell": 3})],
        [("verdict", {"points": 7})],
    ],
    ids=[
        "early probe",
        "other cell",
        "backwards",
        "text index",
        "twice",
        "wrong test",
        "after end",
        "unknown",
    ],
)
def test_a_message_out_of_the_runners_order_is_refused(messages):
    """A message the cell runner would never send in that place is a protocol violation."""
    assert isinstance(_watch(*messages), str)


def test_only_well_formed_outputs_are_kept():
    """Outputs that break nbformat's schema are dropped; good ones are kept as nodes."""
    raw = [
        {"output_type": "stream", "name": "stdout", "text": "ok\n"},
        {"output_type": "stream", "name": "stdin", "text": "no"},
        {"output_type": "stream", "name": "stdout", "text": 5},
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]},
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": [1]},
        {"output_type": "display_data", "data": {"text/plain": "x"}},
        {"output_type": "execute_result", "data": {"text/plain": "1"}, "execution_count": "1"},
        {"output_type": "verdict", "points": 7},
        "text",
    ]
    kept = well_formed_outputs(raw)
    assert [o.output_type for o in kept] == ["stream", "error", "display_data"]
    assert kept[2].metadata == {}


@pytest.mark.parametrize(
    "value",
    [10**400, -(10**400), float("nan"), float("inf"), "x" * 100_000, [[[[[1]]]]], {"shape": 1}],
    ids=["huge", "huge negative", "nan", "inf", "long text", "nested", "odd tensor"],
)
def test_the_judge_answers_any_reported_value(value):
    """Huge whole numbers, NaN, long text and odd shapes get a failing verdict, never an error."""
    for wanted in (2.5, 3, {"shape": [2], "values": [1.0, 2.0]}, "text", [1.0]):
        problem = verdict([["answer", wanted, RULE]], [["answer", value]])
        assert isinstance(problem, str) and len(problem) < 300


@pytest.mark.parametrize(
    "files",
    [
        {"../up.txt": "00"},
        {"/etc/passwd": "00"},
        {"a/../../b": "00"},
        {"a\\..\\b": "00"},
        {"": "00"},
        {"ok.txt": "zz"},
        {"ok.txt": 7},
        {"big.bin": "00" * (FILES_BACK_BYTES + 1)},
        ["not", "a", "dict"],
    ],
)
def test_files_left_by_a_run_must_be_relative_paths_within_the_limits(files):
    """A FILES report naming a path out of the folder, holding what is not hex, or over the
    limit breaks the channel's rules: the submission is not graded on it."""
    watch = ReportWatch(Limits(), {}, files_back=True)
    message = {"kind": Kind.FILES, "files": files, "left_out": 0}
    assert watch._take(message) == "files out of turn or not files"


def test_files_are_taken_only_where_asked_for_and_once():
    """Files come back only where the run was asked for them, once; they are decoded."""
    files = {"kind": Kind.FILES, "left_out": 0}
    assert ReportWatch(Limits(), {})._take({**files, "files": {}}) is not None
    watch = ReportWatch(Limits(), {}, files_back=True)
    assert watch._take({**files, "files": {"a.txt": "00"}, "left_out": -1}) is not None
    assert watch._take({**files, "files": {"out/model.txt": "6869"}, "left_out": 3}) is None
    assert (watch.report.files, watch.report.files_left_out) == ({"out/model.txt": b"hi"}, 3)
    assert watch._take({**files, "files": {"again.txt": "00"}}) is not None


def test_files_kept_stay_in_the_folder_and_never_replace_a_notebook(tmp_path):
    """keep_files writes what the report's reader let through, but no notebook, no
    timestamp.txt, nothing the course ignores, nothing out of the folder, and skips a name
    that clashes with a folder instead of failing the grading."""
    from grader.grading.submission import keep_files

    folder = tmp_path / "autograded"
    (folder / "data").mkdir(parents=True)
    (folder / "part2.ipynb").write_text("submitted")
    keep_files(
        folder,
        {
            "model.txt": b"6",
            "part2.ipynb": b"forged",
            "data": b"a file where a folder is",
            "model.txt/inside": b"a folder where a file is",
            "data/rows.csv": b"1",
            "timestamp.txt": b"not a time",
            "__pycache__/x.pyc": b"\0",
            "probes.py": b"def test_a(student, observe, draw): pass",
        },
        ["__pycache__", "*.pyc", "probes.py"],
    )
    assert (folder / "model.txt").read_bytes() == b"6"
    assert (folder / "part2.ipynb").read_text() == "submitted"
    assert (folder / "data" / "rows.csv").read_bytes() == b"1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["autograded"]
    assert sorted(p.name for p in folder.iterdir()) == ["data", "model.txt", "part2.ipynb"]
