"""A lesson's feedback pages zipped for Canvas's and Moodle's bulk feedback upload: names the
platforms match to students, and a page saying why for a student who has no feedback."""

import csv
import zipfile

import pytest

from grader.commands.init import init_course
from grader.grading import outcomes
from grader.lms.feedback_bundle import BundleError, bundle
from grader.lms.roster import COLUMNS, ROSTER_FILE
from grader.outcome import Outcome

L1 = "01_tensors_and_requires_grad"
L2 = "02_grad_fn_and_the_graph"
L3 = "03_backward_and_scalar_outputs"
PAGE = b"<html><body>Casey's feedback</body></html>"
HOSTILE = "<b>not JSON</b>"
ROSTER = [
    {"id": "cjones", "first_name": "Casey", "last_name": "Jones", "email": "casey@uni.example",
     "lms_id": "4101"},
    {"id": "pat", "first_name": "Pat", "last_name": "Lee"},
    {"id": "nora", "first_name": "Nora", "last_name": "Body", "email": "nora@uni.example",
     "lms_id": "4103"},
]  # fmt: skip
CANVAS_PAGE = f"{L1.replace('_', '-')}.html"  # the file part of a Canvas name: no all-digit part


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Lesson 1: Casey graded, with a page; Pat's notebook malformed; Nora handed in nothing.
    Lesson 3: Casey graded, but no page was built."""
    course = init_course(tmp_path_factory.mktemp("feedback_bundle") / "c")
    with open(course.root / ROSTER_FILE, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(ROSTER)
    for student in ("cjones", "pat"):
        (course.submission(student, L1)).mkdir(parents=True)
    page = course.root / "feedback" / "cjones" / L1 / f"{L1}.html"
    page.parent.mkdir(parents=True)
    page.write_bytes(PAGE)
    outcomes.record(course.db_url, L1, "cjones", Outcome.GRADED)
    outcomes.record(course.db_url, L1, "pat", Outcome.MALFORMED, HOSTILE)
    outcomes.record(course.db_url, L3, "cjones", Outcome.GRADED)
    return course


def _zip(path, names: list[str]):
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, b"{}")
    return path


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_canvas_names_carry_the_user_and_attachment_ids_of_the_download(course, tmp_path):
    """Names as Canvas's submissions download has them: Casey by her lms_id, Pat by his name
    (no lms_id), each with the id of the file they submitted for this lesson; Nora submitted
    nothing on Canvas, so hers has her user id only and is listed as one Canvas will not take."""
    export = _zip(
        tmp_path / "submissions.zip",
        [
            f"jonescasey_4101_1000_{L2}.ipynb",  # another lesson's file: not this one's id
            f"jonescasey_4101_9001_{L1}.ipynb",
            f"leepat_late_4102_9002_{L1}.ipynb",
        ],
    )
    made = bundle(course, L1, "canvas", tmp_path / "canvas.zip", ids_from=export)
    members = _members(made.path)
    assert sorted(members) == [
        f"bodynora_4103_{CANVAS_PAGE}",
        f"jonescasey_4101_9001_{CANVAS_PAGE}",
        f"leepat_4102_9002_{CANVAS_PAGE}",
    ]
    assert members[f"jonescasey_4101_9001_{CANVAS_PAGE}"] == PAGE
    assert made.placeholders == {
        "nora": "no submission was received",
        "pat": f"your notebook could not be read: {HOSTILE}",
    }
    assert list(made.unmatched) == ["nora"]
    assert "submissions download" in made.unmatched["nora"]


def test_placeholder_page_says_why_and_escapes_the_detail(course, tmp_path):
    """Pat's page says his notebook could not be read, the detail as text, never as markup."""
    made = bundle(course, L1, "canvas", tmp_path / "canvas.zip")
    page = _members(made.path)[f"leepat_{CANVAS_PAGE}"].decode()
    assert "your notebook could not be read: &lt;b&gt;not JSON&lt;/b&gt;" in page
    assert HOSTILE not in page
    assert "There is no feedback page for Nora Body: no submission was received." in (
        _members(made.path)[f"bodynora_4103_{CANVAS_PAGE}"].decode()
    )


def test_canvas_without_the_download_names_what_it_knows(course, tmp_path):
    """Without the download there is no attachment id: every file is listed as unmatched."""
    made = bundle(course, L1, "canvas", tmp_path / "canvas.zip")
    assert sorted(_members(made.path)) == [
        f"bodynora_4103_{CANVAS_PAGE}",
        f"jonescasey_4101_{CANVAS_PAGE}",
        f"leepat_{CANVAS_PAGE}",
    ]
    assert sorted(made.unmatched) == ["cjones", "nora", "pat"]


def test_moodle_names_carry_the_participant_ids_of_the_grading_worksheet(course, tmp_path):
    """Moodle's folder names, with each participant id of the grading worksheet: matched by
    email (Casey's full name differs there), else by full name."""
    worksheet = tmp_path / "worksheet.csv"
    worksheet.write_text(
        "Identifier,Full name,Email address,Status\n"
        "Participant 501,Casey J. Jones,casey@uni.example,Submitted\n"
        "Participant 502,Pat Lee,,Submitted\n"
        "Participant 503,Nora Body,nora@uni.example,No submission\n",
        encoding="utf-8-sig",
    )
    made = bundle(course, L1, "moodle", tmp_path / "moodle.zip", ids_from=worksheet)
    members = _members(made.path)
    assert sorted(members) == [
        f"Casey Jones_501_assignsubmission_file_/{L1}.html",
        f"Nora Body_503_assignsubmission_file_/{L1}.html",
        f"Pat Lee_502_assignsubmission_file_/{L1}.html",
    ]
    assert members[f"Casey Jones_501_assignsubmission_file_/{L1}.html"] == PAGE
    assert made.unmatched == {}
    assert sorted(made.placeholders) == ["nora", "pat"]


def test_a_worksheet_saved_from_excel_with_semicolons_reads_the_same(course, tmp_path):
    """Excel in many languages saves CSV separated by semicolons, with a byte-order mark."""
    worksheet = tmp_path / "worksheet.csv"
    worksheet.write_bytes(
        b"\xef\xbb\xbf"
        + (
            b'Identifier;"Full name";"Email address";Status\r\n'
            b'"Participant 501";"Casey J. Jones";casey@uni.example;"Submitted, late"\r\n'
            b'"Participant 502";"Pat Lee";;Submitted\r\n'
            b'"Participant 503";"Nora Body";nora@uni.example;"No submission"\r\n'
        )
    )
    made = bundle(course, L1, "moodle", tmp_path / "moodle.zip", ids_from=worksheet)
    assert made.unmatched == {}
    assert f"Casey Jones_501_assignsubmission_file_/{L1}.html" in _members(made.path)


def test_a_french_worksheet_reads_the_same(course, tmp_path):
    worksheet = tmp_path / "worksheet.csv"
    worksheet.write_text(
        "Identifiant,Nom complet,Adresse de courriel,Statut\n"
        "Participant 501,Casey J. Jones,casey@uni.example,Remis\n"
        "Participant 502,Pat Lee,,Remis\n"
        "Participant 503,Nora Body,nora@uni.example,Aucun travail remis\n",
        encoding="utf-8",
    )
    made = bundle(course, L1, "moodle", tmp_path / "moodle.zip", ids_from=worksheet)
    assert made.unmatched == {}


def test_a_worksheet_that_is_not_utf8_is_refused_with_the_fix(course, tmp_path):
    """Excel's plain "CSV" is cp1252: refused, naming the file, rather than misread."""
    worksheet = tmp_path / "worksheet.csv"
    worksheet.write_bytes(
        "Identifier,Full name,Email address\nParticipant 501,Zoë Ångström,z@u.example\n".encode(
            "cp1252"
        )
    )
    with pytest.raises(BundleError) as raised:
        bundle(course, L1, "moodle", tmp_path / "moodle.zip", ids_from=worksheet)
    assert str(raised.value).startswith(f"{worksheet}, line 2: not UTF-8 text")
    assert "save it as CSV UTF-8" in str(raised.value)
    assert not (tmp_path / "moodle.zip").exists()


def test_a_csv_that_is_not_the_worksheet_is_refused_naming_its_columns(course, tmp_path):
    """A participants download given for the worksheet would leave everyone unmatched."""
    listing = tmp_path / "participants.csv"
    listing.write_text("First name,Last name,Email address\nCasey,Jones,casey@uni.example\n")
    with pytest.raises(BundleError) as raised:
        bundle(course, L1, "moodle", tmp_path / "moodle.zip", ids_from=listing)
    message = str(raised.value)
    assert message.startswith(f"{listing}, line 1: no 'Identifier' column")
    assert "(the columns are 'First name', 'Last name', 'Email address')" in message
    assert not (tmp_path / "moodle.zip").exists()


def test_moodle_reads_participant_ids_from_the_submissions_download(course, tmp_path):
    """The download's folders give the participant ids of those who submitted; Nora, not in
    it, goes to a folder Moodle's upload cannot read as anyone's."""
    export = _zip(
        tmp_path / "download.zip",
        [
            "Casey Jones_501_assignsubmission_file_/homework.ipynb",
            "Pat Lee_502_assignsubmission_file_/answers.ipynb",
        ],
    )
    made = bundle(course, L1, "moodle", tmp_path / "moodle.zip", ids_from=export)
    assert sorted(_members(made.path)) == [
        f"Casey Jones_501_assignsubmission_file_/{L1}.html",
        f"Pat Lee_502_assignsubmission_file_/{L1}.html",
        f"unmatched/nora/{CANVAS_PAGE}",
    ]
    assert list(made.unmatched) == ["nora"]


def test_moodle_needs_its_participant_ids(course, tmp_path):
    """A Moodle user id is not a participant id, so Moodle's bundle is not guessed."""
    with pytest.raises(BundleError, match="participant ids"):
        bundle(course, L1, "moodle", tmp_path / "moodle.zip")


def test_a_lesson_without_pages_is_refused(course, tmp_path):
    """Lesson 3 was graded but no page was built; lesson 2 was not graded at all."""
    with pytest.raises(BundleError, match=f"run `grader feedback {L3}` first"):
        bundle(course, L3, "canvas", tmp_path / "l3.zip")
    with pytest.raises(BundleError, match="nobody's submission was graded"):
        bundle(course, L2, "canvas", tmp_path / "l2.zip")
    with pytest.raises(BundleError, match="no platform 'blackboard'"):
        bundle(course, L1, "blackboard", tmp_path / "bb.zip")
