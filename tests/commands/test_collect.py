"""`grader collect` places platform exports into nbgrader's layout and explains what it skips."""

import os
import zipfile

import pytest

from grader.cli import main
from grader.commands.collect import collect, identify
from grader.commands.init import init_course

L1 = "01_tensors_and_requires_grad"
L3 = "03_backward_and_scalar_outputs"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course with a three-student roster."""
    root = tmp_path_factory.mktemp("course")
    roster = root.parent / "roster.csv"
    roster.write_text("id,first_name\nalice,Alice\nbob,Bob\ncarol,Carol\n")
    return init_course(root / "c", roster=roster)


def _write(folder, name, text="{}", mtime=None):
    path = folder / name
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_identify_reads_platform_style_names():
    """Student id first, lesson id anywhere after, platform parts in between are ignored."""
    assert identify(f"alice_{L1}.ipynb") == ("alice", L1)
    assert identify(f"bob_late_1234_5678_{L3}.ipynb") == ("bob", L3)
    assert identify("carol.ipynb", only_lesson=L1) == ("carol", L1)


def test_messy_export_is_placed_or_explained(course, tmp_path):
    """Unknown students, wrong lesson names, duplicates and stray files each get a reason."""
    export = tmp_path / "export"
    export.mkdir()
    _write(export, f"alice_{L1}.ipynb", '{"a": 1}', mtime=1_000)
    _write(export, f"alice_resubmit_{L1}.ipynb", '{"a": 2}', mtime=2_000)
    _write(export, f"mallory_{L1}.ipynb")
    _write(export, "bob_01_tensors.ipynb")
    _write(export, "carol_notes.txt")
    placed, rejected = collect(export, course)
    assert [(p.student, p.lesson, p.note.split(";")[0]) for p in placed] == [("alice", L1, "new")]
    target = course.root / "submitted" / "alice" / L1 / f"{L1}.ipynb"
    assert target.read_text() == '{"a": 2}', "the newer duplicate is kept"
    assert (target.parent / "timestamp.txt").read_text().startswith("1970-01-01 00:33:20")
    reasons = {r.name: r.reason for r in rejected}
    assert reasons[f"alice_{L1}.ipynb"] == f"duplicate for alice: kept alice_resubmit_{L1}.ipynb"
    assert reasons[f"mallory_{L1}.ipynb"] == (
        "mallory? no roster entry with id, login, SIS id or email mallory"
    )
    assert reasons["bob_01_tensors.ipynb"].startswith(f"bob: names no lesson; did you mean {L1}?")
    assert reasons["carol_notes.txt"] == "not a notebook (.ipynb)"


def test_collect_from_a_zip_keeps_earlier_work(course, tmp_path):
    """A zip export is read by base name; a changed resubmission keeps the earlier copy."""
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"course/bob_{L3}.ipynb", '{"v": 1}')
    placed, rejected = collect(archive, course)
    assert [(p.student, p.note.split(";")[0]) for p in placed] == [("bob", "new")]
    assert rejected == []
    assert collect(archive, course).placed[0].note.startswith("unchanged;")
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"bob_{L3}.ipynb", '{"v": 2}')
    (again,) = collect(archive, course).placed
    assert again.note.startswith("replaced an earlier submission")
    assert (
        list(course.root.glob(f"collect_backup/*/bob/{L3}/{L3}.ipynb"))[0].read_text() == '{"v": 1}'
    )


def test_collect_for_one_lesson_rejects_other_lessons(course, tmp_path):
    """With --lesson, a file that names another lesson is rejected, not misfiled."""
    export = tmp_path / "one"
    export.mkdir()
    _write(export, f"carol_{L3}.ipynb")
    placed, rejected = collect(export, course, lesson=L1)
    assert placed == []
    assert rejected[0].reason == f"carol: is a submission of {L3}, not {L1}"


def test_collect_cli_reports_each_file(course, tmp_path, capsys):
    """The command prints one line per file and a count."""
    export = tmp_path / "cli"
    export.mkdir()
    _write(export, f"carol_{L1}.ipynb")
    _write(export, "readme.md")
    assert main(["collect", str(export), "--course-dir", str(course.root)]) == 0
    out = capsys.readouterr().out
    assert f"placed   carol_{L1}.ipynb -> carol/{L1}/{L1}.ipynb (new; submitted " in out
    assert "rejected readme.md: not a notebook (.ipynb)" in out
    assert out.rstrip().endswith("1 placed, 1 rejected")


def test_collect_from_a_missing_source_is_a_clear_error(course, tmp_path, capsys):
    """A source that does not exist is named in a one-line error, exit status 2."""
    assert main(["collect", str(tmp_path / "nowhere"), "--course-dir", str(course.root)]) == 2
    assert "nowhere: no such file or folder" in capsys.readouterr().err


def test_collect_cli_fails_when_nothing_is_placed(course, tmp_path, capsys):
    """An export of which nothing can be placed ends with exit status 1, each file explained."""
    export = tmp_path / "nothing"
    export.mkdir()
    _write(export, "readme.md")
    assert main(["collect", str(export), "--course-dir", str(course.root)]) == 1
    out = capsys.readouterr().out
    assert "rejected readme.md: not a notebook (.ipynb)" in out
    assert out.rstrip().endswith("0 placed, 1 rejected")


def test_identify_names_a_lesson_whole_not_inside_a_longer_one():
    """`ps1` is not named by `ps10`'s files: lessons match at a name boundary, the longest."""
    known = ["ps1", "ps10"]
    assert identify("lee.j_ps10_problem1.ipynb", known=known) == ("lee.j", "ps10")
    assert identify("lee.j_ps1_problem1.ipynb", known=known) == ("lee.j", "ps1")
    assert identify("lee.j_ps10_problem1.ipynb", "ps1", known) == "is a submission of ps10, not ps1"
    assert identify("lee.j-ps1.ipynb", "ps1", known) == ("lee.j", "ps1")
