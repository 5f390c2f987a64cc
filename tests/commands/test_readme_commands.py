"""Every `grader` command the README shows is one the command line takes, as written."""

import re
import shlex

import pytest

from grader.cli import parser
from grader.course import REPO_ROOT

BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)


def _readme_commands() -> list[str]:
    """The README's `grader …` lines in bash blocks, continuation lines joined."""
    text = (REPO_ROOT / "README.md").read_text()
    commands = []
    for block in BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["grader"]:
                commands.append(words[1:])
    return commands


def test_the_readme_shows_the_walkthrough():
    """The walk-through is there: init, collect, extend, autograde, feedback, export at least."""
    shown = {words[0] for words in _readme_commands()}
    assert {"init", "collect", "extend", "autograde", "feedback", "export"} <= shown


@pytest.mark.parametrize("words", _readme_commands(), ids=" ".join)
def test_each_readme_command_parses(words):
    """argparse takes the command with its options as the README writes it."""
    parser().parse_args(words)
