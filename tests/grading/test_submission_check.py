"""submission_check.problem gives each unusable submission its outcome and a reason naming it.

Each test builds one submission folder in tmp_path, starting from a lesson's released notebook,
and breaks it in one way. tests/grading/test_malformed.py grades such submissions in a whole
class run; here the check is called directly, one outcome at a time.
"""

import errno
import json
import os

import nbformat
import pytest

from grader.course import lessons, student_notebook
from grader.grading import submission_check
from grader.grading.submission_check import (
    MAX_CELLS,
    SIZE_LIMIT,
    deleted_tests,
    extra_notebooks,
    open_no_follow,
    problem,
    regular_files,
)

LESSON = lessons()[0]  # not named `lesson`: tests/conftest.py runs such tests once per lesson
NOTEBOOK = f"{LESSON}.ipynb"
RELEASED = student_notebook(LESSON).read_bytes()


def _raw() -> dict:
    """The released notebook as plain JSON, to break."""
    return json.loads(RELEASED)


def _submit(tmp_path, data) -> "os.PathLike":
    """A submission folder holding `data` (bytes, or JSON to dump) as the lesson's notebook."""
    folder = tmp_path / "submission"
    folder.mkdir(parents=True, exist_ok=True)
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    (folder / NOTEBOOK).write_bytes(body)
    return folder


def _grade_ids(raw: dict) -> list[str]:
    return [
        c["metadata"]["nbgrader"]["grade_id"]
        for c in raw["cells"]
        if c["metadata"].get("nbgrader", {}).get("grade")
    ]


def test_the_released_notebook_has_no_problem(tmp_path):
    """The unchanged released notebook passes the check."""
    assert problem(_submit(tmp_path, RELEASED), LESSON) is None


def test_a_folder_without_the_notebook_is_a_missing_notebook(tmp_path):
    """An empty submission folder is a missing notebook, and the reason names the file."""
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "notes.txt").write_text("I forgot")
    assert problem(folder, LESSON) == ("missing notebook", f"no {NOTEBOOK} in the submission")


def test_a_submission_folder_that_does_not_exist_is_a_missing_notebook(tmp_path):
    """A student with no folder at all gets a missing notebook, not an error."""
    assert problem(tmp_path / "absent", LESSON) == (
        "missing notebook",
        f"no {NOTEBOOK} in the submission",
    )


def test_a_missing_notebook_names_the_notebooks_that_were_found(tmp_path):
    """When the notebook was renamed, the reason lists the notebooks found instead, sorted."""
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "zz_copy.ipynb").write_bytes(RELEASED)
    (folder / "my_work.ipynb").write_bytes(RELEASED)
    assert problem(folder, LESSON) == (
        "missing notebook",
        f"no {NOTEBOOK} in the submission; found my_work.ipynb, zz_copy.ipynb",
    )


def test_a_submission_folder_that_is_a_link_is_malformed(tmp_path):
    """A submission folder that is a symbolic link to a good folder is refused, not followed."""
    real = _submit(tmp_path, RELEASED)
    link = tmp_path / "linked"
    link.symlink_to(real, target_is_directory=True)
    assert problem(link, LESSON) == ("malformed", "the submission folder is a symbolic link")


def _link(path, tmp_path):
    target = tmp_path / "elsewhere.ipynb"
    target.write_bytes(RELEASED)
    path.symlink_to(target)


def _dangling_link(path, tmp_path):
    path.symlink_to(tmp_path / "nowhere.ipynb")


def _fifo(path, tmp_path):
    os.mkfifo(path)


def _directory(path, tmp_path):
    path.mkdir()
    (path / NOTEBOOK).write_bytes(RELEASED)


@pytest.mark.parametrize(
    "make",
    [_link, _dangling_link, _fifo, _directory],
    ids=["link", "dangling link", "fifo", "directory"],
)
def test_a_notebook_that_is_a_link_or_special_file_is_malformed(tmp_path, make):
    """A notebook path that is a link, a FIFO or a folder is refused without being opened."""
    folder = tmp_path / "submission"
    folder.mkdir()
    make(folder / NOTEBOOK, tmp_path)
    assert problem(folder, LESSON) == (
        "malformed",
        f"{NOTEBOOK} is a link or a special file, not a notebook file",
    )


def test_a_notebook_over_the_size_limit_is_malformed(tmp_path):
    """A valid notebook padded to exactly SIZE_LIMIT bytes passes; one byte more is too big."""
    padding = SIZE_LIMIT - len(RELEASED)
    folder = _submit(tmp_path, RELEASED + b" " * padding)
    assert (folder / NOTEBOOK).stat().st_size == SIZE_LIMIT
    assert problem(folder, LESSON) is None
    with open(folder / NOTEBOOK, "ab") as handle:
        handle.write(b" ")
    assert problem(folder, LESSON) == ("malformed", f"{NOTEBOOK} is 50 MB, over the 50 MB limit")


def test_a_notebook_that_is_not_utf8_is_malformed_at_its_first_bad_byte(tmp_path):
    """Bytes that are not UTF-8 are refused, and the reason gives the first bad byte's offset."""
    data = '{"cells": "ok é", "x": "'.encode() + b"\xff\xfe" + b'"}'
    folder = _submit(tmp_path, data)
    bad = data.index(b"\xff")
    assert problem(folder, LESSON) == ("malformed", f"{NOTEBOOK} is not valid UTF-8 (byte {bad})")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"this is not a notebook", "JSONDecodeError"),
        (b"", "JSONDecodeError"),
        (RELEASED[: len(RELEASED) // 2], "JSONDecodeError (the file looks truncated)"),
        (b"[" * 100_000 + b"]" * 100_000, "RecursionError"),
    ],
    ids=["text", "empty", "truncated", "deeply nested"],
)
def test_a_notebook_that_is_not_json_is_malformed(tmp_path, data, reason):
    """A file that does not parse as JSON is refused, saying why (and when it looks cut off)."""
    assert problem(_submit(tmp_path, data), LESSON) == (
        "malformed",
        f"{NOTEBOOK} is not JSON: {reason}",
    )


@pytest.mark.parametrize(
    ("version", "shown"),
    [(3, "3"), (5, "5"), ("4", "'4'"), (4.0, "4.0"), (True, "True"), (None, "None")],
    ids=["3", "5", "text", "float", "bool", "missing"],
)
def test_a_notebook_of_another_nbformat_version_is_malformed(tmp_path, version, shown):
    """Only the whole number 4 is accepted as nbformat; the reason shows the version found."""
    raw = _raw()
    if version is None:
        del raw["nbformat"]
    else:
        raw["nbformat"] = version
    assert problem(_submit(tmp_path, raw), LESSON) == (
        "malformed",
        f"{NOTEBOOK} has nbformat version {shown}; lessons use version 4",
    )


def test_a_json_document_that_is_not_an_object_is_malformed(tmp_path):
    """A JSON list is no notebook: it has no nbformat version."""
    assert problem(_submit(tmp_path, b"[1, 2, 3]"), LESSON) == (
        "malformed",
        f"{NOTEBOOK} has nbformat version None; lessons use version 4",
    )


@pytest.mark.parametrize("minor", ["5", None], ids=["text", "missing"])
def test_a_notebook_with_a_bad_nbformat_minor_is_malformed_and_told_so(tmp_path, minor):
    """nbformat 4 with a minor version that is not a whole number is refused, and the reason
    names nbformat_minor rather than the (correct) major version."""
    raw = _raw()
    if minor is None:
        del raw["nbformat_minor"]
    else:
        raw["nbformat_minor"] = minor
    outcome, detail = problem(_submit(tmp_path, raw), LESSON)
    assert outcome == "malformed" and detail.startswith(NOTEBOOK)
    assert "nbformat_minor" in detail, detail


def _with_cells(count: int) -> dict:
    raw = _raw()
    extra = {"cell_type": "markdown", "metadata": {}, "source": "x"}
    cells = raw["cells"]
    cells.extend({**extra, "id": f"extra-{i}"} for i in range(count - len(cells)))
    return raw


def test_a_notebook_over_the_cell_limit_is_malformed(tmp_path):
    """MAX_CELLS cells pass the check; one cell more is refused with the count in the reason."""
    assert problem(_submit(tmp_path, _with_cells(MAX_CELLS)), LESSON) is None
    assert problem(_submit(tmp_path, _with_cells(MAX_CELLS + 1)), LESSON) == (
        "malformed",
        f"{NOTEBOOK} has {MAX_CELLS + 1} cells, over the limit of {MAX_CELLS}",
    )


def test_a_notebook_that_breaks_the_schema_is_malformed(tmp_path):
    """A cell without a source fails nbformat's validation, and the reason quotes the error."""
    raw = _raw()
    del raw["cells"][2]["source"]
    assert problem(_submit(tmp_path, raw), LESSON) == (
        "malformed",
        f"{NOTEBOOK} is not a valid notebook: 'source' is a required property",
    )


@pytest.mark.parametrize("where", ["source", "output"])
def test_lines_that_are_not_text_are_named_by_the_schema(tmp_path, where):
    """A source or output given as lines, one of them not text, is refused with the schema's
    reason (reading it as nbformat does would fail on the join, saying nothing of why)."""
    raw = _raw()
    cell = next(c for c in raw["cells"] if c["cell_type"] == "code")
    if where == "source":
        cell["source"] = ["x = 1\n", 5]
    else:
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["a\n", 2]}]
    outcome, reason = problem(_submit(tmp_path, raw), LESSON)
    assert outcome == "malformed"
    assert reason.startswith(f"{NOTEBOOK} is not a valid notebook: ")
    assert "is not valid under any of the given schemas" in reason


def test_a_gradable_notebook_is_handed_on_as_nbformat_reads_it(tmp_path):
    """The checked notebook is the one grading uses (read once): the same as `nbformat.read`
    gives, its lines joined."""
    raw = _raw()
    raw["cells"][0]["source"] = ["first line\n", "second line"]
    folder = _submit(tmp_path, raw)
    why, checked = submission_check.checked(folder, LESSON)
    assert why is None
    assert checked == nbformat.read(folder / NOTEBOOK, as_version=4)
    assert checked.cells[0].source == "first line\nsecond line"


@pytest.mark.parametrize("value", ["test_make_leaf", None, ["grade"]], ids=["text", "null", "list"])
def test_nbgrader_metadata_that_is_not_an_object_is_malformed(tmp_path, value):
    """A cell whose nbgrader metadata is not an object is refused, naming the cell (from 1)."""
    raw = _raw()
    raw["cells"][3]["metadata"]["nbgrader"] = value
    assert problem(_submit(tmp_path, raw), LESSON) == (
        "malformed",
        f"{NOTEBOOK}: cell 4 has nbgrader metadata that is no object",
    )


def test_a_notebook_swapped_for_a_link_after_the_checks_is_not_followed(tmp_path, monkeypatch):
    """If the notebook becomes a link between the checks and the read, the read refuses it and
    the error is reported as malformed, never raised."""
    folder = _submit(tmp_path, RELEASED)
    target = tmp_path / "instructor.ipynb"
    target.write_bytes(RELEASED)

    def swap_then_open(path, flags):
        os.unlink(path)
        os.symlink(target, path)
        return open_no_follow(path, flags)

    monkeypatch.setattr(submission_check, "open_no_follow", swap_then_open)
    assert problem(folder, LESSON) == ("malformed", f"{NOTEBOOK} cannot be read (OSError)")


@pytest.mark.filterwarnings("ignore::nbformat.warnings.MissingIDFieldWarning")
def test_a_notebook_that_makes_the_parser_fail_is_malformed_not_an_error(tmp_path):
    """Cells that are not objects make nbformat raise; problem still answers malformed."""
    raw = _raw()
    raw["cells"] = ["not a cell"]
    outcome, detail = problem(_submit(tmp_path, raw), LESSON)
    assert outcome == "malformed" and detail.startswith(NOTEBOOK)


def test_extra_notebooks_are_the_other_notebooks_sorted(tmp_path):
    """Notebooks beside the lesson's are listed by name, sorted; other files are not."""
    folder = _submit(tmp_path, RELEASED)
    for name in ("scratch.ipynb", "a_copy.ipynb", "notes.txt", "ipynb"):
        (folder / name).write_bytes(b"{}")
    assert extra_notebooks(folder, [LESSON]) == ["a_copy.ipynb", "scratch.ipynb"]
    assert extra_notebooks(folder, [LESSON, "scratch"]) == ["a_copy.ipynb"]
    assert extra_notebooks(_submit(tmp_path / "other", RELEASED), [LESSON]) == []


def test_deleted_tests_are_the_test_cells_missing_from_the_submission(tmp_path):
    """A test cell removed from the notebook is reported by its grade id; the others are not."""
    raw = _raw()
    wanted = _grade_ids(raw)
    assert len(wanted) >= 2
    untouched = _submit(tmp_path / "untouched", raw)
    assert deleted_tests(untouched, LESSON, wanted) == []
    removed = wanted[1]
    raw["cells"] = [
        c for c in raw["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") != removed
    ]
    assert deleted_tests(_submit(tmp_path, raw), LESSON, wanted) == [removed]


def test_regular_files_lists_only_regular_files_and_follows_no_link(tmp_path):
    """Nested regular files are listed, sorted; links to files or folders and FIFOs are not,
    and nothing behind a linked folder is listed."""
    folder = tmp_path / "submission"
    (folder / "sub" / "deeper").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("answer = 42")
    for name in ("b.txt", "a.ipynb", "sub/c.py", "sub/deeper/d.csv"):
        (folder / name).write_text(name)
    (folder / "link_to_file").symlink_to(outside / "secret.py")
    (folder / "link_to_folder").symlink_to(outside, target_is_directory=True)
    (folder / "sub" / "zeros").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe")
    assert regular_files(folder) == [
        folder / "a.ipynb",
        folder / "b.txt",
        folder / "sub" / "c.py",
        folder / "sub" / "deeper" / "d.csv",
    ]


def test_open_no_follow_opens_a_file_and_refuses_a_link(tmp_path):
    """open(..., opener=open_no_follow) reads a regular file but raises ELOOP on a link to one."""
    real = tmp_path / "real.ipynb"
    real.write_bytes(b"content")
    with open(real, "rb", opener=open_no_follow) as handle:
        assert handle.read() == b"content"
    link = tmp_path / "link.ipynb"
    link.symlink_to(real)
    with pytest.raises(OSError) as refused, open(link, "rb", opener=open_no_follow):
        pass
    assert refused.value.errno == errno.ELOOP
