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
serialises writers across threads and processes on one host.

A line written for a memory whose SQL update then matches nothing (it was touched, edited,
expired, merged or deleted since it was read, or its user was erased) is taken out again under
the file lock, and a file left empty is removed: otherwise a run that read its batch before an
erasure would recreate the erased user's file with their words. A line is kept only while SQL
has the memory archived, or has it with empty content (the line is then the only copy).

With ``archive_strip_content`` the SQL row keeps only its summary and metadata and the content
lives in the archive file alone; ``restore_from_archive`` puts it back. Off by default, because
then ``engine.restore`` of an archived memory must be routed here (see the maintenance report).
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
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from sqlalchemy import and_, func, or_, select, update

from memory_core.clock import as_utc
from memory_core.config import Settings
from memory_core.errors import NotFoundError, ValidationError
from memory_core.lifecycle import expires_at_for
from memory_core.maintenance.locks import SCHEDULER_ACTOR, run_leased
from memory_core.records import MemoryRecord
from memory_core.storage.repository import snapshot, to_record
from memory_core.storage.schema import MemoryRow
from memory_core.types import MemoryStatus
from memory_core.validation import check_memory_id, check_user_id

try:  # POSIX file locks; elsewhere the in-process lease is the only guard
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from memory_core.engine import MemoryEngine

log = logging.getLogger(__name__)
FORMAT_VERSION = 1
SUFFIX = ".jsonl.gz"


# ---- files ----------------------------------------------------------------------------------
def archive_root(settings: Settings) -> Path:
    return settings.archive_dir or (settings.data_dir / "archive")


def user_key(user_id: str) -> str:
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()


def archive_path(settings: Settings, user_id: str) -> Path:
    """The user's archive file: named by a hash of the id, so no id ever becomes a path."""
    return archive_root(settings) / f"{user_key(user_id)}{SUFFIX}"


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name[: -len(SUFFIX)] + ".lock")
    with open(lock_path, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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


def _fsync_dir(directory: Path) -> None:
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
            _fsync_dir(path.parent)
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
    _fsync_dir(path.parent)


def _record_json(record: MemoryRecord) -> dict[str, Any]:
    data = asdict(record)
    for key, value in list(data.items()):
        if isinstance(value, datetime):
            data[key] = value.isoformat()
        elif hasattr(value, "value"):
            data[key] = value.value
    return data


# ---- the job --------------------------------------------------------------------------------
def _due(engine: "MemoryEngine", cutoff: datetime, after: tuple[str, str], limit: int) -> list[MemoryRecord]:
    s = engine.settings
    with engine.repo.session() as session:
        rows = session.scalars(
            select(MemoryRow)
            .where(
                MemoryRow.status.in_([MemoryStatus.ACTIVE.value, MemoryStatus.EXPIRED.value]),
                MemoryRow.importance <= s.archive_max_importance,
                MemoryRow.created_at <= cutoff,
                MemoryRow.updated_at <= cutoff,
                or_(MemoryRow.last_accessed_at.is_(None), MemoryRow.last_accessed_at <= cutoff),
                or_(MemoryRow.user_id > after[0],
                    and_(MemoryRow.user_id == after[0], MemoryRow.memory_id > after[1])),
            )
            .order_by(MemoryRow.user_id, MemoryRow.memory_id)
            .limit(limit)
        )
        return [to_record(row) for row in rows]


def archive_records(engine: "MemoryEngine", records: Sequence[MemoryRecord], now: datetime,
                    actor: str = SCHEDULER_ACTOR, note: str = "") -> int:
    """Archive these memories of ONE user: file first (durably), then SQL, then Milvus."""
    if not records:
        return 0
    user_id = records[0].user_id
    if any(r.user_id != user_id for r in records):
        raise ValueError("archive_records takes the memories of one user")
    path = archive_path(engine.settings, user_id)
    strip = engine.settings.archive_strip_content
    written: dict[str, dict[str, Any]] = {}
    with _file_lock(path):
        entries = read_archive(path)
        for record in records:
            entries[record.memory_id] = written[record.memory_id] = _new_entry(
                record, now, entries.get(record.memory_id))
        write_archive(path, entries)  # durable before any SQL change
    archived: list[MemoryRecord] = []
    try:
        _archive_rows(engine, records, now, actor, note, path, strip, archived)
    except Exception:
        # The transaction failed: nothing of it is known to have applied, so SQL says what stays.
        try:
            _drop_unapplied(engine, path, records, written)
        except Exception as exc:
            log.warning("could not take unapplied lines out of an archive file: %s", exc)
        raise
    applied = {r.memory_id for r in archived}
    _drop_unapplied(engine, path, [r for r in records if r.memory_id not in applied], written)
    active = [r.memory_id for r in archived if r.status is MemoryStatus.ACTIVE]
    if active:
        try:
            engine.vectors.delete(active, user_id=user_id)
        except Exception as exc:
            log.warning("vector delete failed; reconcile will remove the orphans: %s", exc)
    if archived:
        engine.cache.invalidate_user(user_id)
    return len(archived)


def _new_entry(record: MemoryRecord, now: datetime, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The archive line for ``record``, given the line the file already has for it.

    A memory archived with ``archive_strip_content`` and later expired (not restored) is a row
    with empty content whose words live in its old line alone; when it is due again, an empty
    new line must not replace them. The words are carried over when the content hashes agree,
    and otherwise the old line is kept as it is.
    """
    entry: dict[str, Any] = {"v": FORMAT_VERSION, "archived_at": now.isoformat(), "record": _record_json(record)}
    if record.content or previous is None or not previous["record"].get("content"):
        return entry
    if previous["record"].get("content_hash") == record.content_hash:
        entry["record"]["content"] = previous["record"]["content"]
        return entry
    return previous


def _archive_rows(engine: "MemoryEngine", records: Sequence[MemoryRecord], now: datetime, actor: str, note: str,
                  path: Path, strip: bool, archived: list[MemoryRecord]) -> None:
    """The SQL step: mark each record archived if it is untouched since it was read; the ones
    whose update applied are appended to ``archived`` (filled in place, so the caller knows
    them even when the transaction fails)."""
    user_id = records[0].user_id
    with engine.repo.session() as session:
        for record in records:
            fields: dict[str, Any] = dict(status=MemoryStatus.ARCHIVED.value, updated_at=now, vector_written=False)
            if strip:
                fields["content"] = ""
            changed = session.execute(
                update(MemoryRow)
                .where(MemoryRow.memory_id == record.memory_id, MemoryRow.status == record.status.value,
                       MemoryRow.updated_at == record.updated_at)  # untouched since it was read
                .values(**fields)
            ).rowcount
            if not changed:
                continue
            after = engine.repo.get(record.memory_id, session)
            assert after is not None
            engine.repo.add_history(
                session, memory_id=record.memory_id, user_id=user_id, action="archive", actor=actor, at=now,
                before=snapshot(record), after=snapshot(after),
                note=note or f"importance {record.importance}, untouched for "
                             f"{engine.settings.archive_after_days} days; archive file {path.name}")
            archived.append(record)


def _drop_unapplied(engine: "MemoryEngine", path: Path, records: Sequence[MemoryRecord],
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
    with _file_lock(path):
        entries = read_archive(path)
        ours = [mid for mid in ids if mid in entries and _same(entries[mid], written[mid])]
        if not ours:
            return
        with engine.repo.session() as session:
            rows = {mid: (status, content) for mid, status, content in session.execute(
                select(MemoryRow.memory_id, MemoryRow.status, MemoryRow.content)
                .where(MemoryRow.memory_id.in_(ours)))}
        gone = []
        for mid in ours:
            row = rows.get(mid)
            keep = row is not None and (row[0] == MemoryStatus.ARCHIVED.value
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


def archive_due(engine: "MemoryEngine", now: datetime | None = None, *, wait: bool = False) -> dict[str, Any]:
    """The archive job: move low-importance, long-untouched memories to the users' archive files.

    Returns ``{"skipped", "checked", "archived", "users", "errors"}``.
    """
    def body() -> dict[str, Any]:
        at = as_utc(now) if now is not None else engine.clock.now()
        engine.flush()  # queued retrievals count as touches
        cutoff = at - timedelta(days=engine.settings.archive_after_days)
        checked = archived = errors = 0
        users: set[str] = set()
        after = ("", "")
        while True:
            batch = _due(engine, cutoff, after, engine.settings.maintenance_batch_size)
            if not batch:
                break
            after = (batch[-1].user_id, batch[-1].memory_id)
            checked += len(batch)
            by_user: dict[str, list[MemoryRecord]] = {}
            for record in batch:
                by_user.setdefault(record.user_id, []).append(record)
            for user_id, records in by_user.items():
                try:
                    count = archive_records(engine, records, at)
                    archived += count
                    if count:
                        users.add(user_id)
                except Exception as exc:  # one user's failure must not stop the others
                    log.warning("archiving %d memories of a user failed: %s", len(records), exc)
                    errors += 1
        return {"checked": checked, "archived": archived, "users": len(users), "errors": errors}

    return run_leased(engine, "archive", body, wait=wait)


# ---- restore, stats, erasure ----------------------------------------------------------------
def restore_from_archive(engine: "MemoryEngine", memory_id: str, actor: str, note: str = "") -> MemoryRecord:
    """Bring an archived memory back: active again, content from the archive file when SQL has
    none, a fresh lifetime if its expiry passed, re-indexed. Its archive line is then removed."""
    record = engine.repo.get(check_memory_id(memory_id))
    if record is None:
        raise NotFoundError(f"memory {memory_id!r} not found")
    if record.status is not MemoryStatus.ARCHIVED:
        raise ValidationError(f"memory {memory_id!r} is {record.status.value}, not archived")
    path = archive_path(engine.settings, record.user_id)
    with _file_lock(path):
        entry = read_archive(path).get(record.memory_id)
    content = record.content
    if entry is not None and entry["record"].get("content_hash") == record.content_hash:
        content = entry["record"]["content"]
    elif not content:
        raise NotFoundError(f"the archive file has no copy of memory {memory_id!r}")
    now = engine.clock.now()
    fields: dict[str, Any] = dict(status=MemoryStatus.ACTIVE.value, content=content, expired_at=None,
                                  superseded_by=None, updated_at=now, vector_written=False)
    if record.expires_at is not None and record.expires_at <= now:
        fields["expires_at"] = expires_at_for(record.importance, now, engine.settings.ttl_days_by_importance)
    with engine.repo.session() as session:
        changed = session.execute(
            update(MemoryRow)
            .where(MemoryRow.memory_id == record.memory_id, MemoryRow.status == MemoryStatus.ARCHIVED.value)
            .values(**fields)
        ).rowcount
        if not changed:
            raise ValidationError(f"memory {memory_id!r} changed while it was being restored")
        after = engine.repo.get(record.memory_id, session)
        assert after is not None
        engine.repo.add_history(session, memory_id=record.memory_id, user_id=record.user_id, action="restore",
                                actor=actor, at=now, before=snapshot(record), after=snapshot(after),
                                note=note or f"restored from archive file {path.name}")
    drop_from_archive(engine, record.user_id, [record.memory_id])
    try:
        engine.writer.index_records([after])
    except Exception as exc:
        log.warning("re-index failed; left pending for reconcile: %s", exc)
    engine.cache.invalidate_user(record.user_id)
    restored = engine.repo.get(record.memory_id)
    assert restored is not None
    return restored


def drop_from_archive(engine: "MemoryEngine", user_id: str, memory_ids: Sequence[str]) -> int:
    """Remove these memories' lines from the user's archive file (restore, delete). Returns how many."""
    path = archive_path(engine.settings, check_user_id(user_id))
    if not path.exists():
        return 0
    with _file_lock(path):
        entries = read_archive(path)
        gone = [mid for mid in memory_ids if entries.pop(mid, None) is not None]
        if gone:
            write_archive(path, entries)
    return len(gone)


def erase_user_archive(engine: "MemoryEngine", user_id: str) -> bool:
    """Delete a user's archive file (legal erasure). True when there was one."""
    path = archive_path(engine.settings, check_user_id(user_id))
    with _file_lock(path):
        existed = path.exists()
        if existed:
            path.unlink()
            _fsync_dir(path.parent)
    lock = path.with_name(path.name[: -len(SUFFIX)] + ".lock")
    lock.unlink(missing_ok=True)
    return existed


def archive_stats(engine: "MemoryEngine") -> list[dict[str, Any]]:
    """Per user: archived count in SQL, archive file name, size in bytes and lines in it.

    Files no SQL user maps to (e.g. left by an erasure that predates the hook) are listed with
    ``user_id`` None so staff can see them.
    """
    with engine.repo.session() as session:
        rows = session.execute(
            select(MemoryRow.user_id, func.count())
            .where(MemoryRow.status == MemoryStatus.ARCHIVED.value)
            .group_by(MemoryRow.user_id)
            .order_by(MemoryRow.user_id)
        ).all()
    root = archive_root(engine.settings)
    stats: list[dict[str, Any]] = []
    seen: set[str] = set()
    for user_id, count in rows:
        path = archive_path(engine.settings, user_id)
        seen.add(path.name)
        stats.append(_file_stats(path) | {"user_id": user_id, "archived": int(count)})
    if root.exists():
        for path in sorted(root.glob(f"*{SUFFIX}")):
            if path.name not in seen:
                stats.append(_file_stats(path) | {"user_id": None, "archived": 0})
    return stats


def _file_stats(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"file": path.name, "file_bytes": 0, "file_records": 0}
    try:
        records = len(read_archive(path))
    except (OSError, ValueError, KeyError) as exc:
        log.warning("unreadable archive file %s: %s", path.name, exc)
        records = -1
    return {"file": path.name, "file_bytes": path.stat().st_size, "file_records": records}
