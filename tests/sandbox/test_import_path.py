"""A submission imports nothing from a folder it can write to, whatever the template cached."""

import json

import pytest

from grader.sandbox.outside.client import Sandbox, SandboxProcess
from grader.sandbox.outside.isolation import Limits

pytestmark = pytest.mark.integration

LOOK = """\
import json, os, sys
def writable(p):
    return not isinstance(p, str) or not os.path.isabs(p) or p.startswith(("/tmp", "/dev/shm"))
print(json.dumps({
    "path": [p for p in sys.path if writable(p)],
    "finders": sorted(str(p) for p in sys.path_importer_cache if writable(p)),
    "kept": sum(1 for p in sys.path_importer_cache if not writable(p)),
}))
"""
PLANT = """\
for folder in ("/tmp", "/tmp/submission", "/dev/shm"):
    with open(f"{folder}/planted_by_the_submission.py", "w") as module:
        module.write("PLANTED = True\\n")
"""


@pytest.fixture(scope="module")
def sandbox():
    template = SandboxProcess(Limits())
    template.start()
    yield Sandbox(Limits(), template.channels[0])
    template.stop()


def _text(report, cell: int) -> str:
    return "".join(out.get("text", "") for out in report.cells[cell]["outputs"])


def test_no_writable_folder_is_searched_first_nor_its_cached_finder_kept(sandbox):
    """The template started in /tmp, so it searched and cached a finder for it; a submission
    sees neither, while the finders of the read-only folders stay cached. Its working folder
    is searched last, as a kernel searches it (an assignment's own modules)."""
    report = sandbox.run([(0, LOOK)], {})
    seen = json.loads(_text(report, 0))
    assert seen["path"] == ["/tmp/submission"] and seen["finders"] == [], seen
    assert seen["kept"] > 10, seen


def test_a_module_planted_in_a_writable_folder_stands_in_for_nothing_installed(sandbox):
    """Modules planted in /tmp or /dev/shm are not imported. One in the working folder is, as a
    kernel imports it (an assignment's helpers.py), but never in place of a module installed
    with the grader (a planted colorsys.py is not the colorsys imported)."""
    shadow = "with open('colorsys.py', 'w') as f:\n    f.write('PLANTED = 1')"
    report = sandbox.run(
        [
            (0, PLANT),
            (1, "import os\nos.remove('planted_by_the_submission.py')"),
            (2, "import planted_by_the_submission"),
            (3, shadow),
            (4, "import sys\nsys.modules.pop('colorsys', None)\nimport colorsys"),
            (5, "print(hasattr(colorsys, 'PLANTED'), hasattr(colorsys, 'rgb_to_hsv'))"),
            (6, "import helpers\nprint(helpers.double(21))"),
        ],
        {"helpers.py": b"def double(x):\n    return 2 * x\n"},
    )
    (error,) = report.cells[2]["outputs"]
    assert error["ename"] == "ModuleNotFoundError", error
    assert _text(report, 5) == "False True\n"
    assert _text(report, 6) == "42\n"


def test_files_come_back_only_where_asked_changed_and_within_the_limits(sandbox):
    """Asked for them, a run sends back the files it made or changed (not those given as they
    were, no notebook), and counts those over the limit instead of sending them; not asked,
    it sends nothing."""
    cells = [
        (
            0,
            "open('given.txt', 'w').write('changed')\n"
            "open('made.txt', 'w').write('new')\n"
            "open('draft.ipynb', 'w').write('{}')\n"
            "open('huge.bin', 'wb').write(b'0' * (9 * 1024**2))",
        )
    ]
    given = {"given.txt": b"as given", "same.txt": b"untouched"}
    report = sandbox.run(cells, given, files_back=True)
    assert report.outcome == "graded", report.detail
    assert report.files == {"given.txt": b"changed", "made.txt": b"new"}
    assert report.files_left_out == 1  # huge.bin, over the 8 MB limit
    assert sandbox.run(cells, given).files == {}
