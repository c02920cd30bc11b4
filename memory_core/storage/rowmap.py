"""ORM rows to plain values: ``MemoryRecord``, history entries, message dicts (audit snapshots,
``records.snapshot``, are re-exported here for older imports).

Repositories return these, never rows, so nothing above storage holds an ORM object.
"""
from __future__ import annotations

from typing import Any

from memory_core.records import SNAPSHOT_FIELDS, HistoryEntry, MemoryRecord, snapshot
from memory_core.storage.schema import HistoryRow, MemoryRow, MessageRow
from memory_core.types import MemoryStatus, MemoryType

__all__ = ["SNAPSHOT_FIELDS", "SORTABLE", "history_entry", "message_dict", "snapshot", "to_record", "with_prefix"]

SORTABLE = {
    "created_at": MemoryRow.created_at,
    "updated_at": MemoryRow.updated_at,
    "importance": MemoryRow.importance,
    "access_count": MemoryRow.access_count,
    "user_id": MemoryRow.user_id,
    "expires_at": MemoryRow.expires_at,
}

def to_record(row: MemoryRow) -> MemoryRecord:
    return MemoryRecord(
        memory_id=row.memory_id,
        user_id=row.user_id,
        session_id=row.session_id,
        content=row.content,
        summary=row.summary or "",
        importance=int(row.importance),
        memory_type=MemoryType(row.memory_type),
        entities=list(row.entities or []),
        meta=dict(row.meta or {}),
        status=MemoryStatus(row.status),
        created_at=row.created_at,
        updated_at=row.updated_at,
        expires_at=row.expires_at,
        expired_at=row.expired_at,
        source=list(row.source or []),
        access_count=int(row.access_count or 0),
        last_accessed_at=row.last_accessed_at,
        superseded_by=row.superseded_by,
        vector_written=bool(row.vector_written),
        content_hash=row.content_hash,
        merged_from=list(row.merged_from or []),
        context=row.context or "",
        event_start=row.event_start,
        event_end=row.event_end,
        constraint_kind=row.constraint_kind,
        sealed=row.sealed,
    )


def with_prefix(stmt: Any, user_prefix: str) -> Any:
    """``stmt`` narrowed to users whose id starts with ``user_prefix`` (all when it is empty)."""
    return stmt.where(MemoryRow.user_id.startswith(user_prefix, autoescape=True)) if user_prefix else stmt


def history_entry(row: HistoryRow) -> HistoryEntry:
    return HistoryEntry(id=int(row.id), memory_id=row.memory_id, user_id=row.user_id, action=row.action,
                        actor=row.actor, at=row.at, before=row.before, after=row.after, note=row.note or "")


def message_dict(row: MessageRow) -> dict[str, Any]:
    return {"message_id": row.message_id, "user_id": row.user_id, "session_id": row.session_id,
            "role": row.role, "content": row.content, "created_at": row.created_at,
            "meta": dict(row.meta) if isinstance(row.meta, dict) else None}
