"""The student's Validate button: nbgrader's, with each failed test shown by what it checks
(and `nbgrader validate` on the command line likewise, `use_message_first_validation`).

nbgrader's dialog shows a failed test cell's whole source above its message, so a student reads
forty lines of checks before the one line that says what to do. Here a failed cell is shown by
its docstring (or first line) alone; the message follows at once.
"""

from jupyter_server.utils import url_path_join
from nbconvert.filters import strip_ansi
from nbgrader.server_extensions.validate_assignment.handlers import (
    NbGraderVersionHandler,
    ValidateAssignmentHandler,
)
from nbgrader.validator import Validator

from grader.validation import what_it_checks


class ValidateHandler(ValidateAssignmentHandler):
    """nbgrader's validation, each failed cell's source cut to what the test checks."""

    def validate_notebook(self, path):
        output = super().validate_notebook(path)
        result = output.get("value") if output.get("success") else None
        for failed in result.get("failed", []) if isinstance(result, dict) else []:
            failed["source"] = what_it_checks(failed["source"])
        return output


def _print_error(self, source: str, error: str) -> None:
    """nbgrader's `Validator._print_error` on the command line: the message first and whole
    (nbgrader cuts each line at 90 columns), then what the test checks, not its source."""
    self.stream.write("\n" + "=" * self.width + "\n")
    self.stream.write(strip_ansi(error).strip().removeprefix("CheckFailed: ") + "\n")
    self.stream.write(f"   (the test that checks: {' '.join(what_it_checks(source).split())})\n")


def use_message_first_validation(c) -> None:
    """`nbgrader validate` in the repository lists each failed test as the Validate button does
    (called from nbgrader_config.py, which every nbgrader command reads)."""
    Validator._print_error = _print_error


def _jupyter_server_extension_points():
    return [{"module": "grader.student_lab"}]


def _load_jupyter_server_extension(server_app):
    web_app = server_app.web_app
    base = web_app.settings["base_url"]
    web_app.settings["root_dir"] = server_app.root_dir  # where nbgrader's handler finds notebooks
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "/assignments/validate"), ValidateHandler),
            (url_path_join(base, "/nbgrader_version"), NbGraderVersionHandler),
        ],
    )
