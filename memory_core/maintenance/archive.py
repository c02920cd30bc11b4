"""Cold storage for memories nobody uses: low importance and untouched for half a year.

A memory with importance <= ``archive_max_importance`` (2) whose creation, last edit and last
retrieval are all older than ``archive_after_days`` (180) is written to its user's archive file
and then marked ``archived`` in SQL; its vector leaves Milvus. Active and already expired
memories both qualify (an expired chatter line ends up here half a year after it expired).

Archive files: one gzip-compressed JSON-lines file per user under ``archive_dir`` (default
``data_dir/archive``), named by the SHA-256 of the user id (never the raw id, which may hold
anything from e-mail addresses to path separators). Each line is one full memory record.

Crash safety: a file is never modified in place. The new content is written to a temporary file
in the same directory, flushed and fsynced, renamed over the old one (atomic on POSIX), and the
directory is fsynced; only then does the SQL status change. A crash before the rename leaves the
old file and the memory unarchived; a crash after it leaves a line for a still-active memory,
which is harmless (the next run rewrites it). An exclusive ``flock`` on a per-user lock file
serialises writers across threads and processes on one host (files: ``memory_core.archive_files``).

A line written for a memory whose SQL update then matches nothing (it was touched, edited,
expired, merged or deleted since it was read, or its user was erased) is taken out again under
the file lock, and a file left empty is removed: otherwise a run that read its batch before an
erasure would recreate the erased user's file with their words. A line is kept only while SQL
has the memory archived, or has it with empty content (the line is then the only copy).

With ``archive_strip_content`` the SQL row keeps only its summary and metadata and the content
lives in the archive file alone; ``restore_from_archive`` (``memory_core.lifecycle_ops``, which
``engine.restore`` routes archived memories to) puts it back. Off by default.

Jobs take the engine's parts (``memory_core.parts.EngineParts``), not the engine.
"""
from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Sequence

from memory_core.archive_files import (
    FORMAT_VERSION,
    SUFFIX,
    archive_path,
    archive_root,
    drop_from_archive,
    erase_user_archive,
    file_lock,
    file_stats,
    read_archive,
    record_json,
    write_archive,
)
from memory_core.clock import as_utc
from memory_core.lifecycle_ops import restore_from_archive
from memory_core.maintenance.locks import SCHEDULER_ACTOR, run_leased
from memory_core.parts import EngineParts
from memory_core.records import MemoryRecord
from memory_core.records import snapshot
from memory_core.types import MemoryStatus

log = logging.getLogger(__name__)
__all__ = ["FORMAT_VERSION", "SUFFIX", "archive_due", "archive_path", "archive_records", "archive_root",
           "archive_stats", "drop_from_archive", "erase_user_archive", "restore_from_archive"]


# ---- the job --------------------------------------------------------------------------------
def _due(parts: EngineParts, cutoff: datetime, after: tuple[str, str], limit: int) -> list[MemoryRecord]:
    return parts.repo.archive_candidates(parts.settings.archive_max_importance, cutoff, after, limit)


def archive_records(parts: EngineParts, records: Sequence[MemoryRecord], now: datetime,
                    actor: str = SCHEDULER_ACTOR, note: str = "") -> int:
    """Archive these memories of ONE user: file first (durably), then SQL, then Milvus."""
    if not records:
        return 0
    user_id = records[0].user_id
    if any(r.user_id != user_id for r in records):
        raise ValueError("archive_records takes the memories of one user")
    path = archive_path(parts.settings, user_id)
    strip = parts.settings.archive_strip_content
    written: dict[str, dict[str, Any]] = {}
    with file_lock(path):
        entries = read_archive(path)
        for record in records:
            entries[record.memory_id] = written[record.memory_id] = _new_entry(
                record, now, entries.get(record.memory_id))
        write_archive(path, entries)  # durable before any SQL change
    archived: list[MemoryRecord] = []
    try:
        _archive_rows(parts, records, now, actor, note, path, strip, archived)
    except Exception:
        # The transaction failed: nothing of it is known to have applied, so SQL says what stays.
        try:
            _drop_unapplied(parts, path, records, written)
        except Exception as exc:
            log.warning("could not take unapplied lines out of an archive file: %s", exc)
        raise
    applied = {r.memory_id for r in archived}
    _drop_unapplied(parts, path, [r for r in records if r.memory_id not in applied], written)
    active = [r.memory_id for r in archived if r.status is MemoryStatus.ACTIVE]
    if active:
        try:
            parts.vectors.delete(active, user_id=user_id)
        except Exception as exc:
            log.warning("vector delete failed; reconcile will remove the orphans: %s", exc)
    if archived:
        parts.cache.invalidate_user(user_id)
    return len(archived)


def _new_entry(record: MemoryRecord, now: datetime, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The archive line for ``record``, given the line the file already has for it.

    A memory archived with ``archive_strip_content`` and later expired (not restored) is a row
    with empty content whose words live in its old line alone; when it is due again, an empty
    new line must not replace them. The words are carried over when the content hashes agree,
    and otherwise the old line is kept as it is.
    """
    entry: dict[str, Any] = {"v": FORMAT_VERSION, "archived_at": now.isoformat(), "record": record_json(record)}
    if record.content or previous is None or not previous["record"].get("content"):
        return entry
    if previous["record"].get("content_hash") == record.content_hash:
        entry["record"]["content"] = previous["record"]["content"]
        entry["record"]["sealed"] = previous["record"].get("sealed")
        return entry
    return previous


def _archive_rows(parts: EngineParts, records: Sequence[MemoryRecord], now: datetime, actor: str, note: str,
                  path: Path, strip: bool, archived: list[MemoryRecord]) -> None:
    """The SQL step: mark each record archived if it is untouched since it was read; the ones
    whose update applied are appended to ``archived`` (filled in place, so the caller knows
    them even when the transaction fails)."""
    user_id = records[0].user_id
    with parts.repo.session() as session:
        for record in records:
            fields: dict[str, Any] = dict(status=MemoryStatus.ARCHIVED.value, updated_at=now, vector_written=False)
            if strip:
                fields["content"] = ""
                fields["sealed"] = None  # its values go with its words, to the file
            # Only if untouched since it was read (same status, same ``updated_at``).
            if not parts.repo.update_if_unchanged(session, record.memory_id, record.status, record.updated_at,
                                                  **fields):
                continue
            after = parts.repo.get(record.memory_id, session)
            assert after is not None
            parts.repo.add_history(
                session, memory_id=record.memory_id, user_id=user_id, action="archive", actor=actor, at=now,
                before=snapshot(record), after=snapshot(after),
                note=note or f"importance {record.importance}, untouched for "
                             f"{parts.settings.archive_after_days} days; archive file {path.name}")
            archived.append(record)


def _drop_unapplied(parts: EngineParts, path: Path, records: Sequence[MemoryRecord],
                    written: dict[str, dict[str, Any]]) -> None:
    """Take out the lines this run wrote for memories whose SQL update did not apply.

    Decided under the file lock from what SQL holds now: the line stays only if the memory is
    archived (by whoever), or still exists with empty content while the line has its words (the
    only copy). A missing row (deleted, or the user erased) or one with its content in SQL loses
    the line; a line rewritten by someone else since is theirs and is left alone. Delete, erasure
    and restore change SQL before they take the lock to change the file, so whatever they did
    to SQL before this read is seen here, and whatever they do after it they clean up themselves.
    """
    if not records or not path.exists():
        return
    ids = [r.memory_id for r in records]
    with file_lock(path):
        entries = read_archive(path)
        ours = [mid for mid in ids if mid in entries and _same(entries[mid], written[mid])]
        if not ours:
            return
        rows = parts.repo.status_and_content(ours)
        gone = []
        for mid in ours:
            row = rows.get(mid)
            keep = row is not None and (row[0] is MemoryStatus.ARCHIVED
                                        or (not row[1] and bool(entries[mid]["record"].get("content"))))
            if not keep:
                gone.append(mid)
                del entries[mid]
        if gone:
            write_archive(path, entries)  # unlinks the file when nothing is left in it
            log.info("took %d lines out of archive file %s: their memories changed before the update",
                     len(gone), path.name)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal as written to the file (a read-back line has lists where the record had tuples)."""
    return json.dumps(a, ensure_ascii=False, sort_keys=True) == json.dumps(b, ensure_ascii=False, sort_keys=True)


def archive_due(parts: EngineParts, now: datetime | None = None, *, wait: bool = False) -> dict[str, Any]:
    """The archive job: move low-importance, long-untouched memories to the users' archive files.

    Returns ``{"skipped", "checked", "archived", "users", "errors"}``.
    """
    def body() -> dict[str, Any]:
        at = as_utc(now) if now is not None else parts.clock.now()
        parts.flush()  # queued retrievals count as touches
        cutoff = at - timedelta(days=parts.settings.archive_after_days)
        checked = archived = errors = 0
        users: set[str] = set()
        after = ("", "")
        while True:
            batch = _due(parts, cutoff, after, parts.settings.maintenance_batch_size)
            if not batch:
                break
            after = (batch[-1].user_id, batch[-1].memory_id)
            checked += len(batch)
            by_user: dict[str, list[MemoryRecord]] = {}
            for record in batch:
                by_user.setdefault(record.user_id, []).append(record)
            for user_id, records in by_user.items():
                try:
                    count = archive_records(parts, records, at)
                    archived += count
                    if count:
                        users.add(user_id)
                except Exception as exc:  # one user's failure must not stop the others
                    log.warning("archiving %d memories of a user failed: %s", len(records), exc)
                    errors += 1
        return {"checked": checked, "archived": archived, "users": len(users), "errors": errors}

    return run_leased(parts, "archive", body, wait=wait)


# ---- stats ------------------------------------------------------------------------------------
def archive_stats(parts: EngineParts) -> list[dict[str, Any]]:
    """Per user: archived count in SQL, archive file name, size in bytes and lines in it.

    Files no SQL user maps to (e.g. left by an erasure that predates the hook) are listed with
    ``user_id`` None so staff can see them.
    """
    rows = parts.repo.count_by_user(MemoryStatus.ARCHIVED)
    root = archive_root(parts.settings)
    stats: list[dict[str, Any]] = []
    seen: set[str] = set()
    for user_id, count in rows:
        path = archive_path(parts.settings, user_id)
        seen.add(path.name)
        stats.append(file_stats(path) | {"user_id": user_id, "archived": int(count)})
    if root.exists():
        for path in sorted(root.glob(f"*{SUFFIX}")):
            if path.name not in seen:
                stats.append(file_stats(path) | {"user_id": None, "archived": 0})
    return stats
