"""The write pipeline: validate, redact PII, chunk, analyse, embed, deduplicate, dual write.

Write order that loses nothing: the SQL row is committed first with ``vector_written=False``,
then the vector is upserted, then the row is marked written (only if its content hash is still
the one embedded). A crash or a Milvus failure anywhere after the commit leaves a pending row
that ``reconcile()`` indexes later; the caller is told which memories are pending.

The chunks and their stages are memory_core/write_chunks.py; which chunks repeat a memory (and
so refresh it instead of adding a copy) is memory_core/write_dedup.py.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from memory_core.cache import ResultCache
from memory_core.clock import Clock, as_utc
from memory_core.config import Settings
from memory_core.embedding.base import Embedder
from memory_core.errors import ValidationError
from memory_core.indexing import embed_text, vector_record
from memory_core.lifecycle import content_hash, expires_at_for
from memory_core.llm.base import LLMProvider
from memory_core.records import AddItem, AddResult, MemoryRecord, snapshot
from memory_core.sql_ports import SqlRepositoryPort
from memory_core.text.chunking import chunk_text
from memory_core.text.event_time import event_span
from memory_core.text.pii import redact
from memory_core.types import MemoryStatus
from memory_core.validation import check_user_id, clean_text
from memory_core.vectors.base import VectorStore
from memory_core.write_chunks import Chunk, cut_into_stages, lasting_constraint, sources
from memory_core.write_dedup import DuplicateFinder

log = logging.getLogger(__name__)


class WritePipeline:
    def __init__(
        self,
        settings: Settings,
        repo: SqlRepositoryPort,
        vectors: VectorStore,
        embedder: Embedder,
        llm: LLMProvider,
        cache: ResultCache,
        clock: Clock,
        after_write: Callable[[dict[str, MemoryRecord], dict[str, np.ndarray], str],
                              Sequence[tuple[str, str]] | None] | None = None,
    ) -> None:
        """``after_write(created_records_by_id, vectors_by_id, actor)`` runs once new memories are
        stored and indexed (the engine resolves newer-wins conflicts there) and returns the
        ``(old_id, new_id)`` pairs it superseded, which each ``AddResult`` reports; its failure
        never fails the write, which has already landed."""
        self.after_write = after_write
        self.settings = settings
        self.repo = repo
        self.vectors = vectors
        self.embedder = embedder
        self.llm = llm
        self.cache = cache
        self.clock = clock

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
        if stage_chunks is not None and (isinstance(stage_chunks, bool) or not isinstance(stage_chunks, int)
                                         or stage_chunks < 1):
            raise ValidationError(f"stage_chunks must be a positive integer, got {stage_chunks!r}")
        if not items:
            return []
        prepared = [self._prepare(index, item, len(items)) for index, item in enumerate(items)]
        chunks: list[Chunk] = []
        for index, (item, user_id, text, _kinds, context) in enumerate(prepared):
            at = as_utc(item.at) if item.at else self.clock.now()
            for piece in chunk_text(text, self.chunk_limit, self.settings.chunk_overlap_tokens, self.embedder.count_tokens):
                chunks.append(Chunk(index, user_id, piece, at, item.session_id, dict(item.metadata or {}),
                                     sources(item.source), context))
        stages = cut_into_stages(chunks, self.settings.write_stage_chunks if stage_chunks is None else stage_chunks)
        pending: set[str] = set()
        replaced: dict[str, list[str]] = {}  # new memory id -> the ids it superseded
        # One worker per call, so a chat write never queues behind a bulk import's stages.
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")

        def embed(stage: list[Chunk]) -> Future[np.ndarray]:
            return worker.submit(self.embedder.embed_passages, [embed_text(c.text, c.key_context) for c in stage])

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

        results: list[AddResult] = []
        mine_by_item: dict[int, list[Chunk]] = {}
        for chunk in chunks:
            mine_by_item.setdefault(chunk.item_index, []).append(chunk)
        for index, (_item, _user, _text, kinds, _context) in enumerate(prepared):
            mine = mine_by_item.get(index, [])
            results.append(AddResult(
                memory_ids=[c.duplicate_of or c.memory_id for c in mine],
                created=[c.memory_id for c in mine if c.duplicate_of is None],
                deduplicated=[c.duplicate_of for c in mine if c.duplicate_of is not None],
                redactions=kinds,
                pending_index=[c.memory_id for c in mine if c.memory_id in pending],
                superseded=[old for c in mine if c.duplicate_of is None for old in replaced.get(c.memory_id, [])],
            ))
        return results

    def _prepare(self, index: int, item: AddItem, count: int) -> tuple[AddItem, str, str, list[str], str]:
        """Validate and redact one item: (item, user id, redacted text, PII kinds, context key)."""
        try:
            user_id = check_user_id(item.user_id)
            text = clean_text(item.content, self.settings.max_input_chars)
            context = self._context(item.context)
        except ValidationError as exc:
            raise ValidationError(f"item {index}: {exc}" if count > 1 else str(exc)) from exc
        if item.metadata is not None and not isinstance(item.metadata, dict):
            raise ValidationError(f"item {index}: metadata must be a dict")
        redaction = redact(text)
        return item, user_id, redaction.text, sorted(set(redaction.kinds)), context

    def _write_stage(self, chunks: list[Chunk], vectors: Future[np.ndarray],
                     actor: str) -> tuple[set[str], list[tuple[str, str]]]:
        """Analyse, deduplicate, store, index and conflict-check one stage; returns the ids left
        pending (stored, vector not written) and the ``(old, new)`` pairs newer-wins superseded.
        ``vectors`` is the stage's embedding, computed on the worker while this runs."""
        for chunk in chunks:
            chunk.analysis = lasting_constraint(self.llm.analyze(chunk.text, chunk.at, chunk.context or None))
            chunk.hash = content_hash(self.embedder.name, embed_text(chunk.text))
        for chunk, vector in zip(chunks, vectors.result()):
            chunk.vector = vector
        DuplicateFinder(self.settings, self.repo, self.vectors).mark(chunks)
        created = self._store(chunks, actor)
        new_chunks = [c for c in chunks if c.duplicate_of is None and c.memory_id in created]
        pending = self._index(new_chunks, created)
        self._refresh_absorbed({c.duplicate_of for c in chunks if c.duplicate_of is not None})
        pairs: list[tuple[str, str]] = []
        if self.after_write is not None and new_chunks:
            try:
                pairs = list(self.after_write({c.memory_id: created[c.memory_id] for c in new_chunks},
                                              {c.memory_id: c.vector for c in new_chunks if c.vector is not None},
                                              actor) or [])
            except Exception as exc:
                log.warning("post-write step failed (the memories are stored): %s", exc)
        for user_id in {c.user_id for c in chunks}:
            self.cache.invalidate_user(user_id)
        return pending, pairs

    # ---- steps --------------------------------------------------------------------------
    def _context(self, raw: str | None) -> str:
        """The turn a text answered, made safe to store: cleaned, PII-redacted, and cut to its
        last ``context_key_chars`` characters (a question sits at the end of a reply; a long
        context would drown the memory's own meaning in its key). Empty or absent: no context."""
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return ""
        text = redact(clean_text(raw, self.settings.max_input_chars, what="context")).text
        limit = self.settings.context_key_chars
        return text if len(text) <= limit else "…" + text[-limit:].lstrip()

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
                analysis = chunk.analysis
                assert analysis is not None
                event = event_span(chunk.text, chunk.at)
                values = dict(
                    memory_id=chunk.memory_id, user_id=chunk.user_id, session_id=chunk.session_id,
                    content=chunk.text, summary=analysis.summary, importance=analysis.importance,
                    memory_type=analysis.memory_type.value, entities=analysis.entities, meta=chunk.meta,
                    status=MemoryStatus.ACTIVE.value, created_at=chunk.at, updated_at=chunk.at,
                    expires_at=expires_at_for(analysis.importance, chunk.at, ttl), expired_at=None,
                    source=chunk.source, access_count=0, last_accessed_at=None, superseded_by=None,
                    merged_from=[], vector_written=False, content_hash=chunk.hash, context=chunk.key_context or None,
                    event_start=event.start if event else None, event_end=event.end if event else None,
                    constraint_kind=analysis.constraint_kind,
                )
                stored.append((chunk, self.repo.insert(session, values)))
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
        latest = max(c.at for c in copies)
        importance = max([before.importance] + [c.analysis.importance for c in copies if c.analysis])
        sources = list(dict.fromkeys(before.source + [s for c in copies for s in c.source]))
        fields: dict[str, Any] = dict(
            access_count=before.access_count + len(copies),
            updated_at=max(before.updated_at, latest),
            last_accessed_at=latest,
            source=sources,
            importance=importance,
        )
        if importance != before.importance:
            fields["expires_at"] = expires_at_for(importance, before.created_at, self.settings.ttl_days_by_importance)
            fields["vector_written"] = False  # importance and expiry live in the vector record too
        self.repo.update_fields(session, memory_id, **fields)
        after = self.repo.get(memory_id, session)
        assert after is not None
        self.repo.add_history(session, memory_id=memory_id, user_id=before.user_id, action="dedup", actor=actor,
                              at=latest, before=snapshot(before), after=snapshot(after),
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
        retired: dict[str, list[str]] = {}
        for memory_id, now_record in self.repo.get_many(ids).items():
            if now_record.status is not MemoryStatus.ACTIVE:
                retired.setdefault(now_record.user_id, []).append(memory_id)
        for user_id, memory_ids in retired.items():
            self.vectors.delete(memory_ids, user_id=user_id)
        return len(records)
