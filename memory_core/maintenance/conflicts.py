"""Conflicts: when a new memory contradicts an older one about the same thing, the newer wins.

"I live in Beijing" then "I moved to Shanghai"; "I don't eat spicy" then "I can eat a little
spicy". The older memory is kept but marked ``superseded`` with ``superseded_by`` pointing at
the newer one (history ``supersede``), and its vector leaves Milvus, so retrieval returns only
the current fact while staff can still see what changed and when.

Candidates for each new memory are the same user's active memories that are close in meaning
(dense search in Milvus with a ``VectorFilter`` for that user, cosine >= ``conflict_similarity``)
or share an entity with it; at most ``conflict_max_candidates`` of them are put to the LLM
(``supersedes(newer, older)``), the most similar first. "Newer" means later ``created_at``, so a
backfill imported out of order still lets the later statement win.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np

from memory_core.indexing import embed_text
from memory_core.lifecycle import epoch, expires_at_for
from memory_core.lifecycle_ops import reindex
from memory_core.maintenance.merge import brief
from memory_core.parts import EngineParts
from memory_core.records import MemoryRecord
from memory_core.records import snapshot
from memory_core.text.facts import says_correction
from memory_core.text.keywords import keyword_tokens
from memory_core.types import MemoryStatus
from memory_core.validation import check_memory_id
from memory_core.vectors.base import VectorFilter, VectorHit

log = logging.getLogger(__name__)
ENTITY_SCAN_LIMIT = 2000  # most recent active memories of a user scanned for shared entities


def _entity_key(values: Sequence[str]) -> set[str]:
    return {v.strip().lower() for v in values if v.strip()}


@lru_cache(maxsize=16384)
def _keys_of(entities: tuple[str, ...]) -> frozenset[str]:
    """``_entity_key`` of a stored entity list (the same lists come back on every add)."""
    return frozenset(_entity_key(entities))


@dataclass(frozen=True)
class _EntityIndex:
    """A user's recent active memories by entity: entity key -> memory ids (an inverted index,
    so each new memory looks up only the memories it shares an entity with instead of testing
    all 2,000; at 1,000 memories per user the linear scan was a fifth of the conflict check)."""

    postings: dict[str, list[str]]


_NO_ENTITIES = _EntityIndex({})


def _recent_active(parts: EngineParts, user_id: str, wanted: frozenset[str]) -> _EntityIndex:
    """Ids and entities only: full rows are fetched for the few candidates that share an entity
    (loading 2,000 full rows per add was most of the write time at 1,000 memories per user).
    Only the ``wanted`` keys (those of the new memories) are indexed: no other is looked up."""
    postings: dict[str, list[str]] = {}
    for memory_id, entities in parts.repo.recent_active_entities(user_id, ENTITY_SCAN_LIMIT):
        keys = _keys_of(entities if isinstance(entities, tuple) else tuple(entities))
        if not keys.isdisjoint(wanted):
            for key in keys & wanted:
                postings.setdefault(key, []).append(memory_id)
    return _EntityIndex(postings)


def _ranked_ids(parts: EngineParts, new: MemoryRecord, hits: Sequence[VectorHit],
                by_entity: _EntityIndex) -> list[str]:
    """Ids of the user's active memories most likely to be about the same thing as ``new``:
    close in meaning (cosine >= ``conflict_similarity``) or sharing entities, best first."""
    s = parts.settings
    scores: dict[str, float] = {}
    for hit in hits:
        if hit.memory_id != new.memory_id and hit.score >= s.conflict_similarity:
            scores[hit.memory_id] = float(hit.score)
    shared: dict[str, int] = {}
    for key in _entity_key(new.entities):
        for memory_id in by_entity.postings.get(key, ()):
            if memory_id != new.memory_id:
                shared[memory_id] = shared.get(memory_id, 0) + 1
    for memory_id, count in shared.items():
        scores[memory_id] = scores.get(memory_id, 0.0) + 0.05 * count + 0.5
    # Rank on ids and load only the best few rows later: a common entity ("mom", a home town) can
    # be shared by hundreds of a user's memories, and loading them all was most of a write's time.
    return sorted(scores, key=lambda mid: (-scores[mid], mid))[: s.conflict_max_candidates + 2]


def _dense_hits(parts: EngineParts, news: Sequence[MemoryRecord],
                vectors: Mapping[str, np.ndarray]) -> dict[str, list[VectorHit]]:
    """Each new memory's nearest active memories of its user: one batched search per user."""
    s = parts.settings
    out: dict[str, list[VectorHit]] = {}
    by_user: dict[str, list[MemoryRecord]] = {}
    for record in news:
        by_user.setdefault(record.user_id, []).append(record)
    for user_id, records in by_user.items():
        # As of the writes, not of today: a back-dated import must see what was alive when each
        # memory was written (``_check_pairs`` drops what had expired by then), so what is
        # superseded does not depend on how long ago the import ran or on forgetting.
        flt = VectorFilter(user_id=user_id, now=epoch(min(r.created_at for r in records)))
        try:
            found = parts.vectors.search_dense_many([vectors[r.memory_id] for r in records], flt,
                                                     2 * s.conflict_max_candidates + 1)
        except Exception as exc:  # the store being down must not block writing; entities still work
            log.warning("conflict search skipped the vector store: %s", exc)
            found = [[] for _ in records]
        out.update({r.memory_id: hits for r, hits in zip(records, found)})
    return out


def supersede(parts: EngineParts, older: MemoryRecord, newer: MemoryRecord, actor: str) -> bool:
    """Mark ``older`` superseded by ``newer`` (only if it is still active); True when it was.
    The row is marked ``vector_written=False``; the caller removes the vector (``_drop_vectors``,
    one call for all the pairs of a write) or, if that fails, reconcile does."""
    now = parts.clock.now()
    with parts.repo.session() as session:
        if not parts.repo.update_if_status(session, older.memory_id, MemoryStatus.ACTIVE,
                                            status=MemoryStatus.SUPERSEDED.value, superseded_by=newer.memory_id,
                                            updated_at=now, vector_written=False):
            return False
        after = parts.repo.get(older.memory_id, session)
        assert after is not None
        parts.repo.add_history(session, memory_id=older.memory_id, user_id=older.user_id, action="supersede",
                                actor=actor, at=now, before=snapshot(older), after=snapshot(after),
                                note=f"replaced by newer memory {newer.memory_id}: {newer.content[:200]}")
        _inherit_importance(parts, session, older, newer, actor, now)
        _inherit_key(parts, session, older, newer, actor, now)
    return True


KEY_MAX_CHARS = 500  # of the replaced statement, as the newer memory's key


def _inherit_key(parts: EngineParts, session: object, older: MemoryRecord, newer: MemoryRecord,
                 actor: str, now: datetime) -> None:
    """A correction that does not say what it corrects is keyed with the statement it replaced.

    "说错了，是1302" replacing "我住的酒店房间号是1203", or "Sorry, I meant A-" replacing "My
    blood type is A+", shares no word with the question that should find it ("我房间号是多少",
    "What's my blood type?"): on its own it was never recalled, and the fact was lost the moment
    it was corrected. The replaced text becomes the newer memory's context (the key a reply gets
    from the question it answers: embedded and indexed with it, never shown as its content).
    Only when the newer one says it corrects (``says_correction``: "sorry, I meant", 说错了,
    其实是), has no key of its own and shares no keyword with the older one: a restatement ("My
    dentist is Dr. Obi now") is found by its own words, and a memory that ends or follows a fact
    ("我们分手了", "我们结婚五年了") must not take over the questions that fact answered (measured:
    keyed so, each outranked the current answer). The caller re-indexes."""
    current = parts.repo.get(newer.memory_id, session)
    if current is None or current.context or current.status is not MemoryStatus.ACTIVE:
        return
    if not says_correction(current.content) or set(keyword_tokens(current.content)) & set(keyword_tokens(older.content)):
        return
    parts.repo.update_fields(session, current.memory_id, context=older.content[:KEY_MAX_CHARS],
                              vector_written=False, updated_at=now)
    after = parts.repo.get(current.memory_id, session)
    parts.repo.add_history(session, memory_id=current.memory_id, user_id=current.user_id, action="update",
                            actor=actor, at=now, before=snapshot(current), after=snapshot(after) if after else None,
                            note=f"keyed with the statement it replaced ({older.memory_id})")


def _inherit_importance(parts: EngineParts, session: object, older: MemoryRecord, newer: MemoryRecord,
                        actor: str, now: datetime) -> None:
    """The memory that now holds a fact is kept at least as long as the one it replaced: "Every
    day I take vitamin D, 1000 IU" (rated 3) restating "I take vitamin D every day" (rated 4)
    must not let the fact expire sooner. Its vector is re-written (importance and expiry live
    in the vector record) by the caller's re-index."""
    current = parts.repo.get(newer.memory_id, session)
    if current is None or current.importance >= older.importance:
        return
    expires = expires_at_for(older.importance, current.created_at, parts.settings.ttl_days_by_importance)
    parts.repo.update_fields(session, current.memory_id, importance=older.importance, expires_at=expires,
                              vector_written=False, updated_at=now)
    after = parts.repo.get(current.memory_id, session)
    parts.repo.add_history(session, memory_id=current.memory_id, user_id=current.user_id, action="update",
                            actor=actor, at=now, before=snapshot(current), after=snapshot(after) if after else None,
                            note=f"kept as important as the memory it replaced ({older.memory_id})")


def _drop_vectors(parts: EngineParts, superseded: Sequence[MemoryRecord]) -> None:
    """Remove superseded memories from the vector store in one call (one delete per pair was a
    third of the conflict step), then drop their users' cached results."""
    by_user: dict[str, list[str]] = {}
    for record in superseded:
        by_user.setdefault(record.user_id, []).append(record.memory_id)
    for user_id, memory_ids in by_user.items():
        try:
            parts.vectors.delete(memory_ids, user_id=user_id)
        except Exception as exc:
            log.warning("vector delete failed; reconcile will remove the orphans: %s", exc)
        parts.cache.invalidate_user(user_id)


def resolve_conflicts(parts: EngineParts, memory_ids: Sequence[str], actor: str, *,
                      vectors: Mapping[str, np.ndarray] | None = None,
                      records: Mapping[str, MemoryRecord] | None = None) -> list[tuple[str, str]]:
    """For each of ``memory_ids`` (just written), supersede the older memories it contradicts.

    Returns ``(old_id, new_id)`` pairs. ``vectors`` may pass the passage embeddings the write
    pipeline already computed, to save re-embedding; ``records`` the memories as the write
    pipeline just stored them, to save reading them back (``supersede`` re-checks the status in
    its UPDATE, so a stale copy cannot supersede a memory that changed meanwhile). Never raises
    for an LLM failure on one pair (that pair is left alone and logged).
    """
    ids = list(dict.fromkeys(check_memory_id(mid) for mid in memory_ids))
    given_records = dict(records or {})
    missing = [mid for mid in ids if mid not in given_records]
    loaded = {**{mid: given_records[mid] for mid in ids if mid in given_records},
              **(parts.repo.get_many(missing) if missing else {})}
    # A memory the provider says can contradict nothing (no slot, no preference, for the rules)
    # is skipped before any candidate is searched or loaded: most of a write's conflict time.
    news = sorted((r for r in loaded.values() if r.status is MemoryStatus.ACTIVE
                   and parts.llm.may_contradict(r.content, r.context)),
                  key=lambda r: (r.created_at, r.memory_id))
    if not news:
        return []
    given = dict(vectors or {})
    todo = [r for r in news if r.memory_id not in given]
    if todo:
        for record, vector in zip(todo, parts.embedder.embed_passages([embed_text(r.content, r.context) for r in todo])):
            given[record.memory_id] = vector
    hits = _dense_hits(parts, news, given)
    wanted: dict[str, set[str]] = {}  # user -> the entity keys of their new memories
    for new in news:
        wanted.setdefault(new.user_id, set()).update(_entity_key(new.entities))
    # A user none of whose new memories has an entity shares none: their index is not read.
    by_user = {user_id: _recent_active(parts, user_id, frozenset(keys)) for user_id, keys in wanted.items() if keys}
    ranked = {new.memory_id: _ranked_ids(parts, new, hits[new.memory_id], by_user.get(new.user_id, _NO_ENTITIES))
              for new in news}
    known = parts.repo.get_many(sorted({mid for ids in ranked.values() for mid in ids}))
    superseded: list[MemoryRecord] = []
    try:
        pairs = _check_pairs(parts, news, ranked, known, actor, superseded)
    finally:  # also if a step raised: what was superseded must leave the index
        _drop_vectors(parts, superseded)
    raised = [r for r in parts.repo.get_many(sorted({new for _old, new in pairs})).values()
              if not r.vector_written and r.status is MemoryStatus.ACTIVE]
    if raised:  # a vector computed before a key was inherited (``_inherit_key``) is not reused
        reindex(parts, raised, {r.memory_id: given[r.memory_id] for r in raised if r.memory_id in given
                                and r.context == loaded.get(r.memory_id, r).context})
    return pairs


def _alive_at(record: MemoryRecord, at: datetime) -> bool:
    """Not yet expired when ``at`` was written (the check runs as of the write)."""
    return record.expires_at is None or record.expires_at > at


def _check_pairs(parts: EngineParts, news: Sequence[MemoryRecord], ranked: Mapping[str, list[str]],
                 known: Mapping[str, MemoryRecord], actor: str, superseded: list[MemoryRecord]) -> list[tuple[str, str]]:
    """Put each new memory and its candidates to the LLM, newer first; supersede what it says
    (appending each superseded memory to ``superseded``). Returns ``(old_id, new_id)`` pairs."""
    limit = parts.settings.conflict_max_candidates
    pairs: list[tuple[str, str]] = []
    gone: set[str] = set()
    for new in news:
        if new.memory_id in gone:
            continue
        candidates = [known[mid] for mid in ranked[new.memory_id] if mid in known
                      and known[mid].user_id == new.user_id and known[mid].status is MemoryStatus.ACTIVE
                      and _alive_at(known[mid], new.created_at)][:limit]
        for other in candidates:
            if other.memory_id in gone:
                continue
            newer, older = (new, other) if new.created_at >= other.created_at else (other, new)
            try:
                replaced = parts.llm.supersedes(brief(newer), brief(older))
            except Exception as exc:
                log.warning("supersedes check failed for a pair; left alone: %s", exc)
                continue
            if replaced and supersede(parts, older, newer, actor):
                pairs.append((older.memory_id, newer.memory_id))
                gone.add(older.memory_id)
                superseded.append(older)
                if older is new:
                    break
    return pairs
