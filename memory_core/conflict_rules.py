"""Newer wins, the rules: which stored memories a new one may replace, and what replacing changes.

"I live in Beijing" then "I moved to Shanghai"; "I don't eat spicy" then "I can eat a little
spicy". The older memory is kept but marked ``superseded`` with ``superseded_by`` pointing at
the newer one (history ``supersede``), and its vector leaves the vector store, so retrieval
returns only the current fact while staff can still see what changed and when.

Candidates for each new memory are the same user's active memories that are close in meaning
(a dense search for that user, cosine >= ``conflict_similarity``) or share an entity with it; at
most ``conflict_max_candidates`` of them are put to the LLM (``supersedes(newer, older)``), the
most similar first. "Newer" means later ``created_at``, so a backfill imported out of order still
lets the later statement win.

Functional core: nothing here reads or writes a store. ``NewerWins`` in
memory_core/write_pipeline.py makes every store call of the step (the searches, the rows, the
supersede transaction, the vector deletes, the re-index) and asks this module what to do with
what it read, so a chat message's write reaches its stores in five files (tests/test_chat_path.py).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Generator, Iterable, Mapping, Sequence

from memory_core.config import Settings
from memory_core.lifecycle import epoch, expires_at_for, in_retrieval
from memory_core.llm.base import LLMProvider, MemoryBrief
from memory_core.records import MemoryRecord
from memory_core.text.facts import says_change, says_correction, signature, without_rejected
from memory_core.text.keywords import keyword_tokens
from memory_core.text.restating import joined_text, told_again
from memory_core.text.retelling import retells
from memory_core.text.similarity import normalize_for_compare
from memory_core.types import MemoryStatus
from memory_core.vectors.base import VectorFilter, VectorHit

log = logging.getLogger(__name__)
ENTITY_SCAN_LIMIT = 2000  # most recent active memories of a user scanned for shared entities
KEY_MAX_CHARS = 500  # of the replaced statement, as the newer memory's key
Change = tuple[dict[str, Any], str]  # the fields an inherited property changes, and its history note


def brief(record: MemoryRecord) -> MemoryBrief:
    """What the LLM is shown of a memory (``supersedes``, ``propose_merges``)."""
    return MemoryBrief(memory_id=record.memory_id, content=record.content, created_at=record.created_at,
                       entities=list(record.entities), context=record.context)


def entity_key(values: Sequence[str]) -> set[str]:
    return {v.strip().lower() for v in values if v.strip()}


@lru_cache(maxsize=16384)
def _keys_of(entities: tuple[str, ...]) -> frozenset[str]:
    """``entity_key`` of a stored entity list (the same lists come back on every add)."""
    return frozenset(entity_key(entities))


@dataclass(frozen=True)
class EntityIndex:
    """A user's recent active memories by entity: entity key -> memory ids (an inverted index,
    so each new memory looks up only the memories it shares an entity with instead of testing
    all 2,000; at 1,000 memories per user the linear scan was a fifth of the conflict check)."""

    postings: dict[str, list[str]]


NO_ENTITIES = EntityIndex({})


def wanted_keys(news: Sequence[MemoryRecord]) -> dict[str, frozenset[str]]:
    """User -> the entity keys of their new memories. A user none of whose new memories has an
    entity shares none: their recent memories need not be read."""
    wanted: dict[str, set[str]] = {}
    for new in news:
        wanted.setdefault(new.user_id, set()).update(entity_key(new.entities))
    return {user_id: frozenset(keys) for user_id, keys in wanted.items() if keys}


def entity_index(rows: Iterable[tuple[str, Sequence[str]]], wanted: frozenset[str]) -> EntityIndex:
    """The index of a user's recent ``(memory id, entities)`` rows (ids and entities only: full
    rows are fetched for the few candidates that share an entity; loading 2,000 full rows per add
    was most of the write time at 1,000 memories per user). Only the ``wanted`` keys (those of
    the new memories) are indexed: no other is looked up."""
    postings: dict[str, list[str]] = {}
    for memory_id, entities in rows:
        keys = _keys_of(entities if isinstance(entities, tuple) else tuple(entities))
        if not keys.isdisjoint(wanted):
            for key in keys & wanted:
                postings.setdefault(key, []).append(memory_id)
    return EntityIndex(postings)


def dense_filter(records: Sequence[MemoryRecord], fade_from: int = 0) -> VectorFilter:
    """The search for one user's new memories, as of the writes, not of today: a back-dated
    import must see what was alive when each memory was written (``candidates`` drops what had
    expired by then), so what is superseded does not depend on how long ago the import ran or
    on forgetting. Faded memories (importance >= ``fade_from``) are searched too: a change of
    mind replaces a year-old opinion as it does a fresh one."""
    return VectorFilter(user_id=records[0].user_id, now=epoch(min(r.created_at for r in records)),
                        fade_from=fade_from)


def ranked_ids(settings: Settings, new: MemoryRecord, hits: Sequence[VectorHit], by_entity: EntityIndex) -> list[str]:
    """Ids of the user's active memories most likely to be about the same thing as ``new``:
    close in meaning (cosine >= ``conflict_similarity``) or sharing entities, best first."""
    scores: dict[str, float] = {}
    for hit in hits:
        if hit.memory_id != new.memory_id and hit.score >= settings.conflict_similarity:
            scores[hit.memory_id] = float(hit.score)
    shared: dict[str, int] = {}
    for key in entity_key(new.entities):
        for memory_id in by_entity.postings.get(key, ()):
            if memory_id != new.memory_id:
                shared[memory_id] = shared.get(memory_id, 0) + 1
    for memory_id, count in shared.items():
        scores[memory_id] = scores.get(memory_id, 0.0) + 0.05 * count + 0.5
    # Rank on ids and load only the best few rows later: a common entity ("mom", a home town) can
    # be shared by hundreds of a user's memories, and loading them all was most of a write's time.
    return sorted(scores, key=lambda mid: (-scores[mid], mid))[: settings.conflict_max_candidates + 2]


def candidates(new: MemoryRecord, ranked: Sequence[str], known: Mapping[str, MemoryRecord],
               limit: int, fade_from: int = 0) -> list[MemoryRecord]:
    """The rows of ``ranked`` that ``new`` may replace or be replaced by: the same user's,
    active and in retrieval (not expired; faded counts) when it was written (the check runs as
    of the write), the best ``limit``."""
    return [known[mid] for mid in ranked if mid in known
            and known[mid].user_id == new.user_id and known[mid].status is MemoryStatus.ACTIVE
            and in_retrieval(known[mid], new.created_at, fade_from)][:limit]


def decide(llm: LLMProvider, news: Sequence[MemoryRecord], ranked: Mapping[str, list[str]],
           known: Mapping[str, MemoryRecord],
           limit: int, fade_from: int = 0) -> Generator[tuple[MemoryRecord, MemoryRecord], bool | None, None]:
    """Put each new memory and its candidates to the LLM, newer first; yield ``(older, newer)``
    for each pair it says is replaced. The caller supersedes and sends back whether it did (a
    memory changed meanwhile is not superseded): a superseded memory is put to no other pair,
    and a new memory that lost is compared no further. A generator, so the caller's store calls
    run with it suspended (this module is on no path to a store). An LLM failure on one pair
    leaves that pair alone (logged)."""
    gone: set[str] = set()
    for new in news:
        if new.memory_id in gone:
            continue
        for other in candidates(new, ranked[new.memory_id], known, limit, fade_from):
            if other.memory_id in gone:
                continue
            newer, older = (new, other) if new.created_at >= other.created_at else (other, new)
            try:
                replaced = llm.supersedes(brief(newer), brief(older))
            except Exception as exc:
                log.warning("supersedes check failed for a pair; left alone: %s", exc)
                continue
            if replaced and (yield older, newer):
                gone.add(older.memory_id)
                if older is new or says_correction(newer.content):
                    break  # a correction corrects one statement: the closest it replaced


def superseded_fields(newer: MemoryRecord, now: datetime) -> dict[str, Any]:
    """What the older memory's row becomes. ``vector_written=False``: the caller removes its
    vector (one call for all the pairs of a write) or, if that fails, reconcile does."""
    return dict(status=MemoryStatus.SUPERSEDED.value, superseded_by=newer.memory_id, updated_at=now,
                vector_written=False)


def supersede_note(newer: MemoryRecord) -> str:
    return f"replaced by newer memory {newer.memory_id}: {newer.content[:200]}"


def inherited_importance(current: MemoryRecord, older: MemoryRecord, settings: Settings,
                         now: datetime) -> Change | None:
    """The memory that now holds a fact is kept at least as long as the one it replaced: "Every
    day I take vitamin D, 1000 IU" (rated 3) restating "I take vitamin D every day" (rated 4)
    must not let the fact expire sooner. ``current`` is the newer memory as it reads now. Its
    vector is re-written (importance and expiry live in the vector record) by the caller's
    re-index."""
    if current.importance >= older.importance:
        return None
    expires = expires_at_for(older.importance, current.created_at, settings.ttl_days_by_importance)
    return (dict(importance=older.importance, expires_at=expires, vector_written=False, updated_at=now),
            f"kept as important as the memory it replaced ({older.memory_id})")


def inherited_detail(current: MemoryRecord, older: MemoryRecord, settings: Settings, now: datetime) -> Change | None:
    """A fact told again keeps what its older telling said: "Chloe's still in Edinburgh, she loves
    it up there" replacing "my sister Chloe lives in Edinburgh, in Leith" becomes "my sister Chloe
    lives in Edinburgh, in Leith. Chloe's still in Edinburgh, she loves it up there", so the one
    memory that now holds the fact has lost nothing (memory_core/text/restating.py says when it
    is told again, not changed). Not for sealed memories: each one's phone numbers and e-mail
    addresses are sealed under its own tags. The caller sets the content hash and re-indexes."""
    if current.status is not MemoryStatus.ACTIVE or current.sealed or older.sealed:
        return None
    if not (told_again(current.content, older.content) or retells(current.content, older.content)):
        return None
    text = joined_text(older.content, current.content)
    if text is None:
        return None
    entities = list(dict.fromkeys([*older.entities, *current.entities]))
    source = list(dict.fromkeys([*older.source, *current.source]))  # its words come from both
    return (dict(content=text, entities=entities, source=source,
                 vector_written=False, updated_at=now),
            f"kept what the memory it replaced said ({older.memory_id})")


def inherited_key(current: MemoryRecord, older: MemoryRecord, settings: Settings, now: datetime) -> Change | None:
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
    keyed so, each outranked the current answer). ``current`` is the newer memory as it reads
    now (after ``inherited_importance``). The caller re-indexes."""
    if current.context or current.status is not MemoryStatus.ACTIVE:
        return None
    if normalize_for_compare(older.content) in normalize_for_compare(current.content):
        return None  # its text already holds the older one (``inherited_detail``)
    # (a value the correction names only to reject it is no shared word: "搞错了 是CA1873 不是CA1837")
    # nor is a code's letter prefix both codes share ("ca" of CA1873 and CA1837)
    shared = set(keyword_tokens(without_rejected(current.content))) & set(keyword_tokens(older.content))
    codes = signature(current.content).codes
    shared = {w for w in shared if not any(w in code and w != code for code in codes)}
    if not (says_correction(current.content) and not shared) and not restated(current.content, older.content, shared):
        return None
    return (dict(context=older.content[:KEY_MAX_CHARS], vector_written=False, updated_at=now),
            f"keyed with the statement it replaced ({older.memory_id})")


def restated(newer: str, older: str, shared: set[str]) -> bool:
    """``newer`` says ``older``'s fact again in other words ("Heights terrify me, I can't even
    stand on a ladder" for "I'm scared of heights"): a keyword shared, no change or correction
    marked, and every value of the older one (number, code, grade) still there. Keyed with the
    older text, the one memory that now holds the fact is found by either wording (measured: the
    newer one alone fell below the threshold for "Should I book the glass-floor skywalk?"). A
    change ("I moved to Porto") is not keyed with the value it replaced."""
    return (bool(shared) and not says_change(newer) and not says_correction(newer)
            and signature(older).values() <= signature(newer).values())


# In this order: each reads the row the last left.
INHERITED = (inherited_importance, inherited_detail, inherited_key)


def reusable_vectors(raised: Sequence[MemoryRecord], vectors: Mapping[str, Any],
                     written: Mapping[str, MemoryRecord]) -> dict[str, Any]:
    """The vectors of ``raised`` (newer memories whose rows changed) that still match their
    text: a vector computed before a key or an older telling was inherited (``inherited_key``,
    ``inherited_detail``; ``written`` holds the memories as the write stored them) is not reused."""
    return {r.memory_id: vectors[r.memory_id] for r in raised if r.memory_id in vectors
            and r.context == written.get(r.memory_id, r).context
            and r.content == written.get(r.memory_id, r).content}
