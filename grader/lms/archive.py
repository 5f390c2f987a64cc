"""A platform's download of submissions, read safely: a folder or a zip archive, file by file.

Nothing is ever extracted: a file's bytes are read only when it is placed, into a path the
collector makes from the course's own names, so a member's path (`../x`, `/etc/x`) can never
choose where anything is written. Such members, links, names that are not UTF-8, encrypted or
oversized members and macOS metadata are listed with the reason they cannot be taken.

A zip archive in a folder is opened as nbgrader's zip_collect extracts it: its members are read
as if unpacked into a folder named as the archive (`ps1/submissions.zip` holds
`ps1/submissions/…`), by the same rules, and never unpacked.

Times: a zip member carries the time its maker's clock gave it, with no zone (the zip's DOS
time), unless the archive also holds the extended timestamp field (a UTC time), which is then
used as is; a file in a folder has only its modification time, which is when it was copied
there, not when it was submitted, and is labelled so.
"""

import os
import re
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from grader.compat import UTC

MAX_FILE_BYTES = 100 * 2**20  # a notebook larger than this is not read (keep outputs small)
MAX_RECORD_BYTES = 2**20  # a platform's record beside the submissions (Blackboard's .txt)
_UTF8_NAME = 0x800  # zip flag: the member's name is UTF-8
_ENCRYPTED = 0x1
_DRIVE = re.compile(r"^[A-Za-z]:(/|$)")  # a Windows drive: C:/…
_EXTENDED_TIMESTAMP = 0x5455  # zip extra field "UT": modification time in Unix seconds (UTC)

ENTRY_TIME = "the archive entry's time"
COPY_TIME = "the file's modification time: when it was copied, not the platform's record"


class ExportError(ValueError):
    """A file of the export that cannot be read: the message says why."""


@dataclass(frozen=True)
class Entry:
    """One file of the export."""

    path: str  # inside the export, '/'-separated, as the instructor sees it
    size: int
    time: datetime | None = None  # with a zone: a UTC record (extended timestamp, mtime)
    local_time: datetime | None = None  # no zone: the clock of whoever made the archive
    time_source: str = ""
    problem: str = ""  # why it cannot be taken at all
    key: object = field(default=None, compare=False, repr=False)

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.split("/"))

    @property
    def name(self) -> str:
        return self.parts[-1]

    @property
    def folder(self) -> str:
        return self.path.rpartition("/")[0]


class Export:
    """The files of a folder (recursively) or a zip archive, open for reading."""

    def __init__(self, source: Path):
        self.source = Path(source)
        self._archive: zipfile.ZipFile | None = None
        if not self.source.exists():
            raise FileNotFoundError(f"{self.source}: no such file or folder")
        self._inner: dict[str, zipfile.ZipFile] = {}  # a folder's zip archives, by path
        if self.source.is_dir():
            self.kind = "folder"
            self.entries = [
                inner for entry in _folder_entries(self.source) for inner in self._opened(entry)
            ]
        else:
            if not zipfile.is_zipfile(self.source):
                raise ValueError(f"{self.source}: not a folder or a zip archive")
            try:
                self._archive = zipfile.ZipFile(self.source)
            except (zipfile.BadZipFile, OSError, ValueError) as error:
                raise ValueError(f"{self.source}: a damaged zip archive ({error})") from None
            self.kind = "zip archive"
            self.entries = [
                _zip_entry(info) for info in self._archive.infolist() if not info.is_dir()
            ]
        self._by_path = {entry.path: entry for entry in self.entries if not entry.problem}

    def _opened(self, entry: Entry) -> list[Entry]:
        """`entry`, or for a zip archive in the folder the files it holds (nbgrader's
        zip_collect extracts each archive into a folder named as it is)."""
        if entry.problem or not entry.name.lower().endswith(".zip"):
            return [entry]
        try:
            archive = zipfile.ZipFile(entry.key)
        except (zipfile.BadZipFile, OSError, ValueError) as error:
            return [Entry(entry.path, entry.size, entry.time, None, entry.time_source,
                          f"a damaged zip archive ({error})", entry.key)]  # fmt: skip
        prefix = entry.path[: -len(".zip")]
        self._inner[prefix] = archive
        found = []
        for info in archive.infolist():
            if info.is_dir():
                continue
            inner = _zip_entry(info)
            path = f"{prefix}/{inner.path}"
            found.append(
                Entry(path, inner.size, inner.time, inner.local_time, inner.time_source,
                      inner.problem, (prefix, info))
            )  # fmt: skip
        return found

    def __enter__(self) -> "Export":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._archive is not None:
            self._archive.close()
        for archive in self._inner.values():
            archive.close()

    def has(self, path: str) -> bool:
        """Whether the export holds a readable file at `path`."""
        return path in self._by_path

    def read(self, entry: Entry, limit: int | None = None) -> bytes:
        """The bytes of `entry`; ExportError if it is too large or cannot be read."""
        limit = MAX_FILE_BYTES if limit is None else limit
        if entry.size > limit:
            raise ExportError(_too_large(entry.size, limit))
        try:
            if isinstance(entry.key, tuple):  # a member of a zip archive in the folder
                prefix, info = entry.key
                with self._inner[prefix].open(info) as handle:
                    data = handle.read(limit + 1)
            elif self._archive is not None:
                with self._archive.open(entry.key) as handle:
                    data = handle.read(limit + 1)
            else:
                with open(entry.key, "rb") as handle:
                    data = handle.read(limit + 1)
        except (zipfile.BadZipFile, zlib.error, OSError, RuntimeError, NotImplementedError) as e:
            raise ExportError(f"could not be read from the {self.kind}: {e}") from None
        if len(data) > limit:
            raise ExportError(_too_large(len(data), limit))
        return data

    def text(self, path: str) -> str | None:
        """The text of a small record at `path` (a platform's note beside the submissions), or
        None if there is none or it cannot be read."""
        entry = self._by_path.get(path)
        if entry is None:
            return None
        try:
            return self.read(entry, MAX_RECORD_BYTES).decode("utf-8-sig", "replace")
        except ExportError:
            return None


def _too_large(size: int, limit: int) -> str:
    return f"too large ({_size(size)}; the limit is {_size(limit)})"


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count} bytes"


def _unsafe(path: str) -> bool:
    """Whether a member's path would leave the folder it is unpacked into (zip-slip)."""
    return path.startswith("/") or ".." in path.split("/") or bool(_DRIVE.match(path))


def _macos_metadata(parts: tuple[str, ...]) -> bool:
    return "__MACOSX" in parts or parts[-1] == ".DS_Store" or parts[-1].startswith("._")


def _problem(path: str, size: int) -> str:
    if _unsafe(path):
        return "its path leaves the export (absolute or '..'): never unpacked, never placed"
    if _macos_metadata(tuple(path.split("/"))):
        return "macOS metadata (__MACOSX, ._ or .DS_Store), not a submission"
    if size > MAX_FILE_BYTES:
        return _too_large(size, MAX_FILE_BYTES)
    return ""


def _zip_entry(info: zipfile.ZipInfo) -> Entry:
    path, problem = info.filename.replace("\\", "/"), ""  # some Windows tools write a\b
    if not info.flag_bits & _UTF8_NAME and not path.isascii():
        raw = info.orig_filename.encode("cp437").replace(b"\\", b"/")  # zipfile read cp437
        try:
            path = raw.decode("utf-8")  # UTF-8 without the flag: common, and unambiguous
        except UnicodeDecodeError:
            path = raw.decode("utf-8", "backslashreplace")
            problem = "its name is not UTF-8 (the archive was made in another encoding)"
    kept = [part for part in path.split("/") if part not in ("", ".")]
    if not _unsafe(path):
        path = "/".join(kept)
    problem = problem or _problem(path, info.file_size)
    if not problem and stat.S_ISLNK(info.external_attr >> 16):
        problem = "a link, not a file"
    if not problem and info.flag_bits & _ENCRYPTED:
        problem = "encrypted: download the submissions again without a password"
    utc = _extended_time(info.extra)
    try:
        local = None if utc else datetime(*info.date_time)
    except ValueError:
        local = None
    return Entry(path, info.file_size, utc, local, ENTRY_TIME, problem, info)


def _extended_time(extra: bytes) -> datetime | None:
    """The UTC modification time in a zip member's extended timestamp field, if it has one."""
    at = 0
    while at + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, at)
        body = extra[at + 4 : at + 4 + size]
        if kind == _EXTENDED_TIMESTAMP and len(body) >= 5 and body[0] & 1:
            try:
                return datetime.fromtimestamp(struct.unpack_from("<i", body, 1)[0], UTC)
            except (OverflowError, OSError, ValueError):
                return None
        at += 4 + size
    return None


def _folder_entries(source: Path):
    for root, folders, files in os.walk(source):
        folders.sort()
        here = Path(root)
        for name in sorted(files) + sorted(f for f in folders if (here / f).is_symlink()):
            path = here / name
            relative = path.relative_to(source).as_posix()
            try:
                relative.encode("utf-8")
                problem = ""
            except UnicodeEncodeError:
                relative = os.fsencode(relative).decode("utf-8", "backslashreplace")
                problem = "its name is not UTF-8"
            info = path.lstat()
            if not problem and stat.S_ISLNK(info.st_mode):
                problem = "a link: not followed"
            elif not problem and not stat.S_ISREG(info.st_mode):
                problem = "not a regular file"
            problem = problem or _problem(relative, info.st_size)
            modified = datetime.fromtimestamp(info.st_mtime, UTC)
            yield Entry(relative, info.st_size, modified, None, COPY_TIME, problem, path)
