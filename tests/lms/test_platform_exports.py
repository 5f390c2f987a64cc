"""`collect` reads each platform's "download all submissions" as the platform builds it: the
right student (by id, platform user id, login, email or name), lesson, notebook and submission
time for every file, a reason for every file it leaves, and never an older file over a newer."""

import csv
import json
import os
import shutil
import zipfile
from datetime import datetime

import pytest
from nbgrader.utils import parse_utc

from grader.commands.collect import collect
from grader.commands.init import init_course
from grader.compat import UTC
from grader.course import Course
from grader.lms import archive
from grader.lms.exports import CANVAS_LATE, CANVAS_ON_TIME, Blackboard, d2l_time, zone_named
from grader.lms.roster import COLUMNS

L1 = "01_tensors_and_requires_grad"
L3 = "03_backward_and_scalar_outputs"
ROSTER = [
    dict(id="mgarcia", first_name="María", last_name="García", email="mgarcia@uni.example",
         lms_id="12345", sis_id="S-100", login="garciam"),
    dict(id="jsmith", first_name="John", last_name="Smith", email="john.smith@uni.example",
         lms_id="22222", login="smithj"),
    dict(id="lnguyen", first_name="Linh", last_name="Nguyễn Thị", lms_id="33333", login="nguyenl"),
    dict(id="amartin1", first_name="Anne", last_name="Martin", lms_id="44444"),
    dict(id="amartin2", first_name="Anne", last_name="Martin", lms_id="55555"),
]  # fmt: skip


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A course with the kit's lessons and an assignment of two notebooks (ps1), no roster."""
    course = init_course(tmp_path_factory.mktemp("template") / "course")
    own = course.root / "source" / "ps1"
    own.mkdir()
    for name in ("problem1", "problem2"):
        (own / f"{name}.ipynb").write_text("{}")
    return course


def _course(template, tmp_path, roster=True) -> Course:
    root = tmp_path / "course"
    shutil.copytree(template.root, root, symlinks=True)
    if roster:
        with open(root / "roster.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, COLUMNS)
            writer.writeheader()
            writer.writerows(ROSTER)
    return Course(root)


@pytest.fixture
def course(template, tmp_path):
    return _course(template, tmp_path)


def _notebook(tag: str) -> bytes:
    return json.dumps({"cells": [], "metadata": {"tag": tag}, "nbformat": 4}).encode()


def _zip(path, members):
    """A zip as a platform writes it: each member (name, bytes, local time of its clock)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, when in members:
            zf.writestr(zipfile.ZipInfo(name, when), data)
    return path


def _by_student(run):
    return {(p.student, p.lesson, p.notebook): p for p in run.placed}


def _reasons(run):
    return {r.name: r.reason for r in run.rejected}


def _stamp(course, student, lesson):
    text = (course.submission(student, lesson) / "timestamp.txt").read_text()
    return parse_utc(text).replace(tzinfo=UTC)  # as nbgrader reads it


def _utc(*args):
    return datetime(*args, tzinfo=UTC)


def test_canvas_download(course, tmp_path):
    """Canvas: flat `{name}_{late_}{user id}_{submission id}_{file}`; matched by Canvas user id,
    else by the squashed sortable name; `-1` resubmission suffixes dropped; a late file's time
    is the zip entry's (the download's, the only bound there is), read in the zone given."""
    when = (2026, 10, 5, 20, 15, 0)
    export = _zip(tmp_path / "submissions.zip", [
        (f"garciamaria_late_12345_67890_{L3}.ipynb", _notebook("maria"), when),
        (f"smithjohn_22222_67891_{L3}-1.ipynb", _notebook("john"), when),
        (f"nguyenthilinh_99999_67892_{L3}.ipynb", _notebook("linh"), when),
        (f"doejane_77777_67893_{L3}.ipynb", _notebook("jane"), when),
        (f"martinanne_66666_67894_{L3}.ipynb", _notebook("anne"), when),
        ("smithjohn_22222_67895_notes.pdf", b"%PDF", when),
    ])  # fmt: skip
    run = collect(export, course, timezone="Europe/Berlin")
    assert run.layout == "Canvas" and run.evidence.startswith("6 of 6 files")
    placed = _by_student(run)
    assert set(placed) == {(s, L3, f"{L3}.ipynb") for s in ("mgarcia", "jsmith", "lnguyen")}
    maria = placed[("mgarcia", L3, f"{L3}.ipynb")]
    assert maria.time == _utc(2026, 10, 5, 18, 15)  # 20:15 in Berlin's summer time
    assert maria.note.startswith("new; submitted 2026-10-05 18:15:00 UTC (the archive entry's time")
    assert "Europe/Berlin, as given" in maria.note and maria.note.endswith(CANVAS_LATE)
    assert _stamp(course, "mgarcia", L3) == maria.time
    target = course.submission("lnguyen", L3) / f"{L3}.ipynb"
    assert json.loads(target.read_text())["metadata"]["tag"] == "linh"
    assert placed[("lnguyen", L3, f"{L3}.ipynb")].note.endswith(
        "the file's platform user id 99999 is not on the roster, which gives lnguyen the user"
        " id 33333: check that the file is theirs"
    )
    reasons = _reasons(run)
    assert reasons[f"doejane_77777_67893_{L3}.ipynb"] == (
        "doejane? no roster entry with lms id 77777 or name 'doejane'"
    )
    assert reasons[f"martinanne_66666_67894_{L3}.ipynb"] == (
        "martinanne? 2 students on the roster have this name:"
        " amartin1 (Anne Martin), amartin2 (Anne Martin); the file's Canvas user id is on no"
        " roster entry: give the course Canvas's user ids (its gradebook export: grader init"
        f" --roster), or place the file by hand in submitted/<amartin1|amartin2>/{L3}/{L3}.ipynb"
    )
    assert reasons["smithjohn_22222_67895_notes.pdf"] == "not a notebook (.ipynb)"
    assert run.ok and run.lines()[0] == f"layout   Canvas: {run.evidence}"


def test_canvas_download_unzipped_into_a_folder_says_its_times_are_copy_times(course, tmp_path):
    """A folder's files carry only the time they were copied: for a file Canvas marked late it
    is the only bound there is, used, and the note says so; one not marked late is on time."""
    folder = tmp_path / "unzipped"
    folder.mkdir()
    for name in (f"garciamaria_late_12345_67890_{L3}.ipynb", f"smithjohn_22222_67891_{L3}.ipynb"):
        path = folder / name
        path.write_bytes(_notebook("maria"))
        os.utime(path, (1_800_000_000, 1_800_000_000))
    placed = _by_student(collect(folder, course))
    late, on_time = placed[("mgarcia", L3, f"{L3}.ipynb")], placed[("jsmith", L3, f"{L3}.ipynb")]
    assert late.time == datetime.fromtimestamp(1_800_000_000, UTC)
    assert "modification time: when it was copied, not the platform's record" in late.note
    assert late.note.endswith(CANVAS_LATE)
    assert on_time.time is None and on_time.note.startswith(f"new; {CANVAS_ON_TIME}")
    assert not (course.submission("jsmith", L3) / "timestamp.txt").exists()


def test_a_download_whose_entries_carry_one_time_records_no_lateness(course, tmp_path):
    """Where every notebook of a download carries the same time, it is the download's: the
    command warns, and no file gets that time as its submission time."""
    when = (2026, 10, 7, 9, 15, 0)
    export = _zip(tmp_path / "one_time.zip", [
        (f"Maria Garcia_201_assignsubmission_file_/{L1}.ipynb", _notebook("m1"), when),
        (f"John Smith_202_assignsubmission_file_/{L1}.ipynb", _notebook("j1"), when),
        (f"Linh Nguyễn Thị_203_assignsubmission_file_/{L1}.ipynb", _notebook("l1"), when),
    ])  # fmt: skip
    run = collect(export, course, timezone="UTC")
    assert len(run.placed) == 3
    assert run.lines()[1].startswith("warning  every notebook in this download carries one time")
    for student in ("mgarcia", "jsmith", "lnguyen"):
        assert not (course.submission(student, L1) / "timestamp.txt").exists()
    assert all("the download's time, as on every entry" in p.note for p in run.placed)


def test_moodle_download_in_folders_and_flat(course, tmp_path):
    """Moodle: `{Full Name}_{participant id}_assignsubmission_file_/{file}` or flat; matched by
    name without case or accents; online text is rejected; an assignment's notebooks are found
    by their names alone."""
    when = (2026, 10, 5, 20, 15, 0)  # the upload's time, as a download that keeps it has
    export = _zip(tmp_path / "moodle.zip", [
        (f"Maria Garcia_101_assignsubmission_file_/{L3}.ipynb", _notebook("maria"),
         (2026, 10, 4, 9, 0, 0)),
        ("John Smith_102_assignsubmission_onlinetext_/onlinetext.html", b"<p>hi</p>", when),
        ("Linh Nguyễn Thị_103_assignsubmission_file_/problem1.ipynb", _notebook("p1"), when),
        ("Linh Nguyễn Thị_103_assignsubmission_file_/problem2.ipynb", _notebook("p2"), when),
        ("Nobody Known_104_assignsubmission_file_/problem1.ipynb", _notebook("x"), when),
    ])  # fmt: skip
    run = collect(export, course, timezone="UTC")
    assert run.layout == "Moodle"
    assert set(_by_student(run)) == {
        ("mgarcia", L3, f"{L3}.ipynb"),
        ("lnguyen", "ps1", "problem1.ipynb"),
        ("lnguyen", "ps1", "problem2.ipynb"),
    }
    assert _stamp(course, "lnguyen", "ps1") == _utc(2026, 10, 5, 20, 15)
    reasons = _reasons(run)
    assert reasons["John Smith_102_assignsubmission_onlinetext_/onlinetext.html"] == (
        "Moodle's online text (HTML typed into Moodle), not an uploaded notebook"
    )
    assert reasons["Nobody Known_104_assignsubmission_file_/problem1.ipynb"] == (
        "Nobody Known? no roster entry with name 'Nobody Known'"
    )
    flat = _zip(tmp_path / "flat.zip", [
        (f"John Smith_102_assignsubmission_file_{L1}.ipynb", _notebook("john"), when),
    ])  # fmt: skip
    (placed,) = collect(flat, course, timezone="UTC").placed
    assert (placed.student, placed.lesson) == ("jsmith", L1)


BLACKBOARD_RECORD = """\
Name: María García (garciam)
Assignment: Lesson 3
Date Submitted: Monday, 5 October 2026 20:15:00 o'clock CEST
Current Grade: Needs Grading

Submission Field:
There is no student submission text data for this assignment.

Files:
\tOriginal filename: {original}
\tFilename: {name}
"""


def test_blackboard_download_reads_the_attempt_time_and_its_record(course, tmp_path):
    """Blackboard: `{assignment}_{login}_attempt_{time}_{file}` beside a .txt record; the login
    matches; the attempt time is read in the zone the record states, else the zone given; a
    file of another platform's download is named as such."""
    head = "Lesson 3_garciam_attempt_2026-10-05-20-15-00"
    name = f"{head}_{L3}.ipynb"
    record = BLACKBOARD_RECORD.format(original=f"{L3}.ipynb", name=name)
    other = "Lesson 3_smithj_attempt_2026-10-06-09-00-00"
    other_record = "Name: John Smith (smithj)\nDate Submitted: Tuesday, October 6, 2026 9:00 AM\n"
    zone_free = (2026, 10, 7, 0, 0, 0)  # the zip's own clock: not the submission time
    export = _zip(tmp_path / "gradebook.zip", [
        (name, _notebook("maria"), zone_free),
        (f"{head}.txt", record.encode(), zone_free),
        (f"{other}_{L3}.ipynb", _notebook("john"), zone_free),
        (f"{other}.txt", other_record.encode(), zone_free),
        (f"smithjohn_22222_67891_{L3}.ipynb", _notebook("canvas"), zone_free),
    ])  # fmt: skip
    run = collect(export, course, timezone="America/Chicago")
    assert run.layout == "Blackboard"
    placed = _by_student(run)
    maria = placed[("mgarcia", L3, f"{L3}.ipynb")]
    assert maria.time == _utc(2026, 10, 5, 18, 15)
    assert "Blackboard's attempt time in the file's name, read in CEST, as stated" in maria.note
    john = placed[("jsmith", L3, f"{L3}.ipynb")]
    assert john.time == _utc(2026, 10, 6, 14, 0)  # 9:00 in Chicago's summer time
    assert "read in America/Chicago, as given" in john.note
    assert {r.name: r.what for r in run.read} == {
        f"{head}.txt": "Blackboard's record of the attempt",
        f"{other}.txt": "Blackboard's record of the attempt",
    }
    assert _reasons(run) == {
        f"smithjohn_22222_67891_{L3}.ipynb": (
            f"not named as Blackboard names files ({Blackboard.signature});"
            " it is named as Canvas names files: collect it on its own"
        )
    }


def test_zone_free_times_are_read_in_the_course_zone_when_none_is_given(course, tmp_path):
    """With no zone given nor stated, the course's (`grader init --time-zone`) is used."""
    config = course.root / "nbgrader_config.py"
    before = config.read_text()
    config.write_text(before + 'c.NbGraderAPI.timezone = "Asia/Tokyo"\n')
    name = f"Lesson 3_smithj_attempt_2026-10-06-09-00-00_{L3}.ipynb"
    export = _zip(tmp_path / "bb.zip", [(name, _notebook("j"), (2026, 1, 1, 0, 0, 0))])
    try:
        (placed,) = collect(export, course).placed
    finally:
        config.write_text(before)
    assert placed.time == _utc(2026, 10, 6, 0, 0)
    assert "read in Asia/Tokyo, the course's" in placed.note


def test_brightspace_download(course, tmp_path):
    """Brightspace: `{id}-{id} - {Last First} - {Mon D, YYYY HMM AM}/{file}` with index.html;
    matched by name in either order; the time is the folder's."""
    export = _zip(tmp_path / "d2l.zip", [
        (f"123456-789012 - García María - Oct 5, 2026 820 PM/{L3}.ipynb", _notebook("m"),
         (2026, 11, 1, 0, 0, 0)),
        (f"123457-789013 - Smith John - Oct 6, 2026 1205 AM/{L3}.ipynb", _notebook("j"),
         (2026, 11, 1, 0, 0, 0)),
        ("index.html", b"<html></html>", (2026, 11, 1, 0, 0, 0)),
    ])  # fmt: skip
    run = collect(export, course, timezone="UTC")
    assert run.layout == "Brightspace (D2L)"
    placed = _by_student(run)
    assert placed[("mgarcia", L3, f"{L3}.ipynb")].time == _utc(2026, 10, 5, 20, 20)
    assert placed[("jsmith", L3, f"{L3}.ipynb")].time == _utc(2026, 10, 6, 0, 5)
    assert [r.name for r in run.read] == ["index.html"]
    assert d2l_time("Oct 5, 2026 8:20 PM") == datetime(2026, 10, 5, 20, 20)
    assert d2l_time("Feb 30, 2026 820 PM") is None


def test_with_a_lesson_a_file_of_another_lesson_is_rejected(course, tmp_path):
    """--lesson checks what the platform's file names, whatever the layout."""
    export = _zip(tmp_path / "d2l.zip", [
        (f"123456-789012 - García María - Oct 5, 2026 820 PM/{L3}.ipynb", _notebook("m"),
         (2026, 11, 1, 0, 0, 0)),
    ])  # fmt: skip
    run = collect(export, course, lesson=L1, timezone="UTC")
    assert not run.ok
    assert run.rejected[0].reason == f"mgarcia: is a submission of {L3}, not {L1}"
    assert run.lines()[-1] == "0 placed, 1 rejected"


def test_nbgrader_submitted_tree_keeps_its_timestamps(course, tmp_path):
    """An nbgrader `submitted/` tree: student and assignment from the folders, the time from
    each timestamp.txt; an assignment the course lacks is rejected."""
    tree = tmp_path / "other_course" / "submitted"
    for student, lesson, notebook in (
        ("jsmith", L3, L3), ("jsmith", "ps1", "problem2"), ("mgarcia", "ps9", "x"),
    ):  # fmt: skip
        folder = tree / student / lesson
        folder.mkdir(parents=True)
        (folder / f"{notebook}.ipynb").write_bytes(_notebook(notebook))
        (folder / "timestamp.txt").write_text("2026-10-04 18:00:00.000000 UTC")
    run = collect(tree.parent, course)
    assert run.layout == "nbgrader's submitted/ folder"
    assert {(p.student, p.lesson, p.notebook, p.time) for p in run.placed} == {
        ("jsmith", L3, f"{L3}.ipynb", _utc(2026, 10, 4, 18)),
        ("jsmith", "ps1", "problem2.ipynb", _utc(2026, 10, 4, 18)),
    }
    assert "(nbgrader's timestamp)" in run.placed[0].note
    assert _reasons(run)["submitted/mgarcia/ps9/x.ipynb"].startswith(
        "mgarcia: its assignment 'ps9' is none of the course's"
    )
    assert len(run.read) == 3


def test_a_pattern_as_nbgrader_zip_collect_takes_it(course, tmp_path):
    """--pattern: nbgrader's FileNameCollector named groups (its documented example here);
    the assignment is the one whose notebook the file names; the pattern's timestamp is used."""
    docs_example = r".*_(?P<student_id>\w+)_attempt_(?P<timestamp>[0-9\-]+)_(?P<file_id>.*)"
    export = _zip(tmp_path / "zc.zip", [
        ("ps1_smithj_attempt_2016-01-30-15-30-10_problem1.ipynb", _notebook("p1"),
         (2020, 1, 1, 0, 0, 0)),
        ("readme.txt", b"hi", (2020, 1, 1, 0, 0, 0)),
    ])  # fmt: skip
    run = collect(export, course, pattern=docs_example, timezone="UTC")
    assert run.layout == "--pattern"
    (placed,) = run.placed
    assert (placed.student, placed.lesson, placed.notebook) == ("jsmith", "ps1", "problem1.ipynb")
    assert placed.time == _utc(2016, 1, 30, 15, 30, 10)
    assert _reasons(run) == {"readme.txt": f"does not match the pattern {docs_example}"}
    own = r"(?P<lesson>[^/]+)/(?P<student>[^/]+)/(?P<notebook>[^/]+)$"
    folder = tmp_path / "by_lesson" / L1 / "John Smith"
    folder.mkdir(parents=True)
    (folder / "work.ipynb").write_bytes(_notebook("j"))
    (placed,) = collect(tmp_path / "by_lesson", course, pattern=own).placed
    assert (placed.student, placed.lesson) == ("jsmith", L1)
    with pytest.raises(ValueError, match="not a regular expression"):
        collect(export, course, pattern="(?P<student_id>")
    with pytest.raises(ValueError, match="no group naming the student"):
        collect(export, course, pattern=r"(?P<file_id>.*)")


def test_nbgrader_zip_collect_folders_name_the_assignment(course, tmp_path):
    """nbgrader zip_collect's `downloaded/<assignment>/extracted/` with `{student}_{file}` names:
    the student id first, the assignment from the folder."""
    folder = tmp_path / "downloaded" / "ps1" / "extracted"
    folder.mkdir(parents=True)
    (folder / "jsmith_problem2.ipynb").write_bytes(_notebook("p2"))
    (folder.parent / "jsmith_ps1_problem1.ipynb").write_bytes(_notebook("p1"))
    run = collect(tmp_path / "downloaded", course)
    assert run.layout == "student id first"
    assert [(p.student, p.lesson, p.notebook) for p in run.placed] == [
        ("jsmith", "ps1", "problem1.ipynb"),
        ("jsmith", "ps1", "problem2.ipynb"),
    ]


def test_an_older_submission_never_replaces_a_newer_one(course, tmp_path):
    """Across two collects: the older file is rejected with both times, the newer kept; a newer
    one replaces it and the earlier is backed up."""
    name = f"John Smith_102_assignsubmission_file_/{L3}.ipynb"
    newer = _zip(tmp_path / "newer.zip", [(name, _notebook("newer"), (2026, 10, 6, 12, 0, 0))])
    older = _zip(tmp_path / "older.zip", [(name, _notebook("older"), (2026, 10, 5, 12, 0, 0))])
    latest = _zip(tmp_path / "latest.zip", [(name, _notebook("latest"), (2026, 10, 7, 12, 0, 0))])
    target = course.submission("jsmith", L3) / f"{L3}.ipynb"
    assert collect(newer, course, timezone="UTC").ok
    run = collect(older, course, timezone="UTC")
    assert not run.ok and _reasons(run)[name] == (
        "jsmith: older than the submission already collected (2026-10-06 12:00:00 UTC);"
        " this one: 2026-10-05 12:00:00 UTC (the archive entry's time, read in UTC, as given)"
    )
    assert json.loads(target.read_text())["metadata"]["tag"] == "newer"
    again = collect(newer, course, timezone="UTC")
    assert again.placed[0].note.startswith("unchanged")
    (replaced,) = collect(latest, course, timezone="UTC").placed
    assert replaced.note.startswith("replaced an earlier submission (kept in ")
    assert json.loads(target.read_text())["metadata"]["tag"] == "latest"
    (kept,) = course.root.glob(f"collect_backup/*/jsmith/{L3}/{L3}.ipynb")
    assert json.loads(kept.read_text())["metadata"]["tag"] == "newer"
    assert _stamp(course, "jsmith", L3) == _utc(2026, 10, 7, 12)


def test_two_copies_in_one_export_keep_the_newer(course, tmp_path):
    """Two files of one student's notebook: the later one is placed, the other named."""
    first, second = f"smithjohn_22222_1_{L3}.ipynb", f"smithjohn_22222_2_{L3}-1.ipynb"
    export = _zip(tmp_path / "two.zip", [
        (second, _notebook("second"), (2026, 10, 6, 12, 0, 0)),
        (first, _notebook("first"), (2026, 10, 5, 12, 0, 0)),
    ])  # fmt: skip
    run = collect(export, course, timezone="UTC")
    assert [p.name for p in run.placed] == [second]
    assert _reasons(run) == {first: f"duplicate for jsmith: kept {second}"}


def test_without_a_roster_the_id_in_the_name_is_the_student(template, tmp_path):
    """No roster: an id in the name is used; a name alone cannot be matched, nor Canvas's
    squashed name, which two students may share."""
    course = _course(template, tmp_path, roster=False)
    when = (2026, 10, 5, 20, 15, 0)
    export = _zip(tmp_path / "mixed.zip", [
        (f"garciamaria_{L3}.ipynb", _notebook("m"), when),
        (f"smithjohn_{L3}.ipynb", _notebook("j"), when),
    ])  # fmt: skip
    assert {p.student for p in collect(export, course, timezone="UTC").placed} == {
        "garciamaria", "smithjohn",
    }  # fmt: skip
    canvas = _zip(tmp_path / "canvas.zip", [
        (f"garciamaria_12345_67890_{L3}.ipynb", _notebook("m"), when),
    ])  # fmt: skip
    (rejected,) = collect(canvas, course, timezone="UTC").rejected
    assert rejected.reason == (
        "garciamaria? the course has no roster to match names with:"
        " give it one (grader init --roster)"
    )
    moodle = _zip(tmp_path / "moodle.zip", [
        (f"Maria Garcia_101_assignsubmission_file_/{L3}.ipynb", _notebook("m"), when),
    ])  # fmt: skip
    (rejected,) = collect(moodle, course, timezone="UTC").rejected
    assert rejected.reason == (
        "Maria Garcia? the course has no roster to match names with:"
        " give it one (grader init --roster)"
    )


def _rename_member(path, placeholder: bytes, raw: bytes):
    """Give a member a name in bytes no zip library writes on its own (same length)."""
    data = path.read_bytes()
    assert len(placeholder) == len(raw) and data.count(placeholder) == 2
    path.write_bytes(data.replace(placeholder, raw))


def test_hostile_and_broken_archives_are_refused_file_by_file(course, tmp_path, monkeypatch):
    """Members outside the export, links, huge members, names that are not UTF-8 and macOS
    metadata are each rejected by name; nothing is written outside the course."""
    monkeypatch.setattr(archive, "MAX_FILE_BYTES", 1000)
    when = (2026, 10, 5, 20, 15, 0)
    export = _zip(tmp_path / "evil.zip", [
        (f"../smithjohn_22222_1_{L3}.ipynb", _notebook("up"), when),
        (f"/tmp/smithjohn_22222_2_{L3}.ipynb", _notebook("abs"), when),
        (f"smithjohn_22222_3_{L3}.ipynb", b" " * 2000, when),
        (f"__MACOSX/._smithjohn_22222_4_{L3}.ipynb", b"", when),
        (f"GarcXa_12345_5_{L3}.ipynb", _notebook("cp1252"), when),
        (f"GarcYYa_12345_6_{L3}.ipynb", _notebook("utf8"), (2026, 10, 5, 20, 16, 0)),
    ])  # fmt: skip
    _rename_member(export, b"GarcXa", "García".encode("cp1252"))
    _rename_member(export, b"GarcYYa", "García".encode())
    run = collect(export, course, timezone="UTC")
    reasons = _reasons(run)
    assert reasons[f"../smithjohn_22222_1_{L3}.ipynb"].startswith("its path leaves the export")
    assert reasons[f"/tmp/smithjohn_22222_2_{L3}.ipynb"].startswith("its path leaves the export")
    assert (
        reasons[f"smithjohn_22222_3_{L3}.ipynb"]
        == "too large (2000 bytes; the limit is 1000 bytes)"
    )
    assert reasons[f"__MACOSX/._smithjohn_22222_4_{L3}.ipynb"].startswith("macOS metadata")
    assert reasons[f"Garc\\xeda_12345_5_{L3}.ipynb"].startswith("its name is not UTF-8")
    assert [(p.name, p.student) for p in run.placed] == [(f"García_12345_6_{L3}.ipynb", "mgarcia")]
    assert not (tmp_path / f"smithjohn_22222_1_{L3}.ipynb").exists()
    assert not list(course.root.glob("submitted/jsmith/*"))


def test_hostile_folders_are_refused_file_by_file(course, tmp_path):
    """In a folder: links are not followed and names that are not UTF-8 are named."""
    folder = tmp_path / "export"
    folder.mkdir()
    secret = tmp_path / "secret.ipynb"
    secret.write_bytes(_notebook("secret"))
    (folder / f"smithjohn_22222_1_{L3}.ipynb").symlink_to(secret)
    (folder / "linked").symlink_to(tmp_path, target_is_directory=True)
    with open(os.fsencode(folder) + b"/\xff_22222_2_" + L3.encode() + b".ipynb", "wb") as handle:
        handle.write(_notebook("bad name"))
    run = collect(folder, course)
    assert _reasons(run) == {
        f"smithjohn_22222_1_{L3}.ipynb": "a link: not followed",
        "linked": "a link: not followed",
        f"\\xff_22222_2_{L3}.ipynb": "its name is not UTF-8",
    }
    assert not run.ok


def test_a_source_that_is_no_export_is_a_clear_error(course, tmp_path):
    """A missing path, a file that is not a zip, a damaged zip: one error naming the source."""
    with pytest.raises(FileNotFoundError, match="nowhere: no such file or folder"):
        collect(tmp_path / "nowhere", course)
    text = tmp_path / "grades.zip"
    text.write_text("not a zip")
    with pytest.raises(ValueError, match="grades.zip: not a folder or a zip archive"):
        collect(text, course)
    damaged = _zip(tmp_path / "damaged.zip", [("a.ipynb", b"{}", (2026, 1, 1, 0, 0, 0))])
    data = damaged.read_bytes()
    at = data.index(b"PK\x01\x02")  # the central directory: its first entry's header, broken
    damaged.write_bytes(data[:at] + b"PK\x01\x03" + data[at + 4 :])
    with pytest.raises(ValueError, match="damaged.zip: "):
        collect(damaged, course)
    with pytest.raises(ValueError, match="^--time-zone: unknown time zone 'Mars/Olympus'"):
        collect(tmp_path, course, timezone="Mars/Olympus")


def test_zones_named_in_records():
    """The zones a platform's record may state: unambiguous abbreviations and offsets only."""
    assert zone_named("CEST")[0].utcoffset(None).total_seconds() == 7200
    assert zone_named("GMT+05:30")[0].utcoffset(None).total_seconds() == 19800
    assert zone_named("CST") == (None, "")  # China, Cuba or the US: not guessed


def test_canvas_students_of_one_name_are_told_apart_by_their_user_id(template, tmp_path):
    """Canvas's squashed name is a name, which two students may share, never an id: a file whose
    user id is on the roster is that student's, whatever its name part says; a copy whose user
    id is not on the roster never displaces the one whose user id is the student's."""
    course = _course(template, tmp_path, roster=False)
    rows = [
        dict(id="garciamaria", first_name="Maria", last_name="Garcia", lms_id="111",
             login="garciamaria"),
        dict(id="mgarcia2", first_name="Maria", last_name="Garcia", lms_id="222",
             login="mgarcia2"),
        dict(id="jsmith", first_name="John", last_name="Smith", lms_id="333"),
    ]  # fmt: skip
    with open(course.root / "roster.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    made = (2026, 10, 12, 10, 0, 0)
    export = _zip(tmp_path / "canvas.zip", [
        (f"garciamaria_111_9001_{L3}.ipynb", _notebook("user 111"), made),
        (f"garciamaria_late_222_9002_{L3}.ipynb", _notebook("user 222"), made),
        (f"garciamaria_333_9003_{L3}.ipynb", _notebook("user 333"), made),
    ])  # fmt: skip
    run = collect(export, course, timezone="UTC")
    assert run.rejected == []
    for student, tag in (("garciamaria", "111"), ("mgarcia2", "222"), ("jsmith", "333")):
        target = course.submission(student, L3) / f"{L3}.ipynb"
        assert json.loads(target.read_text())["metadata"]["tag"] == f"user {tag}"
    rows.pop(1)  # user 222 is not on this roster: matched by name, to check; the other is kept
    with open(course.root / "roster.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    export = _zip(tmp_path / "again.zip", [
        (f"garciamaria_111_9001_{L3}.ipynb", _notebook("user 111"), made),
        (f"garciamaria_late_222_9002_{L3}.ipynb", _notebook("user 222"), made),
    ])  # fmt: skip
    run = collect(export, course, timezone="UTC")
    assert [(p.name, p.student) for p in run.placed] == [
        (f"garciamaria_111_9001_{L3}.ipynb", "garciamaria")
    ]
    assert _reasons(run) == {
        f"garciamaria_late_222_9002_{L3}.ipynb": (
            f"duplicate for garciamaria: kept garciamaria_111_9001_{L3}.ipynb (the file's"
            " platform user id 222 is not on the roster, which gives garciamaria the user id"
            " 111: check that the file is theirs)"
        )
    }


def test_canvas_download_times_are_the_downloads_not_submissions(course, tmp_path):
    """Canvas's zip entries carry the time the zip was made: a file without `_late_` is on time
    by Canvas's record (no timestamp.txt: nbgrader sees no lateness); a late one gets the
    download's time, the only bound there is, and says so. The resubmission `-1` is the later
    copy; of two downloads, the later one wins, an earlier one is refused."""
    from nbgrader.coursedir import CourseDirectory

    made = (2026, 10, 12, 10, 0, 0)
    first, again = f"smithjohn_22222_1_{L3}.ipynb", f"smithjohn_22222_1_{L3}-1.ipynb"
    export = _zip(tmp_path / "canvas.zip", [
        (again, _notebook("second"), made),
        (first, _notebook("first"), made),
        (f"garciamaria_late_12345_2_{L3}.ipynb", _notebook("maria"), made),
    ])  # fmt: skip
    run = collect(export, course, timezone="UTC")
    placed = _by_student(run)
    john = placed[("jsmith", L3, f"{L3}.ipynb")]
    downloaded = "the archive entry's time, read in UTC, as given"
    assert john.name == again and john.time is None
    assert john.note == (
        f"new; {CANVAS_ON_TIME} (downloaded by 2026-10-12 10:00:00 UTC: {downloaded})"
    )
    assert CANVAS_ON_TIME == (
        "on time by Canvas's record; Canvas's download holds no submission time"
    )
    folder = course.submission("jsmith", L3)
    assert not (folder / "timestamp.txt").exists()
    assert CourseDirectory().get_existing_timestamp(str(folder)) is None  # not late
    assert _reasons(run) == {first: f"duplicate for jsmith: kept {again}"}
    maria = placed[("mgarcia", L3, f"{L3}.ipynb")]
    assert maria.note == f"new; submitted 2026-10-12 10:00:00 UTC ({downloaded}); {CANVAS_LATE}"
    assert CANVAS_LATE == (
        "Canvas marked it late; its download holds no submission time, so the download's time"
        " is used: check the lateness"
    )
    assert _stamp(course, "mgarcia", L3) == _utc(2026, 10, 12, 10)
    target = folder / f"{L3}.ipynb"
    earlier = _zip(tmp_path / "earlier.zip", [(first, _notebook("first"), (2026, 10, 11, 9, 0, 0))])
    run = collect(earlier, course, timezone="UTC")
    assert _reasons(run) == {
        first: (
            "jsmith: older than the submission already collected (in a download made"
            " 2026-10-12 10:00:00 UTC, on time by its record); this one:"
            f" {CANVAS_ON_TIME} (downloaded by 2026-10-11 09:00:00 UTC: {downloaded})"
        )
    }
    assert json.loads(target.read_text())["metadata"]["tag"] == "second"
    later = f"smithjohn_22222_1_{L3}-2.ipynb"
    latest = _zip(tmp_path / "later.zip", [(later, _notebook("third"), (2026, 10, 13, 9, 0, 0))])
    (replaced,) = collect(latest, course, timezone="UTC").placed
    assert replaced.note.startswith("replaced an earlier submission")
    assert json.loads(target.read_text())["metadata"]["tag"] == "third"
    assert not (folder / "timestamp.txt").exists()


def test_canvas_download_corrects_the_time_a_copy_left(course, tmp_path):
    """A submission collected with a time that Canvas's record contradicts (a copy's time, an
    older collect's download time) loses it when Canvas says it was on time."""
    name = f"smithjohn_22222_1_{L3}.ipynb"
    folder = course.submission("jsmith", L3)
    folder.mkdir(parents=True)
    (folder / f"{L3}.ipynb").write_bytes(_notebook("j"))
    (folder / "timestamp.txt").write_text("2026-10-20 10:00:00.000000 UTC")
    export = _zip(tmp_path / "canvas.zip", [(name, _notebook("j"), (2026, 10, 20, 10, 0, 0))])
    (placed,) = collect(export, course, timezone="UTC").placed
    assert placed.note == (
        f"unchanged; time corrected: {CANVAS_ON_TIME} (timestamp.txt of 2026-10-20 10:00:00 UTC"
        " removed)"
    )
    assert not (folder / "timestamp.txt").exists()


def test_an_unchanged_file_gets_the_better_time(course, tmp_path):
    """A folder's copy time, then the archive's entry time for the same file: timestamp.txt
    takes the archive's, and the note says it was corrected; a copy time never replaces it."""
    member = "John Smith_102_assignsubmission_file_"
    folder = tmp_path / "unzipped" / member
    folder.mkdir(parents=True)
    copy = folder / f"{L3}.ipynb"
    copy.write_bytes(_notebook("j"))
    os.utime(copy, (1_900_000_000, 1_900_000_000))
    assert collect(tmp_path / "unzipped", course).ok
    assert _stamp(course, "jsmith", L3) == datetime.fromtimestamp(1_900_000_000, UTC)
    export = _zip(tmp_path / "moodle.zip", [
        (f"{member}/{L3}.ipynb", _notebook("j"), (2026, 10, 5, 12, 0, 0)),
    ])  # fmt: skip
    (placed,) = collect(export, course, timezone="UTC").placed
    assert placed.note == (
        "unchanged; time corrected to 2026-10-05 12:00:00 UTC (the archive entry's time, read in"
        " UTC, as given), was 2030-03-17 17:46:40 UTC"
    )
    assert _stamp(course, "jsmith", L3) == _utc(2026, 10, 5, 12)
    (again,) = collect(tmp_path / "unzipped", course).placed
    assert again.note.startswith("unchanged; its recorded time 2026-10-05 12:00:00 UTC kept;")
    assert _stamp(course, "jsmith", L3) == _utc(2026, 10, 5, 12)


def test_a_lesson_is_named_whole_not_inside_a_longer_name(course, tmp_path):
    """With assignments ps1 and ps10, a file of ps10 is never taken as ps1's."""
    own = course.root / "source" / "ps10"
    own.mkdir()
    (own / "problem1.ipynb").write_text("{}")
    (own / "problem2.ipynb").write_text("{}")
    when = (2026, 10, 7, 10, 0, 0)
    export = _zip(tmp_path / "ps.zip", [
        ("jsmith_ps10_problem1.ipynb", _notebook("ps10"), when),
        ("mgarcia_ps1_problem1.ipynb", _notebook("ps1"), when),
    ])  # fmt: skip
    run = collect(export, course, lesson="ps1", timezone="UTC")
    assert [(p.student, p.lesson) for p in run.placed] == [("mgarcia", "ps1")]
    assert _reasons(run) == {
        "jsmith_ps10_problem1.ipynb": "jsmith: is a submission of ps10, not ps1"
    }
    run = collect(export, course, timezone="UTC")
    assert set(_by_student(run)) >= {("jsmith", "ps10", "problem1.ipynb")}


def test_brightspace_date_that_cannot_be_read_is_named(course, tmp_path):
    """A Brightspace folder whose date is in another language's form: rejected, saying that
    the date could not be read and what to do; the student's other file placed says so."""
    french = f"123458-789014 - Smith John - 7 oct. 2026 21 h 05/{L3}.ipynb"
    export = _zip(tmp_path / "d2l.zip", [
        (f"123457-789013 - Smith John - Oct 6, 2026 1205 AM/{L3}.ipynb", _notebook("j"),
         (2026, 11, 1, 0, 0, 0)),
        (french, _notebook("newer"), (2026, 11, 1, 0, 0, 0)),
    ])  # fmt: skip
    run = collect(export, course, timezone="UTC")
    why = (
        "the submission date in its folder's name ('7 oct. 2026 21 h 05') could not be read"
        " (Brightspace's English form is 'Oct 5, 2026 820 PM'): give --pattern with a"
        " (?P<timestamp>…) group in a form it reads, or rename the folder to that form"
    )
    assert _reasons(run) == {french: f"jsmith: {why}"}
    (placed,) = run.placed
    assert placed.note.endswith(
        f"; a file of theirs was rejected ({french}: {why}): check which is their latest"
    )


def test_a_file_two_students_match_says_what_to_do(course, tmp_path):
    """Two students on the roster of the file's name: the reason names both and says how to
    place it: with the grading worksheet (--worksheet), or by hand, where (Moodle's participant
    number is on no roster: no --pattern)."""
    export = _zip(tmp_path / "moodle.zip", [
        (f"Anne Martin_105_assignsubmission_file_/{L3}.ipynb", _notebook("a"),
         (2026, 10, 5, 12, 0, 0)),
    ])  # fmt: skip
    (rejected,) = collect(export, course, timezone="UTC").rejected
    assert rejected.reason == (
        "Anne Martin? 2 students on the roster have this name: amartin1 (Anne Martin),"
        " amartin2 (Anne Martin); Moodle's number in the name is the assignment's participant"
        " number, on no roster: collect again with --worksheet and the assignment's grading"
        " worksheet (View all submissions > Grading action > Download grading worksheet), or"
        f" place the file by hand in submitted/<amartin1|amartin2>/{L3}/{L3}.ipynb"
    )
