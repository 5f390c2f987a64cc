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


def test_no_writable_folder_is_searched_nor_its_cached_finder_kept(sandbox):
    """The template started in /tmp, so it searched and cached a finder for it; a submission
    sees neither, while the finders of the read-only folders stay cached."""
    report = sandbox.run([(0, LOOK)], {})
    seen = json.loads(_text(report, 0))
    assert seen["path"] == [] and seen["finders"] == [], seen
    assert seen["kept"] > 10, seen


def test_a_module_planted_in_a_writable_folder_is_not_imported(sandbox):
    report = sandbox.run([(0, PLANT), (1, "import planted_by_the_submission")], {})
    (error,) = report.cells[1]["outputs"]
    assert error["ename"] == "ModuleNotFoundError", error
