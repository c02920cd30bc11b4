"""A text on its way to storage, cut into chunks, and the stages ``add_many`` writes them in.

Apart from the write pipeline so the steps that read a chunk (near-duplicate detection,
storing, indexing) can live in modules of their own without importing the pipeline. Pure: what
an item becomes (validated, redacted), the row a chunk is stored as, the fields a repeat changes
and the results a write returns are computed here; memory_core/write_pipeline.py makes every
store call of a write.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Protocol, Sequence, TypeVar

import numpy as np

from memory_core.clock import Clock, as_utc
from memory_core.config import Settings
from memory_core.errors import ValidationError
from memory_core.indexing import context_key
from memory_core.lifecycle import expires_at_for
from memory_core.records import AddItem, AddResult, MemoryRecord
from memory_core.text.chunking import chunk_text
from memory_core.text.event_time import event_span
from memory_core.pii_vault import PiiVault
from memory_core.text.pii import redact
from memory_core.types import Analysis, MemoryStatus
from memory_core.validation import check_user_id, clean_text

class Prepared(NamedTuple):
    """An item validated and redacted, before it is cut into chunks."""

    item: AddItem
    user_id: str
    text: str  # PII replaced by tagged placeholders (memory_core/pii_vault.py)
    kinds: list[str]  # the kinds of PII found
    context: str  # the turn it answered, redacted
    values: dict[str, str]  # tag -> the value it stands for (kinds kept only), sealed per chunk



class _Owned(Protocol):
    @property
    def user_id(self) -> str: ...


Owned = TypeVar("Owned", bound=_Owned)


def by_user(items: Iterable[Owned]) -> dict[str, list[Owned]]:
    """The items (chunks, memories) of each user, in order: a write's reads, searches and
    deletes are batched per user."""
    out: dict[str, list[Owned]] = {}
    for item in items:
        out.setdefault(item.user_id, []).append(item)
    return out

CONSTRAINT_IMPORTANCE = 4  # the first importance that never expires (Settings.ttl_days_by_importance)


def lasting_constraint(analysis: Analysis) -> Analysis:
    """A constraint (an allergy, a diet, a condition, a dislike, a "never ...") is kept until the
    user lifts it, whatever importance the provider gave it: "I really hate mushrooms, the
    texture makes me gag" was rated 2 by the rules ("I hate mushrooms" 4) and expired after 180
    days, and the pizza suggested half a year later carried mushrooms."""
    if analysis.constraint_kind and analysis.importance < CONSTRAINT_IMPORTANCE:
        return replace(analysis, importance=CONSTRAINT_IMPORTANCE)
    return analysis


@dataclass
class Chunk:
    """One chunk on its way to storage."""

    item_index: int
    user_id: str
    text: str
    at: datetime
    session_id: str | None
    meta: dict[str, Any]
    source: list[str]
    context: str = ""  # the previous turn, redacted and trimmed: read by the analysis
    sealed: str | None = None  # the values of its own PII tags, sealed (memory_core/pii_vault.py)
    analysis: Analysis | None = None
    vector: np.ndarray | None = None
    hash: str = ""
    duplicate_of: str | None = None  # an existing (or earlier in this batch) memory id
    memory_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def key_context(self) -> str:
        """The turn it answered, stored with it and part of its retrieval key (``context_key``)."""
        return context_key(self.context)


def sources(source: str | Sequence[str] | None) -> list[str]:
    """An item's provenance as a list of strings (one source, several, or none)."""
    if source is None:
        return []
    if isinstance(source, str):
        return [source]
    return [str(s) for s in source]


def cut_into_stages(chunks: list[Chunk], size: int) -> list[list[Chunk]]:
    """``chunks`` cut into runs of about ``size``, never splitting one item's chunks (they must
    not fold into each other as duplicates, and an item lands whole or not at all)."""
    stages: list[list[Chunk]] = []
    for chunk in chunks:
        if stages and (len(stages[-1]) < size or stages[-1][-1].item_index == chunk.item_index):
            stages[-1].append(chunk)
        else:
            stages.append([chunk])
    return stages


def turn_context(settings: Settings, raw: str | None) -> str:
    """The turn a text answered, made safe to store: cleaned, PII-redacted, and cut to its
    last ``context_key_chars`` characters (a question sits at the end of a reply; a long
    context would drown the memory's own meaning in its key). Empty or absent: no context."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ""
    text = redact(clean_text(raw, settings.max_input_chars, what="context")).text
    limit = settings.context_key_chars
    return text if len(text) <= limit else "…" + text[-limit:].lstrip()


def prepare_item(settings: Settings, vault: PiiVault, index: int, item: AddItem, count: int) -> Prepared:
    """Validate and redact one item; the values of the PII kinds kept are sealed with it."""
    try:
        user_id = check_user_id(item.user_id)
        text = clean_text(item.content, settings.max_input_chars)
        context = turn_context(settings, item.context)
    except ValidationError as exc:
        raise ValidationError(f"item {index}: {exc}" if count > 1 else str(exc)) from exc
    if item.metadata is not None and not isinstance(item.metadata, dict):
        raise ValidationError(f"item {index}: metadata must be a dict")
    tagged, values, kinds = vault.redact(text)
    return Prepared(item, user_id, tagged, sorted(set(kinds)), context, values)


def check_stage_chunks(stage_chunks: int | None) -> None:
    """``add_many``'s stage size: None (the settings' default) or a positive integer."""
    if stage_chunks is not None and (isinstance(stage_chunks, bool) or not isinstance(stage_chunks, int)
                                     or stage_chunks < 1):
        raise ValidationError(f"stage_chunks must be a positive integer, got {stage_chunks!r}")


def chunk_items(prepared: Sequence[Prepared], limit: int, overlap: int, count_tokens: Callable[[str], int],
                clock: Clock, seal: Callable[[Mapping[str, str], str], str | None]) -> list[Chunk]:
    """Every prepared item cut into chunks of at most ``limit`` tokens, in order; an item
    without a time is written now (``clock``). Each chunk seals the values of its own tags only
    (``seal``: ``PiiVault.seal``)."""
    chunks: list[Chunk] = []
    for index, (item, user_id, text, _kinds, context, values) in enumerate(prepared):
        at = as_utc(item.at) if item.at else clock.now()
        for piece in chunk_text(text, limit, overlap, count_tokens):
            chunks.append(Chunk(index, user_id, piece, at, item.session_id, dict(item.metadata or {}),
                                sources(item.source), context, sealed=seal(values, piece)))
    return chunks


def row_values(chunk: Chunk, ttl: Sequence[int]) -> dict[str, Any]:
    """The SQL row a new chunk is stored as: active, its vector not yet written."""
    analysis = chunk.analysis
    assert analysis is not None
    event = event_span(chunk.text, chunk.at)
    return dict(
        memory_id=chunk.memory_id, user_id=chunk.user_id, session_id=chunk.session_id,
        content=chunk.text, summary=analysis.summary, importance=analysis.importance,
        memory_type=analysis.memory_type.value, entities=analysis.entities, meta=chunk.meta,
        status=MemoryStatus.ACTIVE.value, created_at=chunk.at, updated_at=chunk.at,
        expires_at=expires_at_for(analysis.importance, chunk.at, ttl), expired_at=None,
        source=chunk.source, access_count=0, last_accessed_at=None, superseded_by=None,
        merged_from=[], vector_written=False, content_hash=chunk.hash, context=chunk.key_context or None,
        event_start=event.start if event else None, event_end=event.end if event else None,
        constraint_kind=analysis.constraint_kind, sealed=chunk.sealed,
    )


def absorb_fields(before: MemoryRecord, copies: Sequence[Chunk], ttl: Sequence[int]) -> dict[str, Any]:
    """What repeats change in the memory they repeat: seen again (count, last seen, sources),
    maybe more important (then a new date, and its vector record is stale); past its date, a new
    date from the repeat."""
    latest = max(c.at for c in copies)
    importance = max([before.importance] + [c.analysis.importance for c in copies if c.analysis])
    fields: dict[str, Any] = dict(
        access_count=before.access_count + len(copies),
        updated_at=max(before.updated_at, latest),
        last_accessed_at=latest,
        source=list(dict.fromkeys(before.source + [s for c in copies for s in c.source])),
        importance=importance,
    )
    if importance != before.importance:
        due = expires_at_for(importance, before.created_at, ttl)
        if due is not None and due <= latest:
            due = expires_at_for(importance, latest, ttl)  # already past: counted from the repeat
        fields.update(expires_at=due, vector_written=False)  # importance and expiry live in the vector record too
    elif before.expires_at is not None and before.expires_at <= latest:
        # Said again after its date (a faded memory: the near-duplicate check searches them):
        # current again, for as long a life as it had (a date a person set included), from the repeat.
        fields.update(expires_at=latest + (before.expires_at - before.created_at), vector_written=False)
    return fields


def results(prepared: Sequence[Prepared], chunks: Sequence[Chunk], pending: set[str],
            replaced: Mapping[str, list[str]]) -> list[AddResult]:
    """One ``AddResult`` per item: its memories (new or the ones its repeats refreshed), the
    redactions, what is left pending for reconcile and what newer-wins superseded."""
    mine_by_item: dict[int, list[Chunk]] = {}
    for chunk in chunks:
        mine_by_item.setdefault(chunk.item_index, []).append(chunk)
    out: list[AddResult] = []
    for index, (_item, _user, _text, kinds, _context, _values) in enumerate(prepared):
        mine = mine_by_item.get(index, [])
        out.append(AddResult(
            memory_ids=[c.duplicate_of or c.memory_id for c in mine],
            created=[c.memory_id for c in mine if c.duplicate_of is None],
            deduplicated=[c.duplicate_of for c in mine if c.duplicate_of is not None],
            redactions=kinds,
            pending_index=[c.memory_id for c in mine if c.memory_id in pending],
            superseded=[old for c in mine if c.duplicate_of is None for old in replaced.get(c.memory_id, [])],
        ))
    return out
