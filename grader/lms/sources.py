"""Where each collected submission came from, kept beside collect's backups
(`collect_backup/sources.json`, "student/lesson" -> a record): `layout`, the download's layout;
`source`, the platform's number for who submitted it (`Moodle 102`), which lets a later download
of the same submitter replace a file matched by name; `matched_by`, "name" where nothing else
matched; `time`, the submission time written in timestamp.txt (ISO, or null: on time by the
platform's record, which gives none); `time_from`, whose record it is; `time_estimated`, true
where that time is not a record of the submission (a download's or a copy's time, as for a file
Canvas marked late); `collected`, when collect placed it. Collect writes it
(grader/commands/collect.py); export reads whether a time is an estimate
(grader/lms/time_estimates.py)."""

import json
from datetime import datetime
from pathlib import Path

from grader.compat import UTC

SOURCES = Path("collect_backup") / "sources.json"


class Sources:
    """The records of a course's collected submissions, read once, written on `save`."""

    def __init__(self, course_root: Path):
        self.path, self._records, self._changed = Path(course_root) / SOURCES, None, False

    def _load(self) -> dict:
        if self._records is None:
            try:
                found = json.loads(self.path.read_text())
            except (OSError, ValueError):
                found = {}
            self._records = found if isinstance(found, dict) else {}
        return self._records

    def get(self, student: str, lesson: str) -> dict:
        """The record of `student`'s `lesson`, or {} where there is none."""
        record = self._load().get(f"{student}/{lesson}")
        return record if isinstance(record, dict) else {}

    def record(self, student: str, lesson: str, items: list, latest) -> None:
        """Record where the files `items` came from; `latest`, the one whose time is in force
        (None: on time by the platform's record)."""
        item = latest or items[0]
        self._load()[f"{student}/{lesson}"] = {
            "layout": item.layout,
            "source": item.source,
            "matched_by": "name" if item.by_name else "id",
            "time": latest.time.isoformat() if latest else None,
            "time_from": item.how if latest else item.remark,
            "time_estimated": bool(latest and not latest.strong),
            "collected": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._changed = True

    def save(self) -> None:
        """Write the records, if any changed."""
        if self._changed:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self._records, indent=1, sort_keys=True) + "\n")
            self._changed = False
