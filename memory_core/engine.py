"""The facade every caller uses: the app's services, the scheduler, benchmarks and tests.

``MemoryEngine`` takes its parts through the constructor (ports: SQL repository, vector store,
embedder, LLM, cache, clock, reranker), so tests and benchmarks swap a backend without
patching. ``open_memory()`` builds the default parts from settings.
"""
from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any, Sequence

from memory_core.cache import ResultCache, open_cache
from memory_core.clock import Clock, SystemClock
from memory_core.config import Settings
from memory_core.embedding.base import Embedder
from memory_core.errors import NotFoundError, ValidationError
from memory_core.indexing import embed_text
from memory_core.logs import request_context
from memory_core.lifecycle import content_hash, expires_at_for
from memory_core.llm.base import LLMProvider
from memory_core.records import (
    AddItem,
    AddResult,
    HistoryEntry,
    JobRun,
    MemoryQuery,
    MemoryRecord,
    Page,
    ReconcileReport,
    SearchFilters,
    SearchResponse,
)
from memory_core.rerank import Reranker
from memory_core.retrieval import RetrievalOptions, RetrievalPipeline
from memory_core.storage.repository import SqlRepository, snapshot
from memory_core.telemetry import Recorder
from memory_core.text.event_time import event_span
from memory_core.text.pii import redact
from memory_core.types import MemoryStatus, MemoryType
from memory_core.ratelimit import WriteRateLimiter
from memory_core.validation import (
    check_add_items,
    check_datetime,
    check_importance,
    check_limit,
    check_memory_id,
    check_memory_query,
    check_role,
    check_search_filters,
    check_session_id,
    check_user_id,
    clean_text,
)
from memory_core.vectors.base import VectorStore
from memory_core.write_pipeline import WritePipeline

log = logging.getLogger(__name__)
_UNSET: Any = object()


class MemoryEngine:
    def __init__(
        self,
        settings: Settings,
        repo: SqlRepository,
        vectors: VectorStore,
        embedder: Embedder,
        llm: LLMProvider,
        cache: ResultCache,
        clock: Clock | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.settings = settings
        self.repo = repo
        self.vectors = vectors
        self.embedder = embedder
        self.llm = llm
        self.cache = cache
        self.clock = clock or SystemClock()
        self.reranker = reranker
        self.recorder = Recorder(repo)
        self.writer = WritePipeline(settings, repo, vectors, embedder, llm, cache, self.clock,
                                    after_write=self._resolve_conflicts)
        self.retriever = RetrievalPipeline(settings, repo, vectors, embedder, llm, cache, self.clock,
                                           self.recorder, reranker)
        self._reconcile_lock = threading.Lock()
        self.write_limiter = WriteRateLimiter(settings.write_limit_chars_per_minute)

    # ---- write ----------------------------------------------------------------------------
    def add(
        self,
        user_id: str,
        content: str,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        source: str | list[str] | None = None,
        at: datetime | None = None,
        actor: str = "system",
        context: str | None = None,
    ) -> AddResult:
        """Remember ``content`` for ``user_id``. PII is redacted before anything is stored.
        ``context`` is the turn it answered (indexed with it, see ``AddItem.context``).

        Limited per user to ``Settings.write_limit_chars_per_minute`` (``RateLimited``, a
        ``ValidationError``, when over it: nothing is stored)."""
        item, = check_add_items([AddItem(user_id=user_id, content=content, session_id=session_id,
                                         metadata=metadata, source=source, at=at, context=context)],
                                self.settings.max_metadata_bytes)
        clean_text(item.content, self.settings.max_input_chars)  # "too long" / "empty" before "too much"
        self.write_limiter.charge([item])
        with request_context():
            return self.writer.add_many([item], actor=actor)[0]

    def add_many(self, items: Sequence[AddItem | dict[str, Any]], actor: str = "system",
                 stage_chunks: int | None = None, rate_limit: bool = False) -> list[AddResult]:
        """Batched ``add``: all items are validated before any is written, then written in stages
        of about ``stage_chunks`` chunks (default ``Settings.write_stage_chunks``) with the model
        embedding one stage ahead. A failure stops at its stage; earlier stages stay stored.

        Not rate-limited unless ``rate_limit=True``: it is the bulk path of trusted callers (staff
        imports, demo seeding, benchmarks); a caller writing what end users send uses ``add``."""
        parsed = check_add_items(items, self.settings.max_metadata_bytes)
        if rate_limit:
            self.write_limiter.charge(parsed)
        with request_context():
            return self.writer.add_many(parsed, actor=actor, stage_chunks=stage_chunks)

    def _resolve_conflicts(self, created: dict[str, MemoryRecord], vectors: dict[str, Any],
                           actor: str) -> list[tuple[str, str]]:
        """Newer wins: older memories that the new ones contradict become superseded (kept,
        linked). Returns the ``(old_id, new_id)`` pairs."""
        from memory_core.maintenance.conflicts import resolve_conflicts

        return resolve_conflicts(self, list(created), actor, vectors=vectors, records=created)

    # ---- read -----------------------------------------------------------------------------
    def search(
        self,
        user_id: str,
        query: str,
        top_k: int = 5,
        context: str | Sequence[str] | None = None,
        filters: SearchFilters | None = None,
        at: datetime | None = None,
        options: RetrievalOptions | None = None,
        min_relevance: float | None = None,
    ) -> SearchResponse:
        """The user's most useful memories for ``query``, with score parts and a context block.

        Results below ``min_relevance`` (calibrated absolute relevance, 0-1; default
        ``Settings.min_relevance``) are left out, so an unrelated query can return nothing; the
        user's constraints that bear on the query come in ``SearchResponse.constraints``."""
        filters = check_search_filters(filters)
        at = check_datetime(at, "at")
        if options is not None and not isinstance(options, RetrievalOptions):
            raise ValidationError(f"options must be a RetrievalOptions, got {type(options).__name__}")
        if context is not None and not isinstance(context, str) and (
                not isinstance(context, Sequence) or not all(isinstance(c, str) for c in context)):
            raise ValidationError("context must be a string or a list of strings")
        with request_context():
            return self.retriever.search(user_id, query, top_k=top_k, context=context, filters=filters, at=at,
                                         options=options, min_relevance=min_relevance)

    def get(self, memory_id: str, user_id: str | None = None) -> MemoryRecord:
        """A memory by id; with ``user_id``, only if it belongs to that user (no existence leak)."""
        record = self.repo.get(check_memory_id(memory_id))
        if user_id is not None:
            user_id = check_user_id(user_id)
        if record is None or (user_id is not None and record.user_id != user_id):
            raise NotFoundError(f"memory {memory_id!r} not found")
        return record

    def list_memories(self, query: MemoryQuery) -> Page:
        return self.repo.list(check_memory_query(query))

    def users(self) -> list[tuple[str, int]]:
        """(user_id, active memory count) for every user with memories."""
        return self.repo.user_ids()

    def history(self, memory_id: str) -> list[HistoryEntry]:
        return self.repo.history(check_memory_id(memory_id))

    def user_history(self, user_id: str, limit: int = 500) -> list[HistoryEntry]:
        return self.repo.history_for_user(check_user_id(user_id), limit=check_limit(limit))

    # ---- edit -----------------------------------------------------------------------------
    def update(
        self,
        memory_id: str,
        *,
        actor: str,
        content: str | None = None,
        importance: int | None = None,
        memory_type: MemoryType | str | None = None,
        expires_at: datetime | None = _UNSET,
        user_id: str | None = None,
        note: str = "",
    ) -> MemoryRecord:
        """Edit a memory; content edits are redacted, re-analysed for entities, re-embedded and
        re-indexed. Changing importance recomputes expiry unless ``expires_at`` is given."""
        before = self.get(memory_id, user_id)
        now = self.clock.now()
        fields: dict[str, Any] = {"updated_at": now}
        if content is not None:
            text = redact(clean_text(content, self.settings.max_input_chars)).text
            if text != before.content:
                analysis = self.llm.analyze(text, now)
                # Its time words still speak from when it was written, not from the edit.
                event = event_span(text, before.created_at)
                fields.update(content=text, entities=analysis.entities, summary=analysis.summary,
                              constraint_kind=analysis.constraint_kind,
                              content_hash=content_hash(self.embedder.name, embed_text(text)),
                              event_start=event.start if event else None, event_end=event.end if event else None)
        if importance is not None:
            fields["importance"] = check_importance(importance)
            if expires_at is _UNSET:
                fields["expires_at"] = expires_at_for(importance, before.created_at,
                                                      self.settings.ttl_days_by_importance)
        if memory_type is not None:
            try:
                fields["memory_type"] = MemoryType(memory_type).value
            except ValueError as exc:
                raise ValidationError(f"unknown memory type {memory_type!r}") from exc
        if expires_at is not _UNSET:
            fields["expires_at"] = check_datetime(expires_at, "expires_at")
        if set(fields) == {"updated_at"}:
            return before
        active = before.status is MemoryStatus.ACTIVE
        if active:
            fields["vector_written"] = False
        with self.repo.session() as session:
            self.repo.update_fields(session, before.memory_id, **fields)
            after = self.repo.get(before.memory_id, session)
            assert after is not None
            self.repo.add_history(session, memory_id=before.memory_id, user_id=before.user_id, action="update",
                                  actor=actor, at=now, before=snapshot(before), after=snapshot(after), note=note)
        if active:
            self._reindex([after])
        self.cache.invalidate_user(before.user_id)
        return self.get(before.memory_id)

    def expire(self, memory_id: str, *, actor: str, user_id: str | None = None, note: str = "") -> MemoryRecord:
        """Take a memory out of retrieval (kept, restorable); its vector is removed."""
        return self._set_status(memory_id, MemoryStatus.EXPIRED, actor=actor, user_id=user_id, note=note)

    def restore(self, memory_id: str, *, actor: str, user_id: str | None = None, note: str = "") -> MemoryRecord:
        """Bring an expired, superseded or archived memory back into retrieval (re-indexed)."""
        if self.get(memory_id, user_id).status is MemoryStatus.ARCHIVED:
            from memory_core.maintenance.archive import restore_from_archive

            return restore_from_archive(self, memory_id, actor, note=note)
        return self._set_status(memory_id, MemoryStatus.ACTIVE, actor=actor, user_id=user_id, note=note)

    def _set_status(self, memory_id: str, status: MemoryStatus, *, actor: str, user_id: str | None,
                    note: str) -> MemoryRecord:
        before = self.get(memory_id, user_id)
        if before.status is status:
            return before
        now = self.clock.now()
        fields: dict[str, Any] = {"status": status.value, "updated_at": now}
        if status is MemoryStatus.ACTIVE:
            fields.update(expired_at=None, superseded_by=None, vector_written=False)
            if before.expires_at is not None and before.expires_at <= now:
                # Restored by a person: give it a fresh lifetime from today, not an instant re-expiry.
                fields["expires_at"] = expires_at_for(before.importance, now, self.settings.ttl_days_by_importance)
        else:
            fields.update(expired_at=now if status is MemoryStatus.EXPIRED else before.expired_at,
                          vector_written=False)
        action = {"active": "restore", "expired": "expire", "archived": "archive", "superseded": "supersede",
                  "deleted": "delete"}[status.value]
        with self.repo.session() as session:
            # Conditional on the status read above: an expiry racing a merge must not turn the
            # merged (superseded) original into an expired one, half-breaking the merge's undo.
            if not self.repo.update_if_status(session, before.memory_id, before.status, **fields):
                raise ValidationError(f"memory {before.memory_id} changed while it was being set to {status.value} "
                                      "(another job or person got there first): reload and try again")
            after = self.repo.get(before.memory_id, session)
            assert after is not None
            self.repo.add_history(session, memory_id=before.memory_id, user_id=before.user_id, action=action,
                                  actor=actor, at=now, before=snapshot(before), after=snapshot(after), note=note)
        if status is MemoryStatus.ACTIVE:
            self._reindex([after])
        else:
            self._unindex([before.memory_id], before.user_id)
        self.cache.invalidate_user(before.user_id)
        return self.get(before.memory_id)

    def delete(self, memory_id: str, *, actor: str, user_id: str | None = None, note: str = "") -> None:
        """Hard-delete one memory (row and vector). The history keeps who deleted what.

        The memories it replaced (newer wins, or a merge) do not stay pointing at nothing: if it
        was current, they are current again ("forget that" after "I live in Porto now" leaves
        "I live in Lisbon" as the user's address, not no address at all); if it had itself been
        replaced, they now point at what replaced it."""
        before = self.get(memory_id, user_id)
        now = self.clock.now()
        successor = before.superseded_by if before.status is MemoryStatus.SUPERSEDED else None
        with self.repo.session() as session:
            from memory_core.storage.schema import MemoryRow

            row = session.get(MemoryRow, before.memory_id)
            if row is not None:
                session.delete(row)
            self.repo.add_history(session, memory_id=before.memory_id, user_id=before.user_id, action="delete",
                                  actor=actor, at=now, before=snapshot(before), after=None, note=note)
            replaced = self.repo.replaced_by(session, before.user_id, before.memory_id)
            if successor is not None:
                for old in replaced:
                    self.repo.update_fields(session, old.memory_id, superseded_by=successor, updated_at=now)
                    after = self.repo.get(old.memory_id, session)
                    self.repo.add_history(session, memory_id=old.memory_id, user_id=old.user_id, action="update",
                                          actor=actor, at=now, before=snapshot(old),
                                          after=snapshot(after) if after else None,
                                          note=f"the memory that replaced it ({before.memory_id}) was deleted; "
                                               f"now replaced by {successor}")
        self._unindex([before.memory_id], before.user_id)
        self._drop_archived(before.user_id, [before.memory_id])
        if successor is None:
            for old in replaced:
                self._set_status(old.memory_id, MemoryStatus.ACTIVE, actor=actor, user_id=old.user_id,
                                 note=f"current again: the memory that replaced it ({before.memory_id}) was deleted")
        self.cache.invalidate_user(before.user_id)

    def _drop_archived(self, user_id: str, memory_ids: Sequence[str]) -> None:
        from memory_core.maintenance.archive import drop_from_archive

        try:
            drop_from_archive(self, user_id, memory_ids)
        except Exception as exc:
            log.warning("could not remove a deleted memory from its archive file: %s", exc)

    def delete_user(self, user_id: str, *, actor: str, note: str = "erasure request") -> int:
        """Erase everything of a user: memories, vectors, messages, and the content kept in their
        audit history (the history keeps that an erasure happened, by whom and when)."""
        user_id = check_user_id(user_id)
        now = self.clock.now()
        with self.repo.session() as session:
            ids = self.repo.delete_user_rows(session, user_id)
            self.repo.erase_history_content(session, user_id)
            self.repo.add_history(session, memory_id="*", user_id=user_id, action="delete_user", actor=actor,
                                  at=now, before={"memories": len(ids)}, after=None, note=note)
        try:
            self.vectors.delete_user(user_id)
        except Exception as exc:  # reconcile removes orphans of users SQL no longer has
            log.warning("vector delete for an erased user failed; reconcile will remove them: %s", exc)
        from memory_core.maintenance.archive import erase_user_archive

        erase_user_archive(self, user_id)  # the archive holds copies of the content too
        self.cache.invalidate_user(user_id)
        return len(ids)

    # ---- messages (provenance) ------------------------------------------------------------
    def record_message(self, *, message_id: str, user_id: str, session_id: str, role: str, content: str,
                       at: datetime | None = None) -> None:
        """Store one chat message (provenance). ``role`` is "user" or "assistant"."""
        session = check_session_id(session_id)
        if session is None:
            raise ValidationError("session_id is required for a message")
        self.repo.add_message(message_id=check_memory_id(message_id), user_id=check_user_id(user_id, new=True),
                              session_id=session, role=check_role(role),
                              content=redact(clean_text(content, self.settings.max_input_chars)).text,
                              at=check_datetime(at, "at") or self.clock.now())

    def messages(self, message_ids: Sequence[str]) -> list[dict[str, Any]]:
        if isinstance(message_ids, (str, bytes)) or not isinstance(message_ids, Sequence):
            raise ValidationError(f"message_ids must be a list of ids, got {type(message_ids).__name__}")
        return self.repo.messages([m for m in message_ids if isinstance(m, str)])

    # ---- repair ---------------------------------------------------------------------------
    def reconcile(self, user_id: str | None = None) -> ReconcileReport:
        """Make Milvus match SQL: write missing vectors, remove orphans, re-embed stale ones.

        Idempotent and safe beside concurrent writes: they write SQL first, so a vector is never
        newer than its row, and reconcile therefore reads Milvus *before* SQL. Read the other way
        round, a memory (or a new user's first memory) written between the two reads had a vector
        but no row yet, and was removed as an orphan. Two concurrent calls in one process run one
        after the other.
        """
        with self._reconcile_lock:
            written = removed = reembedded = 0
            errors: list[str] = []
            vector_users: list[str] | None = None
            if user_id is None:
                try:
                    vector_users = list(self.vectors.all_user_ids())
                except Exception as exc:
                    errors.append(f"listing vector users failed: {exc}")
            users = [check_user_id(user_id)] if user_id is not None else [u for u, _ in self.repo.user_ids()]
            if vector_users is not None:
                try:
                    known = set(users)
                    for orphan_user in [u for u in vector_users if u not in known]:
                        if self.repo.active_hashes(orphan_user):
                            continue  # its first memory landed after the SQL read: not an orphan
                        self.vectors.delete_user(orphan_user)
                        removed += 1
                except Exception as exc:
                    errors.append(f"removing vectors of users SQL no longer has failed: {exc}")
            for uid in users:
                try:
                    w, r, e = self._reconcile_user(uid)
                    written, removed, reembedded = written + w, removed + r, reembedded + e
                except Exception as exc:
                    errors.append(f"user {uid!r}: {type(exc).__name__}: {exc}")
            return ReconcileReport(users=len(users), written=written, removed=removed, reembedded=reembedded,
                                   errors=errors)

    def _reconcile_user(self, user_id: str) -> tuple[int, int, int]:
        in_milvus = self.vectors.user_hashes(user_id)  # first: see ``reconcile``
        in_sql = self.repo.active_hashes(user_id)
        orphans = [mid for mid in in_milvus if mid not in in_sql]
        missing = [mid for mid in in_sql if mid not in in_milvus]
        stale = [mid for mid in in_sql if mid in in_milvus and in_milvus[mid] != in_sql[mid]]
        if orphans:
            # A row restored or re-activated since the SQL read keeps its vector.
            now_active = {mid for mid, r in self.repo.get_many(orphans).items() if r.status is MemoryStatus.ACTIVE}
            orphans = [mid for mid in orphans if mid not in now_active]
        if orphans:
            self.vectors.delete(orphans, user_id=user_id)
        # Rows marked pending whose vector is already right (crash after upsert): re-upsert too,
        # since importance/expiry in the vector record may be what changed.
        pending = {r.memory_id for r in self.repo.pending_vectors(limit=100_000, user_id=user_id)}
        todo = list(dict.fromkeys(missing + stale + [mid for mid in pending if mid in in_sql]))
        records = self.repo.get_many(todo)
        ordered = [records[mid] for mid in todo if mid in records and records[mid].status is MemoryStatus.ACTIVE]
        for start in range(0, len(ordered), 256):
            self.writer.index_records(ordered[start:start + 256])
        if orphans or ordered:
            self.cache.invalidate_user(user_id)
        return len(missing), len(orphans), len(stale)

    def _reindex(self, records: Sequence[MemoryRecord]) -> None:
        try:
            self.writer.index_records(records)
        except Exception as exc:
            log.warning("re-index failed; left pending for reconcile: %s", exc)

    def _unindex(self, memory_ids: Sequence[str], user_id: str) -> None:
        try:
            self.vectors.delete(memory_ids, user_id=user_id)
        except Exception as exc:
            log.warning("vector delete failed; reconcile will remove the orphan: %s", exc)

    # ---- operations -----------------------------------------------------------------------
    def job_runs(self, job: str | None = None, limit: int = 100) -> list[JobRun]:
        return self.repo.job_runs(job, check_limit(limit))

    def health(self) -> dict[str, Any]:
        """What is up, for the UI and the compose health check. Never raises."""
        return {
            "sql": self.repo.ping(),
            "vectors": self.vectors.ping(),
            "cache": self.cache.ping(),
            "cache_backend": self.cache.name,
            "llm": self.llm.name,
            "llm_offline": bool(getattr(self.llm, "offline", False)),
            "reranker": self.reranker.name if self.reranker else None,
            "embedding_model": self.embedder.name,
            # where keyword search runs ("sql" on a Milvus server older than 2.5) and what answers
            **self.vectors.backend_info(),
        }

    def warm_up(self) -> None:
        """Pay one-time costs now rather than in a user's first request: jieba's dictionary
        (seconds on first use), the model's first inference, the offline rules."""
        from memory_core.text.keywords import keyword_text

        keyword_text("预热分词 warm up the tokenizer")
        self.embedder.embed_query("warm up")
        self.llm.rewrite_query("昨天 yesterday", self.clock.now())

    def prepare_user(self, user_id: str, wait: bool = False) -> bool:
        """Warm what a user's first search needs (their vectors, in embedded mode). Cheap and
        safe to call on every page load; a failure only means the first search is slower."""
        user_id = check_user_id(user_id)
        try:
            return self.vectors.prepare_user(user_id, wait=wait)
        except Exception as exc:  # noqa: BLE001 - warming is best effort; search still works
            log.debug("prepare_user failed: %s", exc)
            return False

    def flush(self) -> None:
        """Wait for queued telemetry (latency rows, access counts) to be written."""
        self.recorder.flush()

    def close(self) -> None:
        self.recorder.close()
        self.vectors.close()


def open_memory(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    embedder: Embedder | None = None,
    vectors: VectorStore | None = None,
    llm: LLMProvider | None = None,
    cache: ResultCache | None = None,
    reranker: Reranker | None = None,
) -> MemoryEngine:
    """Build the engine from settings (the environment's when omitted); any part may be injected."""
    from memory_core.embedding import load_embedder
    from memory_core.llm import build_llm
    from memory_core.rerank import load_reranker
    from memory_core.storage.database import create_sql_engine
    from memory_core.storage.migrations import migrate
    from memory_core.vectors import open_vector_store

    settings = settings or Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    sql = create_sql_engine(settings.resolved_database_url)
    migrate(sql)
    repo = SqlRepository(sql)
    embedder = embedder or load_embedder(settings.embedding_model, settings.resolved_model_cache_dir,
                                         settings.embedding_batch_size, settings.embedding_backend,
                                         settings.embedding_precision)
    vectors = vectors or open_vector_store(settings, embedder.dim)
    return MemoryEngine(
        settings=settings, repo=repo, vectors=vectors, embedder=embedder,
        llm=llm or build_llm(settings), cache=cache or open_cache(settings.redis_url, settings.cache_ttl_s,
                                                    settings.resolved_cache_namespace),
        clock=clock, reranker=reranker if reranker is not None else load_reranker(settings.reranker_model or None),
    )
