"""Small rules about a memory's life: its content hash, its expiry, what the indexes see."""
from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Sequence

from memory_core.records import MemoryRecord
from memory_core.types import MemoryStatus


def content_hash(model_name: str, text: str) -> str:
    """Hash of a memory's text as stored, and of the model: reconcile re-embeds when either
    changes, and an exact repeat is found by it. The text keeps its PII tags (what is embedded
    drops them, ``indexing.embed_text``): two phone numbers are two texts."""
    return hashlib.sha256(f"{model_name}\n{text}".encode("utf-8")).hexdigest()


def expires_at_for(importance: int, at: datetime, ttl_days_by_importance: Sequence[int]) -> datetime | None:
    """Design: importance 1 lives 30 days, 2 lives 180, 3 a year, 4-5 never (configurable). What
    happens on that date depends on the importance (``fades``): below ``fade_from_importance`` the
    memory expires, from it on it fades."""
    days = ttl_days_by_importance[max(1, min(5, importance)) - 1]
    return at + timedelta(days=days) if days > 0 else None


def fades(importance: int, fade_from: int) -> bool:
    """Whether a memory of ``importance`` fades when its date passes (``Settings.fade_from_importance``:
    it stays searchable, when relevant only) rather than expiring."""
    return 0 < fade_from <= importance


def faded(record: MemoryRecord, at: datetime, fade_from: int) -> bool:
    """Active, past its date at ``at`` and of an importance that fades: searchable, when relevant only."""
    return (record.status is MemoryStatus.ACTIVE and record.expires_at is not None and record.expires_at <= at
            and fades(record.importance, fade_from))


def in_retrieval(record: MemoryRecord, at: datetime, fade_from: int) -> bool:
    """Whether the date of ``record`` still lets retrieval see it at ``at`` (not yet due, or it fades)."""
    return record.expires_at is None or record.expires_at > at or fades(record.importance, fade_from)


def epoch(value: datetime | None) -> int:
    return int(value.timestamp()) if value is not None else 0
