"""A process of the grader does not pay for an optional import nothing here uses."""

import subprocess
import sys

CHECK = """
import sys
import grader.grading.class_run  # nbgrader, nbformat, jsonschema
import nbformat
nbformat.validate(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]))
print(sys.modules.get("rfc3987_syntax", "absent"))
"""


def test_jsonschema_works_without_the_iri_parser():
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"  # looked up, and found absent: never built
