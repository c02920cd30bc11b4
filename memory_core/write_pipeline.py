"""The write pipeline: validate, redact PII, chunk, analyse, embed, deduplicate, dual write.

Write order that loses nothing: the SQL row is committed first with ``vector_written=False``,
then the vector is upserted, then the row is marked written (only if its content hash is still
the one embedded). A crash or a Milvus failure anywhere after the commit leaves a pending row
that ``reconcile()`` indexes later; the caller is told which memories are pending.

Functional core, imperative shell: this module makes every store call of a write (the rows, the
history, the vectors, and the reads the near-duplicate and newer-wins rules look at), and
memory_core/write_chunks.py (items, chunks, rows, results), write_dedup.py (which chunks repeat a
memory, and so refresh it instead of adding a copy) and conflict_rules.py (which older memories
a new one replaces) only compute, on what it read. So a chat message's write reaches a store in
five files (page -> service -> engine -> this pipeline -> adapter; tests/test_chat_path.py).
"""
from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from memory_core import conflict_rules as rules
from memory_core.cache import ResultCache
from memory_core.clock import Clock
from memory_core.config import Settings
from memory_core.embedding.base import Embedder
from memory_core.english_leg import EnglishLeg
from memory_core.indexing import embed_text, vector_record
from memory_core.lifecycle import content_hash
from memory_core.llm.base import LLMProvider
from memory_core.records import AddItem, AddResult, MemoryRecord, snapshot
from memory_core.sql_ports import SqlRepositoryPort
from memory_core.types import MemoryStatus
from memory_core.vectors.base import VectorFilter, VectorHit, VectorStore
from memory_core.write_chunks import (
    Chunk,
    absorb_fields,
    by_user,
    check_stage_chunks,
    chunk_items,
    cut_into_stages,
    lasting_constraint,
    prepare_item,
    results,
    row_values,
)
from memory_core.write_dedup import DuplicateFinder, by_time
from memory_core.pii_vault import PiiVault, vault_for

log = logging.getLogger(__name__)

# A stage's passage vectors, and the English encoder's by chunk position (English chunks only).
StageVectors = tuple[np.ndarray, dict[int, np.ndarray]]


class WritePipeline:
    def __init__(self, settings: Settings, repo: SqlRepositoryPort, vectors: VectorStore, embedder: Embedder,
                 llm: LLMProvider, cache: ResultCache, clock: Clock, vault: PiiVault | None = None,
                 english: EnglishLeg | None = None) -> None:
        self.settings, self.repo, self.vectors, self.embedder = settings, repo, vectors, embedder
        self.llm, self.cache, self.clock = llm, cache, clock
        self.vault = vault or vault_for(settings)
        self.english = english

    @property
    def chunk_limit(self) -> int:
        # Leave room for the "passage: " prompt and special tokens inside the model's window.
        return max(32, min(self.settings.chunk_tokens, self.embedder.max_tokens - 16))

    def add_many(self, items: Sequence[AddItem], actor: str = "system",
                 stage_chunks: int | None = None) -> list[AddResult]:
        """Store many texts. Every item is validated (and redacted, and chunked) before anything
        is written; then the batch is written in stages of about ``stage_chunks`` chunks (default
        ``Settings.write_stage_chunks``; an item's chunks stay in one stage).

        Why stages: a huge import is not one transaction and one model call, and the model
        embeds stage after stage on a worker thread while this thread analyses, deduplicates,
        stores, indexes and conflict-checks (ONNX Runtime and a remote LLM's network wait release
        the GIL). Stages are big by default: on two cores the per-user steps cost per stage and
        the work overlapped with the model slows it (figures at ``Settings.write_stage_chunks``).
        A later stage sees the earlier ones as stored memories, so a repeat across stages folds
        into the stored copy as it would within one stage.

        A failure (the model, SQL) stops the write at its stage: earlier stages stay stored, and
        the error says how many items landed; writing the batch again folds those into their
        stored copies (same content hash) instead of duplicating them."""
        check_stage_chunks(stage_chunks)
        if not items:
            return []
        prepared = [prepare_item(self.settings, self.vault, index, item, len(items)) for index, item in enumerate(items)]
        chunks = chunk_items(prepared, self.chunk_limit, self.settings.chunk_overlap_tokens,
                             self.embedder.count_tokens, self.clock, self.vault.seal)
        stages = cut_into_stages(chunks, self.settings.write_stage_chunks if stage_chunks is None else stage_chunks)
        pending: set[str] = set()
        replaced: dict[str, list[str]] = {}  # new memory id -> the ids it superseded
        # One worker per call, so a chat write never queues behind a bulk import's stages.
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")

        def embed(stage: list[Chunk]) -> Future[StageVectors]:
            return worker.submit(self._embed_stage, stage)

        try:
            ahead = embed(stages[0])
            for number, stage in enumerate(stages):
                stage_vectors = ahead
                if number + 1 < len(stages):  # one stage ahead, no more: a huge import's vectors
                    ahead = embed(stages[number + 1])  # never pile up in memory
                try:
                    stage_pending, pairs = self._write_stage(stage, stage_vectors, actor)
                    pending |= stage_pending
                    for old_id, new_id in pairs:
                        replaced.setdefault(new_id, []).append(old_id)
                except Exception as exc:
                    if number:
                        landed = stages[number][0].item_index
                        exc.add_note(f"add_many stopped at item {landed}: items 0-{landed - 1} of {len(items)} "
                                     "are stored (writing the batch again folds them into the stored copies)")
                        log.warning("add_many stopped at item %d of %d (earlier items are stored): %s",
                                    landed, len(items), exc)
                    raise
        finally:
            worker.shutdown(wait=False, cancel_futures=True)

        return results(prepared, chunks, pending, replaced)

    def _embed_stage(self, stage: list[Chunk]) -> "StageVectors":
        """The stage's passage vectors, and the English encoder's for its English chunks (by position)."""
        main = self.embedder.embed_passages([embed_text(c.text, c.key_context) for c in stage])
        english: dict[int, np.ndarray] = {}
        if self.english is not None:
            try:
                english = self.english.embed_texts([c.text for c in stage])
            except Exception as exc:  # the write goes on; a search makes them when it needs them
                log.warning("English vectors of a write stage not made (made on first search): %s", exc)
        return main, english

    def _write_stage(self, chunks: list[Chunk], vectors: "Future[StageVectors]",
                     actor: str) -> tuple[set[str], list[tuple[str, str]]]:
        """Analyse, deduplicate, store, index and conflict-check one stage; returns the ids left
        pending (stored, vector not written) and the ``(old, new)`` pairs newer-wins superseded.
        ``vectors`` is the stage's embedding, computed on the worker while this runs."""
        for chunk in chunks:
            chunk.analysis = lasting_constraint(self.llm.analyze(chunk.text, chunk.at, chunk.context or None))
            chunk.hash = content_hash(self.embedder.name, chunk.text)  # tags kept: two numbers are two texts
        main, english = vectors.result()
        for chunk, vector in zip(chunks, main):
            chunk.vector = vector
        self._mark_duplicates(chunks)
        created = self._store(chunks, actor)
        new_chunks = [c for c in chunks if c.duplicate_of is None and c.memory_id in created]
        pending = self._index(new_chunks, created)
        self._keep_english(chunks, english, created)
        self._refresh_absorbed({c.duplicate_of for c in chunks if c.duplicate_of is not None})
        pairs: list[tuple[str, str]] = []
        if new_chunks:  # newer wins: older memories the new ones contradict become superseded
            try:
                pairs = self.newer_wins().resolve([created[c.memory_id] for c in new_chunks],
                                                  {c.memory_id: c.vector for c in new_chunks if c.vector is not None},
                                                  actor)
            except Exception as exc:
                log.warning("newer-wins step failed (the memories are stored): %s", exc)
        for user_id in {c.user_id for c in chunks}:
            self.cache.invalidate_user(user_id)
        return pending, pairs

    # ---- steps --------------------------------------------------------------------------
    def _mark_duplicates(self, chunks: list[Chunk]) -> None:
        """Read what the near-duplicate rules look at, batched per user (was one SQL lookup and
        one vector search per chunk, ~15 ms each on a store of 1,000 memories per user): the
        active memories with the chunks' content hashes, each chunk's nearest stored vectors and
        the rows of the close ones; ``DuplicateFinder`` marks the repeats (nothing is written)."""
        finder = DuplicateFinder(self.settings)
        for user_id, mine in by_user(chunks).items():
            existing_ids = self.repo.hashes_to_ids(user_id, [c.hash for c in mine])
            nearest = self._nearest(user_id, mine)
            finder.mark(user_id, mine, existing_ids, nearest, self._rows(finder.close_ids(mine, existing_ids, nearest)))

    def _nearest(self, user_id: str, chunks: list[Chunk]) -> dict[int, list[VectorHit]]:
        """The 3 nearest stored vectors of each chunk (keyed by ``id(chunk)``), one batched search
        per distinct expiry cut-off (the chunk's time); empty when the store is down."""
        out: dict[int, list[VectorHit]] = {}
        for now, group in by_time(chunks).items():
            try:
                hits = self.vectors.search_dense_many(
                    [c.vector for c in group],
                    VectorFilter(user_id=user_id, now=now, fade_from=self.settings.fade_from_importance), limit=3)
            except Exception as exc:  # the store being down must not block writing
                log.warning("near-duplicate check skipped (vector store unavailable): %s", exc)
                continue
            out.update((id(c), h) for c, h in zip(group, hits))
        return out

    def _rows(self, memory_ids: Sequence[str], batch: int = 500) -> dict[str, MemoryRecord]:
        """The stored rows of ``memory_ids`` (distinct, in reads of at most ``batch`` ids)."""
        ids = sorted(set(memory_ids))
        rows: dict[str, MemoryRecord] = {}
        for start in range(0, len(ids), batch):
            rows.update(self.repo.get_many(ids[start:start + batch]))
        return rows

    def _store(self, chunks: list[Chunk], actor: str) -> dict[str, MemoryRecord]:
        """One transaction: new rows (vector pending), duplicate bumps, and their history.
        Returns the new memories as written (what they read back as), so indexing and the
        conflict check need not read them again."""
        created: dict[str, MemoryRecord] = {}
        ttl = self.settings.ttl_days_by_importance
        with self.repo.session() as session:
            absorbed: dict[str, list[Chunk]] = {}
            stored: list[tuple[Chunk, MemoryRecord]] = []
            for chunk in chunks:
                if chunk.duplicate_of is not None:
                    absorbed.setdefault(chunk.duplicate_of, []).append(chunk)
                    continue
                stored.append((chunk, self.repo.insert(session, row_values(chunk, ttl))))
            # One flush for the batch (was one per row, with a read-back: a third of the
            # non-model time of add_many), then the history rows, which need no read-back.
            session.flush()
            for chunk, record in stored:
                self.repo.add_history(session, memory_id=chunk.memory_id, user_id=chunk.user_id, action="create",
                                      actor=actor, at=chunk.at, before=None, after=snapshot(record))
                created[chunk.memory_id] = record
            for memory_id, copies in absorbed.items():
                self._absorb(session, memory_id, copies, actor)
                if memory_id in created:  # a twin within this batch: its importance may have risen
                    refreshed = self.repo.get(memory_id, session)
                    if refreshed is not None:
                        created[memory_id] = refreshed
        return created

    def _absorb(self, session: Any, memory_id: str, copies: list[Chunk], actor: str) -> None:
        """A near-duplicate refreshes the memory it repeats: seen again, maybe more important."""
        before = self.repo.get(memory_id, session)
        if before is None:  # an earlier chunk of this batch that was itself stored above
            return
        fields = absorb_fields(before, copies, self.settings.ttl_days_by_importance)
        self.repo.update_fields(session, memory_id, **fields)
        after = self.repo.get(memory_id, session)
        assert after is not None
        self.repo.add_history(session, memory_id=memory_id, user_id=before.user_id, action="dedup", actor=actor,
                              at=max(c.at for c in copies), before=snapshot(before), after=snapshot(after),
                              note=f"absorbed {len(copies)} near-duplicate(s)")

    def _index(self, chunks: list[Chunk], records: dict[str, MemoryRecord]) -> set[str]:
        """Insert the new vectors (fresh ids); returns the ids left pending (the store failed).
        Pending ones are re-indexed by reconcile with ``upsert``, which replaces any copy a
        failed-but-applied insert left behind."""
        if not chunks:
            return set()
        by_id = {c.memory_id: c for c in chunks}
        batch = [vector_record(records[mid], by_id[mid].vector) for mid in by_id]
        try:
            self.vectors.insert_new(batch)
        except Exception as exc:
            log.warning("vector write failed for %d memories; they stay pending for reconcile: %s", len(batch), exc)
            return set(by_id)
        self.repo.set_vector_written(list(by_id), True, {mid: records[mid].content_hash for mid in by_id})
        return set()

    def _keep_english(self, chunks: list[Chunk], english: Mapping[int, np.ndarray],
                      created: Mapping[str, MemoryRecord]) -> None:
        """Store the English vectors of the new memories; a failure only leaves them to be made
        when a search first needs them (memory_core/english_leg.py)."""
        if self.english is None or not english:
            return
        pairs = [(created[c.memory_id], english[i]) for i, c in enumerate(chunks)
                 if i in english and c.duplicate_of is None and c.memory_id in created]
        try:
            self.repo.save_english_vectors(self.english.model, self.english.rows(pairs))
        except Exception as exc:
            log.warning("English vectors of %d new memories not stored (made on first search): %s", len(pairs), exc)

    def _refresh_absorbed(self, memory_ids: set[str]) -> None:
        """Re-index duplicates whose importance (and so expiry) went up; on failure reconcile will."""
        if not memory_ids:
            return
        try:
            stale = [r for r in self.repo.get_many(sorted(memory_ids)).values()
                     if not r.vector_written and r.status is MemoryStatus.ACTIVE]
            self.index_records(stale)
        except Exception as exc:  # the write has landed; reconcile indexes whatever is left pending
            log.warning("re-index of %d deduplicated memories failed; left for reconcile: %s", len(memory_ids), exc)

    def newer_wins(self) -> "NewerWins":
        """The conflict step with this pipeline's current parts, indexing through ``index_records``."""
        return NewerWins(self.settings, self.repo, self.vectors, self.embedder, self.llm, self.cache, self.clock,
                         self.index_records)

    def index_records(self, records: Sequence[MemoryRecord], known: Mapping[str, np.ndarray] | None = None) -> int:
        """(Re-)embed and upsert stored memories, then mark them written. Used by edits,
        restores and reconcile so every path indexes a memory identically. ``known`` may give
        the passage vectors of memories whose text has not changed since they were embedded
        (newer-wins re-indexes a memory only to raise its importance: ~7 ms of embedding)."""
        if not records:
            return 0
        known = known or {}
        todo = [r for r in records if r.memory_id not in known]
        fresh = dict(zip((r.memory_id for r in todo),
                         self.embedder.embed_passages([embed_text(r.content, r.context) for r in todo]))) if todo else {}
        vectors = [known[r.memory_id] if r.memory_id in known else fresh[r.memory_id] for r in records]
        self.vectors.upsert([vector_record(r, v) for r, v in zip(records, vectors)])
        ids = [r.memory_id for r in records]
        self.repo.set_vector_written(ids, True, {r.memory_id: r.content_hash for r in records})
        # These records were read a moment ago: one expired, merged or archived since must not
        # keep the vector just written (its own unindex may have run before this upsert).
        retired = (r for r in self.repo.get_many(ids).values() if r.status is not MemoryStatus.ACTIVE)
        for user_id, rows in by_user(retired).items():
            self.vectors.delete([r.memory_id for r in rows], user_id=user_id)
        return len(records)


class NewerWins:
    """Newer wins, the store side: the reads the rules need and the writes they decide
    (memory_core/conflict_rules.py says which older memories a new one replaces and how).
    Defined here so the write pipeline alone calls the stores of a write; the maintenance entry
    point (``maintenance.conflicts.resolve_conflicts``) builds one from the engine's parts."""

    def __init__(self, settings: Settings, repo: SqlRepositoryPort, vectors: VectorStore, embedder: Embedder,
                 llm: LLMProvider, cache: ResultCache, clock: Clock, index: Callable[..., Any]) -> None:
        self.settings, self.repo, self.vectors, self.embedder = settings, repo, vectors, embedder
        self.llm, self.cache, self.clock, self.index = llm, cache, clock, index

    def resolve(self, records: Sequence[MemoryRecord], vectors: Mapping[str, np.ndarray],
                actor: str) -> list[tuple[str, str]]:
        """For each of ``records`` (just written, as stored), supersede the older memories it
        contradicts; returns ``(old_id, new_id)`` pairs. ``vectors``: passage embeddings already
        computed (the others are embedded). ``supersede`` re-checks the status in its UPDATE, so
        a stale copy cannot supersede a memory that changed meanwhile. Never raises for an LLM
        failure on one pair (that pair is left alone and logged)."""
        # A memory the provider says can contradict nothing (no slot, no preference, for the rules)
        # is skipped before any candidate is searched or loaded: most of a write's conflict time.
        news = sorted((r for r in records if r.status is MemoryStatus.ACTIVE
                       and self.llm.may_contradict(r.content, r.context)), key=lambda r: (r.created_at, r.memory_id))
        if not news:
            return []
        given = dict(vectors)
        todo = [r for r in news if r.memory_id not in given]
        if todo:
            given.update(zip((r.memory_id for r in todo),
                             self.embedder.embed_passages([embed_text(r.content, r.context) for r in todo])))
        hits = self._dense_hits(news, given)
        by_entity = {user_id: rules.entity_index(self.repo.recent_active_entities(user_id, rules.ENTITY_SCAN_LIMIT), keys)
                     for user_id, keys in rules.wanted_keys(news).items()}
        ranked = {new.memory_id: rules.ranked_ids(self.settings, new, hits[new.memory_id],
                                                  by_entity.get(new.user_id, rules.NO_ENTITIES)) for new in news}
        known = self.repo.get_many(sorted({mid for ids in ranked.values() for mid in ids}))
        pairs: list[tuple[str, str]] = []
        superseded: list[MemoryRecord] = []
        decisions = rules.decide(self.llm, news, ranked, known, self.settings.conflict_max_candidates,
                                 self.settings.fade_from_importance)
        try:
            done: bool | None = None
            while True:
                older, newer = decisions.send(done)  # the rules run up to their next decision
                done = self.supersede(older, newer, actor)
                if done:
                    pairs.append((older.memory_id, newer.memory_id))
                    superseded.append(older)
        except StopIteration:
            pass
        finally:  # also if a step raised: what was superseded must leave the index
            self._drop_vectors(superseded)
        raised = [r for r in self.repo.get_many(sorted({new for _old, new in pairs})).values()
                  if not r.vector_written and r.status is MemoryStatus.ACTIVE]
        if raised:
            known_vectors = rules.reusable_vectors(raised, given, {r.memory_id: r for r in records})
            try:  # a failure leaves them pending for reconcile
                if known_vectors:
                    self.index(raised, known_vectors)
                else:
                    self.index(raised)
            except Exception as exc:
                log.warning("re-index failed; left pending for reconcile: %s", exc)
        return pairs

    def _dense_hits(self, news: Sequence[MemoryRecord], vectors: Mapping[str, np.ndarray]) -> dict[str, list[VectorHit]]:
        """Each new memory's nearest active memories of its user: one batched search per user."""
        out: dict[str, list[VectorHit]] = {}
        for records in by_user(news).values():
            try:
                found = self.vectors.search_dense_many(
                    [vectors[r.memory_id] for r in records],
                    rules.dense_filter(records, self.settings.fade_from_importance),
                    2 * self.settings.conflict_max_candidates + 1)
            except Exception as exc:  # the store being down must not block writing; entities still work
                log.warning("conflict search skipped the vector store: %s", exc)
                found = [[] for _ in records]
            out.update({r.memory_id: hits for r, hits in zip(records, found)})
        return out

    def supersede(self, older: MemoryRecord, newer: MemoryRecord, actor: str) -> bool:
        """Mark ``older`` superseded by ``newer`` (only if it is still active); True when it was.
        In the same transaction the newer one inherits what it must (``rules.INHERITED``: the
        importance, the key of a correction). The caller removes the vector (``_drop_vectors``)."""
        now = self.clock.now()
        with self.repo.session() as session:
            if not self.repo.update_if_status(session, older.memory_id, MemoryStatus.ACTIVE,
                                              **rules.superseded_fields(newer, now)):
                return False
            after = self.repo.get(older.memory_id, session)
            assert after is not None
            self.repo.add_history(session, memory_id=older.memory_id, user_id=older.user_id, action="supersede",
                                  actor=actor, at=now, before=snapshot(older), after=snapshot(after),
                                  note=rules.supersede_note(newer))
            current = self.repo.get(newer.memory_id, session)
            for inherit in rules.INHERITED:  # each sees the row as the one before it left it
                change = inherit(current, older, self.settings, now) if current is not None else None
                if current is None or change is None:
                    continue
                fields, note = change
                if "content" in fields:  # an older telling joined in (``rules.inherited_detail``)
                    fields = {**fields, "content_hash": content_hash(self.embedder.name, fields["content"])}
                self.repo.update_fields(session, current.memory_id, **fields)
                changed = self.repo.get(current.memory_id, session)
                self.repo.add_history(session, memory_id=current.memory_id, user_id=current.user_id, action="update",
                                      actor=actor, at=now, before=snapshot(current),
                                      after=snapshot(changed) if changed else None, note=note)
                current = changed
        return True

    def _drop_vectors(self, superseded: Sequence[MemoryRecord]) -> None:
        """Remove superseded memories from the vector store in one call per user (one delete per
        pair was a third of the conflict step), then drop their users' cached results."""
        for user_id, records in by_user(superseded).items():
            try:
                self.vectors.delete([r.memory_id for r in records], user_id=user_id)
            except Exception as exc:
                log.warning("vector delete failed; reconcile will remove the orphans: %s", exc)
            self.cache.invalidate_user(user_id)
