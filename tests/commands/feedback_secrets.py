"""What a feedback page must never show: the lines of a lesson's probes and hidden tests."""

import base64
import re
from html.parser import HTMLParser

import nbformat

from grader.course import SOLUTIONS, solution_notebook, student_notebook

HIDDEN_TESTS = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.DOTALL)
MIN_LENGTH = 10  # shorter lines (`)`, `x = 1`) say nothing


def secret_lines(lesson: str, known: str = "") -> list[str]:
    """The lines of `lesson`'s hidden tests and probes that neither the released notebook nor
    `known` (the student's own sources) shows."""
    solution = nbformat.read(solution_notebook(lesson), as_version=4)
    hidden = [block for cell in solution.cells for block in HIDDEN_TESTS.findall(cell.source)]
    hidden.append((SOLUTIONS / lesson / "probes.py").read_text())
    released = nbformat.read(student_notebook(lesson), as_version=4)
    shown = "\n".join(cell.source for cell in released.cells) + known
    lines = {line.strip() for block in hidden for line in block.splitlines()}
    return sorted(line for line in lines if len(line) >= MIN_LENGTH and line not in shown)


class _Text(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []

    def handle_data(self, data):
        self.parts.append(data)


def squeezed(text: str) -> str:
    """`text` without whitespace, so that line breaks and spacing hide nothing."""
    return re.sub(r"\s+", "", text)


def page_text(page: str) -> str:
    """What a page's HTML reads as, tags dropped and entities decoded, without whitespace."""
    parser = _Text()
    parser.feed(page)
    return squeezed("".join(parser.parts))


def secrets_shown(page: str, secrets: list[str]) -> list[str]:
    """The secret lines a page shows: as text (across tags and line breaks), reversed, or in
    base64."""
    text, raw = page_text(page), squeezed(page)
    return [
        line
        for line in secrets
        if squeezed(line) in text
        or squeezed(line)[::-1] in text
        or base64.b64encode(line.encode()).decode() in raw
    ]
