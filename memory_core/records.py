"""Value objects the engine's public API returns and accepts (besides ``types``).

These are plain dataclasses (not ORM rows) so callers never hold a live database session.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory_core.types import MemoryStatus, MemoryType, SearchResult, TimeRange


@dataclass(frozen=True)
class MemoryRecord:
    """A memory as stored in SQL, the system of record."""

    memory_id: str
    user_id: str
    session_id: str | None
    content: str
    summary: str
    importance: int
    memory_type: MemoryType
    entities: list[str]
    meta: dict[str, Any]
    status: MemoryStatus
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None  # when it is due to expire (None = never)
    expired_at: datetime | None  # when it actually expired
    source: list[str]  # provenance: ids of the messages / turns it came from
    access_count: int
    last_accessed_at: datetime | None
    superseded_by: str | None
    vector_written: bool
    content_hash: str
    merged_from: list[str] = field(default_factory=list)
    context: str = ""  # the conversation turn it answered; indexed with it, never shown as the memory
    event_start: datetime | None = None  # when what it tells happened (its own time words), if they say
    event_end: datetime | None = None
    constraint_kind: str | None = None  # allergy, medical, diet, dislike, instruction, trait (memory_core.text.constraints)
    # The phone numbers and e-mail addresses its placeholders stand for, encrypted
    # (memory_core/pii_vault.py): opened only for the owner's own reads.
    sealed: str | None = None


@dataclass(frozen=True)
class AddItem:
    """One input of ``add_many``; same meaning as the arguments of ``add``."""

    user_id: str
    content: str
    session_id: str | None = None
    metadata: dict[str, Any] | None = None
    source: str | list[str] | None = None
    at: datetime | None = None
    # The turn this text answers (e.g. the assistant's question before the user's "yes, two cats"):
    # indexed with the memory so a query phrased like the question finds the answer.
    context: str | None = None


@dataclass(frozen=True)
class AddResult:
    """What one ``add`` did. ``memory_ids`` lists every memory now holding the text, in order."""

    memory_ids: list[str]
    created: list[str]
    deduplicated: list[str]  # existing memories that absorbed a near-duplicate instead of a copy
    redactions: list[str]  # kinds of PII removed, e.g. ["phone", "cn_id"]
    pending_index: list[str] = field(default_factory=list)  # stored in SQL, vector not yet written
    # Older memories this text replaced (newer wins: a new address, a corrected code), kept as
    # superseded and linked to the new memory.
    superseded: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SearchFilters:
    """Explicit filters a caller may add to a search (ANDed with the query's own time words)."""

    time_range: TimeRange | None = None
    memory_types: tuple[MemoryType, ...] = ()
    min_importance: int | None = None
    entities: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchResponse:
    results: list[SearchResult]
    context_block: str  # compressed, dated lines ready for a prompt
    rewritten_query: str
    time_range: TimeRange | None
    timings_ms: dict[str, float]  # rewrite, embed, search, rerank, fetch, total
    cache_hit: bool
    reranker: str | None  # model name, or None when the fused hybrid ranking stands
    degraded: bool = False  # True when the vector store was down and SQL keyword search answered
    notices: list[str] = field(default_factory=list)
    # The user's constraints (allergies, diets, dislikes, "never ...") that bear on the query,
    # whatever their rank, and the same as dated lines for a prompt.
    constraints: list[SearchResult] = field(default_factory=list)
    constraint_block: str = ""
    # Results whose absolute relevance (``ScoreParts.absolute``) fell below this were left out.
    min_relevance: float = 0.0
    # ... and memories past their date (faded: ``memory_core.lifecycle.faded``) below this one,
    # which is never lower than ``min_relevance``: a caller's threshold of 0 does not bring back
    # every year-old memory.
    faded_min_relevance: float = 0.0


@dataclass(frozen=True)
class HistoryEntry:
    id: int
    memory_id: str
    user_id: str
    action: str  # create, update, dedup, expire, restore, merge, supersede, archive, delete
    actor: str
    at: datetime
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    note: str = ""


@dataclass(frozen=True)
class MemoryQuery:
    """Staff browsing: every field optional; ``text`` is a case-insensitive substring."""

    user_id: str | None = None
    # Only users whose id starts with this (e.g. "demo:", so demo staff browses demo users only).
    user_id_prefix: str | None = None
    memory_types: tuple[MemoryType, ...] = ()
    statuses: tuple[MemoryStatus, ...] = ()
    min_importance: int | None = None
    max_importance: int | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    text: str | None = None
    sort_by: str = "created_at"  # created_at, updated_at, importance, access_count, user_id
    descending: bool = True
    offset: int = 0
    limit: int = 50


@dataclass(frozen=True)
class Page:
    items: list[MemoryRecord]
    total: int


@dataclass(frozen=True)
class ReconcileReport:
    users: int
    written: int  # missing vectors written (pending rows included)
    removed: int  # orphan vectors removed
    reembedded: int  # stale vectors (hash mismatch) re-embedded
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class JobRun:
    id: int
    job: str
    started_at: datetime
    finished_at: datetime | None
    outcome: str  # running, ok, error, skipped
    counts: dict[str, Any]
    detail: str = ""


# Fields that an audit snapshot records (everything a staff member can see or change).
SNAPSHOT_FIELDS = (
    "content", "summary", "importance", "memory_type", "entities", "meta", "status",
    "expires_at", "expired_at", "superseded_by", "merged_from", "source", "session_id", "context", "constraint_kind",
)


def json_value(value: Any) -> Any:
    """One field of a record as JSON holds it: a datetime as ISO text, an enum as its value."""
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "value"):
        return value.value
    return value


def snapshot(record: MemoryRecord) -> dict[str, Any]:
    """A JSON-safe picture of a memory for the history table."""
    # Only the snapshot's fields, each copied (``asdict`` deep-copied the whole record and was
    # a tenth of a batch write's SQL time).
    return {key: json_value(copy.deepcopy(getattr(record, key))) for key in SNAPSHOT_FIELDS}
