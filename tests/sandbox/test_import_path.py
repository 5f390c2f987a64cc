"""A submission imports nothing from a folder it can write to but its own, which is searched first,
as a kernel started there searches it, whatever the template cached."""

import functools
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
    is searched first, as a kernel started there searches it (an assignment's own modules)."""
    report = sandbox.run([(0, LOOK + "print(sys.path[0])")], {})
    seen, first = _text(report, 0).splitlines()
    seen = json.loads(seen)
    assert seen["path"] == ["/tmp/submission"] and seen["finders"] == [], seen
    assert first == "/tmp/submission"
    assert seen["kept"] > 10, seen


def test_a_module_planted_outside_the_working_folder_is_not_imported(sandbox):
    """Modules planted in /tmp or /dev/shm are not imported. One in the working folder is, as a
    kernel imports it (an assignment's helpers.py), first: a colorsys.py written there is the
    colorsys imported next, as in a kernel started in that folder."""
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
    assert _text(report, 5) == "True False\n"
    assert _text(report, 6) == "42\n"


def test_a_helper_module_wins_over_what_the_template_imported_but_a_kernels_own(sandbox):
    """An assignment's grader.py or torch.py is the module its notebook imports, though the
    template imported the kit's grader and torch; a kernel's own packages (traitlets) and the
    standard library it has imported (json) stay, as in a kernel."""
    helpers = {
        name: b"HELPER = True\n" for name in ("grader.py", "torch.py", "traitlets.py", "json.py")
    }
    names = ("grader", "torch", "traitlets", "json")
    shown = (
        "import "
        + ", ".join(names)
        + "\nprint([hasattr(m, 'HELPER') for m in ("
        + ", ".join(names)
        + ")])"
    )
    report = sandbox.run([(0, shown)], helpers)
    assert _text(report, 0) == "[True, True, False, False]\n"


def test_a_lesson_judged_by_its_probes_finds_the_folder_last(sandbox):
    """A kit lesson (judged by its probes, its cells read by the judge) ships no module: a
    numpy.py or grader.py handed in beside its notebook does not stand in for the real one,
    whose use the reading knows; a module of a name nothing installed has is still found."""
    probes = {"source": "def test_x(student, observe, draw):\n    pass\n", "seed": 1}
    probes["at"] = {"9": "test_x"}  # a cell not run: no probe, but a judged run
    helpers = {name: b"HELPER = True\n" for name in ("numpy.py", "grader.py", "mine.py")}
    shown = (
        "import numpy, grader, mine\nprint([hasattr(m, 'HELPER') for m in (numpy, grader, mine)])"
    )
    report = sandbox.run([(0, shown)], helpers, probes)
    assert _text(report, 0) == "[False, False, True]\n"


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


def test_a_submission_drops_the_finders_its_server_noted_and_any_cached_since():
    """A server notes its writable finders before forking, so each submission's process drops
    them without reading the whole cache; a cache that grew after the note (an import in between)
    is read whole again, so a finder cached since is dropped too."""
    import sys

    from forked import in_a_fork

    from grader.sandbox.inside import isolate

    class Unread(dict):
        def __iter__(self):
            raise AssertionError("the whole cache was read")

    def clean(grow: bool):
        sys.path_importer_cache["/tmp/noted-before"] = None
        isolate.note_import_path()
        if grow:
            sys.path_importer_cache["/dev/shm/cached-since"] = None
        else:
            sys.path_importer_cache = Unread(sys.path_importer_cache)
        isolate._clean_import_path()
        return sorted(p for p in dict.keys(sys.path_importer_cache) if p.startswith("/"))

    for grow in (False, True):
        left = in_a_fork(functools.partial(clean, grow))
        assert not [p for p in left if p.startswith(("/tmp", "/dev/shm"))]
        assert len(left) > 10  # the others are kept
