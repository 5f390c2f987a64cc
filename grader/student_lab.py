"""The student's Validate button: nbgrader's, with each failed test shown by what it checks.

nbgrader's dialog shows a failed test cell's whole source above its message, so a student reads
forty lines of checks before the one line that says what to do. Here a failed cell is shown by
its docstring (or first line) alone; the message follows at once.
"""

import ast

from jupyter_server.utils import url_path_join
from nbgrader.server_extensions.validate_assignment.handlers import (
    NbGraderVersionHandler,
    ValidateAssignmentHandler,
)


class ValidateHandler(ValidateAssignmentHandler):
    """nbgrader's validation, each failed cell's source cut to what the test checks."""

    def validate_notebook(self, path):
        output = super().validate_notebook(path)
        result = output.get("value") if output.get("success") else None
        for failed in result.get("failed", []) if isinstance(result, dict) else []:
            failed["source"] = what_it_checks(failed["source"])
        return output


def what_it_checks(source: str) -> str:
    """A test cell's docstring, or its first line, followed by an ellipsis when cut."""
    try:
        summary = ast.get_docstring(ast.parse(source))
    except (
        SyntaxError,
        ValueError,
        RecursionError,
        MemoryError,
    ):  # the cell as the student left it
        summary = None
    lines = source.strip().splitlines()
    summary = summary or (lines[0] if lines else "")
    return summary if summary == source.strip() else f"{summary} (…)"


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
