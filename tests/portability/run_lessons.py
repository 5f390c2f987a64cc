"""Run every lesson's solution cells, test cells included, in the Python this script runs under,
as a kernel would (IPython, one namespace per lesson): each cell tagged `raises-exception` must
raise, every other cell must not. Prints one line per lesson; exits 1 if any cell misbehaved.

Runs inside the environment under test (the student install), so it needs only IPython, which
JupyterLab's kernel brings: `python run_lessons.py solutions/*/*.ipynb`.
"""

import json
import os
import sys

os.environ.setdefault("MPLBACKEND", "Agg")  # figures drawn, never shown

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402


def run(path: str) -> list[str]:
    """The cells of the notebook at `path` that did not do what their tags say."""
    shell = InteractiveShell.instance()
    shell.reset(new_session=True)
    wrong = []
    with open(path, encoding="utf-8") as file:
        cells = json.load(file)["cells"]
    for number, cell in enumerate(cells, 1):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        expected = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        with capture_output():  # what the lesson prints is not this script's to show
            result = shell.run_cell(source, silent=True)
        error = result.error_in_exec or result.error_before_exec
        if bool(error) != expected:
            said = f"{type(error).__name__}: {error}".splitlines()[0] if error else "no error"
            wrong.append(f"cell {number}: {said[:300]}")
    return wrong


def main(paths: list[str]) -> int:
    import torch

    print(f"Python {sys.version.split()[0]}, torch {torch.__version__}")
    failed = 0
    for path in paths:
        wrong = run(path)
        failed += bool(wrong)
        print(f"{'ok  ' if not wrong else 'FAIL'} {os.path.basename(path)}")
        for line in wrong:
            print(f"       {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
