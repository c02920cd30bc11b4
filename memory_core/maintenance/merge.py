"""Merging redundant memories of one user into one, reversibly.

Finding groups: every active memory of the user is re-embedded (a few hundred passages, well
under a second per hundred) and pairs are linked when their cosine similarity reaches
``merge_similarity``, or ``merge_entity_similarity`` when they also share an entity. Groups are
grown by complete linkage (every pair inside a group must be linked at the lower threshold), so
A~B~C chains of loosely related memories never collapse into one. Pairs where the LLM says one
contradicts the other are left to conflict resolution instead (a contradiction merged into one
text would keep the stale value alive). The LLM (``propose_merges``) then picks, within each
group, what is really redundant and writes the merged text; its answer may only name ids it was
shown. The offline LLM does this deterministically.

Applying a plan (decisions, documented here because the UI shows them):
* the merged memory is a new row: content = merged text (PII-redacted again), entities = the
  analysis of that text plus every original's, importance = the highest of the originals and the
  analysis, source = union of the originals' sources (in order), ``merged_from`` = the originals;
* ``created_at`` = the *earliest* original's: the merged fact has been known since then, and
  time-scoped questions ("what did I say in March?") still find it; ``updated_at`` = now;
* ``expires_at`` = the latest of the originals' (``None`` if any never expires): merging must not
  shorten a life; access counts are summed, ``last_accessed_at`` is the latest;
* the originals become ``superseded`` with ``superseded_by`` = the new id; nothing is deleted;
  every row involved gets a ``merge`` history entry.

``undo_merge`` reads the group from the merged memory's own ``merge`` history entry, restores
each original still superseded by it (history ``restore``), and retires the merged memory
(status ``superseded`` with no successor, history ``unmerge``).
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

import numpy as np

from memory_core.clock import as_utc
from memory_core.conflict_rules import brief
from memory_core.errors import NotFoundError, ValidationError
from memory_core.indexing import embed_text
from memory_core.lifecycle import content_hash, expires_at_for
from memory_core.lifecycle_ops import reindex, unindex
from memory_core.maintenance.locks import SCHEDULER_ACTOR, run_leased
from memory_core.parts import EngineParts
from memory_core.records import MemoryRecord
from memory_core.records import snapshot
from memory_core.types import MemoryStatus
from memory_core.validation import check_memory_id, check_user_id, clean_text

log = logging.getLogger(__name__)
MAX_MEMORIES_SCANNED = 5000  # one user's newest active memories considered per planning run


@dataclass(frozen=True)
class MergePlan:
    """A preview of one merge: what would be folded together, and into what text."""

    user_id: str
    memory_ids: tuple[str, ...]
    texts: tuple[str, ...]  # the originals' contents, in the order of ``memory_ids`` (oldest first)
    merged_text: str
    reason: str = ""
    similarity: float = 0.0  # lowest pairwise cosine similarity inside the group
    shared_entities: tuple[str, ...] = ()


def active_memories(parts: EngineParts, user_id: str, limit: int = MAX_MEMORIES_SCANNED) -> list[MemoryRecord]:
    """The user's ``limit`` newest active memories, oldest first."""
    return parts.repo.active_memories(user_id, limit)


def _entity_sets(records: Sequence[MemoryRecord]) -> list[set[str]]:
    return [{e.strip().lower() for e in r.entities if e.strip()} for r in records]


def _linked(parts: EngineParts, records: Sequence[MemoryRecord], sims: np.ndarray,
            entities: list[set[str]]) -> np.ndarray:
    """Boolean matrix of pairs close enough to merge (and not contradicting each other)."""
    s = parts.settings
    n = len(records)
    overlap = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1, n):
            if entities[i] & entities[j]:
                overlap[i, j] = overlap[j, i] = True
    linked = (sims >= s.merge_similarity) | ((sims >= s.merge_entity_similarity) & overlap)
    np.fill_diagonal(linked, False)
    if not getattr(parts.llm, "offline", False):
        # A remote LLM is told to group only redundant memories; one call per pair would cost too much.
        return linked
    for i, j in zip(*np.nonzero(np.triu(linked, 1))):
        older, newer = sorted((records[i], records[j]), key=lambda r: (r.created_at, r.memory_id))
        try:
            contradicts = parts.llm.supersedes(brief(newer), brief(older))
        except Exception as exc:  # when in doubt, do not merge
            log.warning("supersedes check failed during merge planning: %s", exc)
            contradicts = True
        if contradicts:
            linked[i, j] = linked[j, i] = False
    return linked


def _groups(linked: np.ndarray, sims: np.ndarray, max_group: int) -> list[list[int]]:
    """Complete-linkage grouping: join two groups only if every cross pair is linked."""
    n = linked.shape[0]
    group_of = list(range(n))
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    pairs = sorted(((float(sims[i, j]), i, j) for i, j in zip(*np.nonzero(np.triu(linked, 1)))), reverse=True)
    for _sim, i, j in pairs:
        a, b = group_of[i], group_of[j]
        if a == b or len(members[a]) + len(members[b]) > max_group:
            continue
        if all(linked[x, y] for x in members[a] for y in members[b]):
            for x in members[b]:
                group_of[x] = a
            members[a].extend(members.pop(b))
    return [sorted(m) for m in members.values() if len(m) >= 2]


def plan_merges(parts: EngineParts, user_id: str) -> list[MergePlan]:
    """Preview the merges the weekly job would make for ``user_id`` (nothing is changed)."""
    user_id = check_user_id(user_id)
    records = active_memories(parts, user_id)
    if len(records) < 2:
        return []
    vectors = parts.embedder.embed_passages([embed_text(r.content) for r in records])
    sims = np.asarray(vectors, dtype=np.float32) @ np.asarray(vectors, dtype=np.float32).T
    entities = _entity_sets(records)
    linked = _linked(parts, records, sims, entities)
    plans: list[MergePlan] = []
    for group in _groups(linked, sims, max(2, parts.settings.merge_max_group)):
        shown = {records[i].memory_id: i for i in group}
        try:
            proposals = parts.llm.propose_merges([brief(records[i]) for i in group])
        except Exception as exc:  # skip this group; the next run tries again
            log.warning("merge proposal failed for a group of %d: %s", len(group), exc)
            continue
        used: set[str] = set()
        for proposal in proposals:
            ids = list(dict.fromkeys(proposal.memory_ids))
            # Only ids shown to the LLM, each in one plan at most, at least two per plan.
            if len(ids) < 2 or any(mid not in shown or mid in used for mid in ids):
                log.warning("merge proposal ignored (unknown, repeated or too few ids): %s", ids)
                continue
            text = (proposal.merged_text or "").strip()
            if not text:
                continue
            used.update(ids)
            idx = sorted((shown[mid] for mid in ids), key=lambda k: (records[k].created_at, records[k].memory_id))
            common = set.intersection(*(entities[k] for k in idx))
            plans.append(MergePlan(
                user_id=user_id,
                memory_ids=tuple(records[k].memory_id for k in idx),
                texts=tuple(records[k].content for k in idx),
                merged_text=text,
                reason=proposal.reason,
                similarity=round(min(float(sims[a, b]) for a in idx for b in idx if a != b), 4),
                shared_entities=tuple(sorted(common)),
            ))
    return plans


def _dedupe(values: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def apply_merge(parts: EngineParts, plan: MergePlan, actor: str) -> str:
    """Fold the plan's memories into one new memory; returns its id. Raises ``ValidationError``
    when the plan is stale (a memory changed status or owner since it was planned)."""
    ids = _dedupe([check_memory_id(mid) for mid in plan.memory_ids])
    if len(ids) < 2:
        raise ValidationError("a merge needs at least two memories")
    records = parts.repo.get_many(ids)
    originals = sorted((records[mid] for mid in ids if mid in records), key=lambda r: (r.created_at, r.memory_id))
    if len(originals) != len(ids) or any(r.user_id != plan.user_id or r.status is not MemoryStatus.ACTIVE
                                         for r in originals):
        raise ValidationError("this merge plan is out of date: plan again")
    planned = dict(zip(plan.memory_ids, plan.texts))
    if any(mid in planned and planned[mid] != records[mid].content for mid in ids):
        # Edited since the preview: the merged text was written from the old words, and applying
        # it would retire the correction (kept only in the history).
        raise ValidationError("a memory in this merge plan was edited since it was planned: plan again")
    now = parts.clock.now()
    text, found, _kinds = parts.vault.redact(clean_text(plan.merged_text, parts.settings.max_input_chars))
    sealed = parts.vault.seal({**parts.vault.unseal_many(r.sealed for r in originals), **found}, text)
    analysis = parts.llm.analyze(text, now)
    importance = max([analysis.importance] + [r.importance for r in originals])
    types = {r.memory_type for r in originals}
    memory_type = next(iter(types)) if len(types) == 1 else analysis.memory_type
    meta: dict[str, Any] = {}
    for record in originals:
        meta.update(record.meta)
    sessions = {r.session_id for r in originals}
    expiries = [r.expires_at for r in originals]
    accessed = [r.last_accessed_at for r in originals if r.last_accessed_at is not None]
    # The merged text's time words were written at different times; its originals' spans were
    # each read at their own, so the merged memory spans them all.
    starts = [r.event_start for r in originals if r.event_start is not None]
    ends = [r.event_end for r in originals if r.event_end is not None]
    new_id = uuid.uuid4().hex
    values = dict(
        memory_id=new_id, user_id=plan.user_id, session_id=next(iter(sessions)) if len(sessions) == 1 else None,
        content=text, summary=analysis.summary, importance=importance, memory_type=memory_type.value,
        entities=_dedupe(list(analysis.entities) + [e for r in originals for e in r.entities]),
        meta=meta, status=MemoryStatus.ACTIVE.value, created_at=originals[0].created_at, updated_at=now,
        expires_at=None if any(e is None for e in expiries) else max(e for e in expiries if e is not None),
        expired_at=None, source=_dedupe([s for r in originals for s in r.source]),
        access_count=sum(r.access_count for r in originals), last_accessed_at=max(accessed) if accessed else None,
        superseded_by=None, merged_from=[r.memory_id for r in originals], vector_written=False,
        content_hash=content_hash(parts.embedder.name, text),
        event_start=min(starts) if starts else None, event_end=max(ends) if ends else None,
        # A merge must not drop a constraint one of its originals stated.
        constraint_kind=analysis.constraint_kind or next((r.constraint_kind for r in originals if r.constraint_kind), None),
        sealed=sealed,
    )
    with parts.repo.session() as session:
        # Each original only while it is active with the words the plan was made from.
        changed = parts.repo.update_active_with_hashes(
            session, [(r.memory_id, r.content_hash) for r in originals],
            status=MemoryStatus.SUPERSEDED.value, superseded_by=new_id, updated_at=now, vector_written=False)
        if changed != len(ids):  # a concurrent merge, expiry or edit got there first: roll everything back
            raise ValidationError("this merge plan is out of date: plan again")
        parts.repo.insert(session, values)
        session.flush()
        merged = parts.repo.get(new_id, session)
        assert merged is not None
        parts.repo.add_history(session, memory_id=new_id, user_id=plan.user_id, action="merge", actor=actor, at=now,
                                before=None, after=snapshot(merged),
                                note=f"merged from {len(originals)} memories"
                                     + (f": {plan.reason}" if plan.reason else ""))
        for record in originals:
            after = parts.repo.get(record.memory_id, session)
            assert after is not None
            parts.repo.add_history(session, memory_id=record.memory_id, user_id=plan.user_id, action="merge",
                                    actor=actor, at=now, before=snapshot(record), after=snapshot(after),
                                    note=f"merged into {new_id}")
    unindex(parts, ids, plan.user_id)
    reindex(parts, [merged])
    parts.cache.invalidate_user(plan.user_id)
    return new_id


def _merge_group_from_history(parts: EngineParts, merged: MemoryRecord) -> list[str]:
    """The originals as the merged memory's creating ``merge`` entry recorded them."""
    for entry in parts.repo.history(merged.memory_id):
        if entry.action == "merge" and entry.before is None and entry.after:
            group = entry.after.get("merged_from") or []
            if group:
                return [str(mid) for mid in group]
    return list(merged.merged_from)


def undo_merge(parts: EngineParts, merged_id: str, actor: str) -> list[str]:
    """Restore the originals of a merge and retire the merged memory; returns the restored ids.

    Originals no longer superseded by this merge (deleted, or changed by staff since) are left
    as they are. Refuses when the merged memory is itself no longer current (e.g. merged again:
    undo that later merge first).
    """
    merged = parts.repo.get(check_memory_id(merged_id))
    if merged is None:
        raise NotFoundError(f"memory {merged_id!r} not found")
    group = _merge_group_from_history(parts, merged)
    if not group:
        raise ValidationError(f"memory {merged_id!r} is not the result of a merge")
    if merged.status not in (MemoryStatus.ACTIVE, MemoryStatus.EXPIRED, MemoryStatus.ARCHIVED):
        raise ValidationError(f"memory {merged_id!r} is {merged.status.value}: undo what replaced it first")
    now = parts.clock.now()
    ttl = parts.settings.ttl_days_by_importance
    restored: list[MemoryRecord] = []
    with parts.repo.session() as session:
        if not parts.repo.update_if_status(session, merged.memory_id, merged.status,
                                            status=MemoryStatus.SUPERSEDED.value, superseded_by=None,
                                            updated_at=now, vector_written=False):
            raise ValidationError(f"memory {merged_id!r} changed while undoing its merge: try again")
        for memory_id in group:
            before = parts.repo.get(memory_id, session)
            still_merged = (before is not None and before.status is MemoryStatus.SUPERSEDED
                            and before.superseded_by == merged.memory_id)
            if before is None or not still_merged:
                continue
            fields: dict[str, Any] = dict(status=MemoryStatus.ACTIVE.value, superseded_by=None, expired_at=None,
                                          updated_at=now, vector_written=False)
            if before.expires_at is not None and before.expires_at <= now:
                fields["expires_at"] = expires_at_for(before.importance, now, ttl)  # a fresh life, like restore
            parts.repo.update_fields(session, memory_id, **fields)
            after = parts.repo.get(memory_id, session)
            assert after is not None
            parts.repo.add_history(session, memory_id=memory_id, user_id=before.user_id, action="restore",
                                    actor=actor, at=now, before=snapshot(before), after=snapshot(after),
                                    note=f"merge {merged.memory_id} undone")
            restored.append(after)
        after_merged = parts.repo.get(merged.memory_id, session)
        assert after_merged is not None
        parts.repo.add_history(session, memory_id=merged.memory_id, user_id=merged.user_id, action="unmerge",
                                actor=actor, at=now, before=snapshot(merged), after=snapshot(after_merged),
                                note=f"merge undone; restored {len(restored)} of {len(group)} originals")
    unindex(parts, [merged.memory_id], merged.user_id)
    reindex(parts, restored)
    parts.cache.invalidate_user(merged.user_id)
    return [r.memory_id for r in restored]


def merge_all(parts: EngineParts, min_memories: int | None = None, now: datetime | None = None, *,
              actor: str = SCHEDULER_ACTOR, wait: bool = False) -> dict[str, Any]:
    """The weekly job: plan and apply merges for every user with at least ``min_memories`` active
    memories (default ``merge_min_memories``). ``now`` is accepted for symmetry with the other
    jobs; merges are stamped with the engine's clock."""
    threshold = parts.settings.merge_min_memories if min_memories is None else int(min_memories)
    _ = as_utc(now) if now is not None else None

    def body() -> dict[str, Any]:
        users = groups = folded = errors = 0
        for user_id, count in parts.repo.user_ids():
            if count < threshold:
                continue
            users += 1
            try:
                plans = plan_merges(parts, user_id)
            except Exception as exc:
                log.warning("merge planning failed for a user: %s", exc)
                errors += 1
                continue
            for plan in plans:
                try:
                    apply_merge(parts, plan, actor=actor)
                    groups += 1
                    folded += len(plan.memory_ids)
                except Exception as exc:
                    log.warning("applying a merge failed: %s", exc)
                    errors += 1
        return {"users": users, "merged": groups, "memories_merged": folded, "errors": errors}

    return run_leased(parts, "merge", body, wait=wait)
