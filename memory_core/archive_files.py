"""The archive port: one gzip-compressed JSON-lines file per user, written crash-safely.

Files live under ``archive_dir`` (default ``data_dir/archive``), named by the SHA-256 of the
user id (never the raw id, which may hold anything from e-mail addresses to path separators).
Each line is one full memory record.

A file is never modified in place. The new content is written to a temporary file in the same
directory, flushed and fsynced, renamed over the old one (atomic on POSIX), and the directory is
fsynced. An exclusive lock on a per-user lock file (``filelock``: ``flock`` on POSIX)
serialises writers across threads and processes on one host.

Kept apart from the archive job (``maintenance/archive.py``) because deleting, erasing and
restoring a memory (``lifecycle_ops``) change these files too, and must not depend on the job.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import uuid
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Sequence

from filelock import FileLock

from memory_core.config import Settings
from memory_core.records import MemoryRecord
from memory_core.validation import check_user_id

log = logging.getLogger(__name__)
FORMAT_VERSION = 1
SUFFIX = ".jsonl.gz"


def archive_root(settings: Settings) -> Path:
    return settings.archive_dir or (settings.data_dir / "archive")


def user_key(user_id: str) -> str:
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()


def archive_path(settings: Settings, user_id: str) -> Path:
    """The user's archive file: named by a hash of the id, so no id ever becomes a path."""
    return archive_root(settings) / f"{user_key(user_id)}{SUFFIX}"


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name[: -len(SUFFIX)] + ".lock")


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of one user's archive file (threads and processes on one host)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(_lock_path(path)):
        yield


def read_archive(path: Path) -> dict[str, dict[str, Any]]:
    """memory_id -> archived entry, for one user's file (empty when there is none)."""
    if not path.exists():
        return {}
    entries: dict[str, dict[str, Any]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                entry = json.loads(line)
                entries[entry["record"]["memory_id"]] = entry  # a later line for the same id wins
    return entries


def fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_archive(path: Path, entries: dict[str, dict[str, Any]]) -> None:
    """Replace the file durably: temp file, fsync, atomic rename, fsync of the directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not entries:
        if path.exists():
            path.unlink()
            fsync_dir(path.parent)
        return
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
                for entry in entries.values():
                    gz.write((json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync_dir(path.parent)


def record_json(record: MemoryRecord) -> dict[str, Any]:
    data = asdict(record)
    for key, value in list(data.items()):
        if isinstance(value, datetime):
            data[key] = value.isoformat()
        elif hasattr(value, "value"):
            data[key] = value.value
    return data


def archived_entry(settings: Settings, user_id: str, memory_id: str) -> dict[str, Any] | None:
    """The line the user's file holds for ``memory_id``, read under the file lock."""
    path = archive_path(settings, user_id)
    with file_lock(path):
        return read_archive(path).get(memory_id)


def drop_from_archive(settings: Settings, user_id: str, memory_ids: Sequence[str]) -> int:
    """Remove these memories' lines from the user's archive file (restore, delete). Returns how many."""
    path = archive_path(settings, check_user_id(user_id))
    if not path.exists():
        return 0
    with file_lock(path):
        entries = read_archive(path)
        gone = [mid for mid in memory_ids if entries.pop(mid, None) is not None]
        if gone:
            write_archive(path, entries)
    return len(gone)


def erase_user_archive(settings: Settings, user_id: str) -> bool:
    """Delete a user's archive file (legal erasure). True when there was one."""
    path = archive_path(settings, check_user_id(user_id))
    with file_lock(path):
        existed = path.exists()
        if existed:
            path.unlink()
            fsync_dir(path.parent)
    _lock_path(path).unlink(missing_ok=True)
    return existed


def file_stats(path: Path) -> dict[str, Any]:
    """File name, size in bytes and number of records (-1 when unreadable) of one archive file."""
    if not path.exists():
        return {"file": path.name, "file_bytes": 0, "file_records": 0}
    try:
        records = len(read_archive(path))
    except (OSError, ValueError, KeyError) as exc:
        log.warning("unreadable archive file %s: %s", path.name, exc)
        records = -1
    return {"file": path.name, "file_bytes": path.stat().st_size, "file_records": records}
