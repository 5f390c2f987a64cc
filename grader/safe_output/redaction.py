"""The grader's own code (hidden tests, probes) found in a submission's outputs and removed.

Hidden tests and probes run inside the student's process, so a submission can print them. A line
of output that quotes one of their lines, as written or escaped (repr, JSON, HTML, terminal
colours), is replaced by a marker before the feedback is rendered.
"""

import html
import json
import re
from collections.abc import Sequence

import nbformat

from grader.course import SOLUTIONS, solution_notebook, student_notebook

MARKER = "[grader code removed]"
MIN_LENGTH = 10  # shorter lines (`)`, `x = 1`) say nothing and would match honest output
HIDDEN_TESTS = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.DOTALL)
UNESCAPE_ROUNDS = 3  # a repr of a repr of a repr is still found
_BACKSLASH = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|.)", re.DOTALL)
_NAMED = {"n": "\n", "r": "\r", "t": "\t"}
_MARKUP = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|<[^>]*>")


def secret_lines(lesson: str, known: Sequence[str] = ()) -> list[str]:
    """The lines of `lesson`'s hidden tests and probes a student never sees.

    Left out: trivial lines, and lines inside a line of the released notebook or of `known`
    (e.g. the submission's own code), since showing those reveals nothing.
    """
    solution = nbformat.read(solution_notebook(lesson), as_version=4)
    hidden = [
        block
        for cell in solution.cells
        if cell.cell_type == "code"
        for block in HIDDEN_TESTS.findall(cell.source)
    ]
    probes = SOLUTIONS / lesson / "probes.py"
    if probes.is_file():
        hidden.append(probes.read_text())
    released = nbformat.read(student_notebook(lesson), as_version=4)
    shown = [line for cell in released.cells for line in cell.source.splitlines()] + list(known)
    lines = {line.strip() for block in hidden for line in block.splitlines()}
    return sorted(
        line
        for line in lines
        if len(line) >= MIN_LENGTH and not any(line in other for other in shown)
    )


def _unescape(text: str) -> str:
    """`text` with its backslash escapes (repr, JSON) undone."""

    def one(match: re.Match) -> str:
        code = match.group(1)
        return chr(int(code[1:], 16)) if len(code) > 1 else _NAMED.get(code, code)

    return _BACKSLASH.sub(one, text)


def _views(line: str) -> set[str]:
    """`line`, and `line` read with any mix of its escapes (backslash, HTML) undone and its
    markup (HTML tags, terminal colours) removed, up to UNESCAPE_ROUNDS layers deep."""
    views = newest = {line}
    for _ in range(UNESCAPE_ROUNDS):
        newest = {
            undone for view in newest for undone in (_unescape(view), html.unescape(view))
        } | {_MARKUP.sub("", view) for view in newest}
        newest -= views
        views |= newest
    return views


def _quotes_secret(line: str, secrets: list[str]) -> bool:
    """Whether `line` shows any of `secrets`, as written or escaped."""
    return any(secret in view for view in _views(line) for secret in secrets)


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every line that quotes one of `secrets` replaced by MARKER."""
    return "\n".join(MARKER if _quotes_secret(line, secrets) else line for line in text.split("\n"))


def redact_output(output, secrets: list[str]) -> None:
    """Redact one notebook output in place: stream text, every data format, error and traceback."""
    for key in ("text", "ename", "evalue"):
        if isinstance(output.get(key), str):
            output[key] = redact(output[key], secrets)
    if "traceback" in output:
        output.traceback = [redact(line, secrets) for line in output.traceback]
    for mime, value in output.get("data", {}).items():
        if isinstance(value, str):
            output.data[mime] = redact(value, secrets)
        elif redact(json.dumps(value), secrets) != json.dumps(value):
            output.data[mime] = MARKER
