"""Small rules about a memory's life: its content hash, its expiry, what the indexes see."""
from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Sequence


def content_hash(model_name: str, text: str) -> str:
    """Hash of a memory's text as stored, and of the model: reconcile re-embeds when either
    changes, and an exact repeat is found by it. The text keeps its PII tags (what is embedded
    drops them, ``indexing.embed_text``): two phone numbers are two texts."""
    return hashlib.sha256(f"{model_name}\n{text}".encode("utf-8")).hexdigest()


def expires_at_for(importance: int, at: datetime, ttl_days_by_importance: Sequence[int]) -> datetime | None:
    """Design: importance 1 lives 30 days, 2 lives 180, 3 a year, 4-5 never (configurable)."""
    days = ttl_days_by_importance[max(1, min(5, importance)) - 1]
    return at + timedelta(days=days) if days > 0 else None


def epoch(value: datetime | None) -> int:
    return int(value.timestamp()) if value is not None else 0
