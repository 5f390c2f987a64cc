"""`nbgrader export` (the stock command and the formgrader) writing a CSV a spreadsheet can open
safely: nbgrader's CsvExportPlugin joins values with commas, unquoted, so a name with a comma
shifts its row's columns and one starting with `=` runs as a formula. Same rows and columns,
written by the csv module, every text cell through `csv_safe`."""

import csv

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins.export import CsvExportPlugin

from grader.safe_output.text import csv_safe

COLUMNS = [
    *("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email"),
    *("raw_score", "late_submission_penalty", "score", "max_score"),
]


class SafeCsvExportPlugin(CsvExportPlugin):
    """nbgrader's CSV export, each value quoted as needed and kept from reading as a formula."""

    def export(self, gradebook: Gradebook) -> None:
        """Write one row per assignment and student, as CsvExportPlugin computes it."""
        dest = self.to or "grades.csv"
        students, assignments = [str(s) for s in self.student], [str(a) for a in self.assignment]
        self.log.info("Exporting grades to %s", dest)
        with open(dest, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            for assignment in gradebook.assignments:
                if assignments and assignment.name not in assignments:
                    continue
                for student in gradebook.students:
                    if students and student.id not in students:
                        continue
                    row = _row(gradebook, assignment, student)
                    writer.writerow(["" if row[k] is None else csv_safe(row[k]) for k in COLUMNS])


def _row(gradebook: Gradebook, assignment, student) -> dict:
    row = {
        "assignment": assignment.name,
        "duedate": assignment.duedate,
        "student_id": student.id,
        "last_name": student.last_name,
        "first_name": student.first_name,
        "email": student.email,
        "max_score": assignment.max_score,
    }
    try:
        submission = gradebook.find_submission(assignment.name, student.id)
    except MissingEntry:
        row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0)
        return row
    penalty = submission.late_submission_penalty
    row.update(timestamp=submission.timestamp, raw_score=submission.score)
    row.update(late_submission_penalty=penalty, score=max(0.0, submission.score - penalty))
    return row


def use_safe_export(c) -> None:
    """Make `nbgrader export` (the command and the formgrader) write through this plugin."""
    c.ExportApp.plugin_class = "grader.safe_output.stock_export.SafeCsvExportPlugin"
