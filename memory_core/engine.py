"""The facade every caller uses: the app's services, the scheduler, benchmarks and tests.

``MemoryEngine`` takes its parts through the constructor (ports: SQL repository, vector store,
embedder, LLM, cache, clock, reranker), so tests and benchmarks swap a backend without
patching. ``open_memory()`` builds the default parts from settings.

The facade validates and delegates: writing (with its near-duplicate and newer-wins steps) to
the write pipeline, searching to the retrieval pipeline, edits and status changes to
``lifecycle_ops``, reconcile to ``maintenance``. Those take ``self.parts`` (an ``EngineParts``), never the engine, so nothing
below the facade imports it.
"""
from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Sequence

from memory_core import lifecycle_ops
from memory_core.cache import ResultCache, open_cache
from memory_core.clock import Clock, SystemClock
from memory_core.config import Settings
from memory_core.embedding.base import Embedder
from memory_core.english_leg import EnglishLeg
from memory_core.engine_jobs import EngineJobs
from memory_core.engine_reads import EngineReads
from memory_core.errors import ValidationError
from memory_core.llm.base import LLMProvider
from memory_core.logs import request_context
from memory_core.maintenance.reconcile_job import reconcile
from memory_core.parts import EngineParts
from memory_core.pii_vault import PiiVault, reveal_response, vault_for
from memory_core.ratelimit import WriteRateLimiter
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
from memory_core.recipes import Recipe, RetrievalOptions
from memory_core.retrieval import RetrievalPipeline
from memory_core.sql_ports import SqlRepositoryPort, check_repository
from memory_core.telemetry import Recorder
from memory_core.text.pii import redact
from memory_core.types import MemoryType
from memory_core.validation import (
    check_add_items,
    check_datetime,
    check_limit,
    check_memory_id,
    check_memory_query,
    check_metadata,
    check_role,
    check_search_filters,
    check_session_id,
    check_user_id,
    clean_text,
)
from memory_core.vectors.base import VectorStore
from memory_core.write_chunks import lasting_constraint
from memory_core.write_pipeline import WritePipeline

log = logging.getLogger(__name__)
_UNSET: Any = lifecycle_ops.UNSET


class MemoryEngine(EngineReads, EngineJobs):
    """The one object callers use. Besides the methods below it offers, from its mixins, the
    reads pages need (``engine_reads``: ``get_many``, ``sessions``, ``session_messages``, the
    analytics aggregates) and the operations side (``engine_jobs``: the job-run log, leases,
    ``database_ok``, ``sql_database``), so no caller reaches into ``repo``."""

    def __init__(
        self,
        settings: Settings,
        repo: SqlRepositoryPort,
        vectors: VectorStore,
        embedder: Embedder,
        llm: LLMProvider,
        cache: ResultCache,
        clock: Clock | None = None,
        reranker: Reranker | None = None,
        vault: PiiVault | None = None,
        english: EnglishLeg | None = None,
    ) -> None:
        repo = check_repository(repo)  # a wrong object fails here, not mid-request
        clock = clock or SystemClock()
        vault = vault or vault_for(settings)
        self.reranker = reranker
        self.recorder = Recorder(repo)
        self.english = english
        self.writer = WritePipeline(settings, repo, vectors, embedder, llm, cache, clock, vault, english)
        self.retriever = RetrievalPipeline(settings, repo, vectors, embedder, llm, cache, clock,
                                           self.recorder, reranker, english=english)
        self.parts = EngineParts(settings=settings, repo=repo, vectors=vectors, embedder=embedder, llm=llm,
                                 cache=cache, clock=clock, indexer=self.writer, telemetry=self.recorder, vault=vault)
        self.write_limiter = WriteRateLimiter(settings.write_limit_chars_per_minute)

    # The ports, read from ``parts`` (one place: the jobs see what the facade sees).
    @property
    def settings(self) -> Settings:
        return self.parts.settings

    @property
    def repo(self) -> SqlRepositoryPort:
        """The SQL port, for the engine's own parts and for tests; services and the API use the
        facade's methods instead (``tests/test_layers.py`` holds them to it)."""
        return self.parts.repo

    @property
    def vectors(self) -> VectorStore:
        return self.parts.vectors

    @property
    def embedder(self) -> Embedder:
        return self.parts.embedder

    @property
    def llm(self) -> LLMProvider:
        return self.parts.llm

    @property
    def cache(self) -> ResultCache:
        return self.parts.cache

    @property
    def clock(self) -> Clock:
        return self.parts.clock

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
        recipe: Recipe | str | None = None,
    ) -> SearchResponse:
        """The user's most useful memories for ``query``, with score parts and a context block.

        ``recipe`` picks the retrieval variant (memory_core/recipes.py: a ``Recipe`` or a name
        such as ``"bm25"``; default ``FULL`` with the numbers of ``Settings``); ``options`` says
        whether the call reads the cache and counts as a use, and its older ``use_*`` switches
        still describe a variant when no recipe is given.

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
                                         options=options, min_relevance=min_relevance, recipe=recipe)

    def rate(self, text: str, context: str | None = None) -> int:
        """The importance (1-5) the write pipeline would give ``text`` now, without storing it:
        a caller deciding whether a remark is worth remembering asks the same judge that rates it.
        Constraints count as lasting (4 at least), as they are when written."""
        text = clean_text(text, self.settings.max_input_chars)
        analysis = lasting_constraint(self.llm.analyze(redact(text).text, self.clock.now(), context or None))
        return int(analysis.importance)

    def reveal(self, response: SearchResponse) -> SearchResponse:
        """``response`` (from ``search``) as the user it was searched for may read it: the phone
        numbers and e-mail addresses they gave put back in place of their placeholders. For the
        owner's own reads only (the chat, the API and MCP recall); staff pages show placeholders.
        ``search`` itself never reveals, so nothing revealed reaches the result cache."""
        return reveal_response(self.parts.vault, response)

    def revealed_text(self, record: MemoryRecord) -> str:
        """A memory's text as its owner may read it (``reveal``, for one record)."""
        vault = self.parts.vault
        return vault.reveal(record.content, vault.unseal(record.sealed))

    def get(self, memory_id: str, user_id: str | None = None) -> MemoryRecord:
        """A memory by id; with ``user_id``, only if it belongs to that user (no existence leak)."""
        return lifecycle_ops.get(self.parts, memory_id, user_id)

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
        return lifecycle_ops.update(self.parts, memory_id, actor=actor, content=content, importance=importance,
                                    memory_type=memory_type, expires_at=expires_at, user_id=user_id, note=note)

    def expire(self, memory_id: str, *, actor: str, user_id: str | None = None, note: str = "") -> MemoryRecord:
        """Take a memory out of retrieval (kept, restorable); its vector is removed."""
        return lifecycle_ops.expire(self.parts, memory_id, actor=actor, user_id=user_id, note=note)

    def restore(self, memory_id: str, *, actor: str, user_id: str | None = None, note: str = "") -> MemoryRecord:
        """Bring an expired, superseded or archived memory back into retrieval (re-indexed)."""
        return lifecycle_ops.restore(self.parts, memory_id, actor=actor, user_id=user_id, note=note)

    def delete(self, memory_id: str, *, actor: str, user_id: str | None = None, note: str = "") -> None:
        """Hard-delete one memory (row, vector, archive line). The history keeps who deleted what;
        the memories it replaced become current again (see ``lifecycle_ops.delete``)."""
        lifecycle_ops.delete(self.parts, memory_id, actor=actor, user_id=user_id, note=note)

    def delete_user(self, user_id: str, *, actor: str, note: str = "erasure request") -> int:
        """Erase everything of a user: memories, vectors, messages, archive file, and the content
        kept in their audit history (the history keeps that an erasure happened, by whom and when)."""
        return lifecycle_ops.delete_user(self.parts, user_id, actor=actor, note=note)

    # ---- messages (provenance) ------------------------------------------------------------
    def record_message(self, *, message_id: str, user_id: str, session_id: str, role: str, content: str,
                       at: datetime | None = None, meta: dict[str, Any] | None = None) -> None:
        """Store one chat message (provenance). ``role`` is "user" or "assistant". ``meta`` is what
        the caller needs to show the message again (a chat reply: the ids and scores of the
        memories it used), a JSON dict of at most ``max_metadata_bytes``; it is stored as given,
        so it should hold ids and numbers, not user text (which only ``content`` has redacted)."""
        session = check_session_id(session_id)
        if session is None:
            raise ValidationError("session_id is required for a message")
        self.repo.add_message(message_id=check_memory_id(message_id), user_id=check_user_id(user_id, new=True),
                              session_id=session, role=check_role(role),
                              content=redact(clean_text(content, self.settings.max_input_chars)).text,
                              at=check_datetime(at, "at") or self.clock.now(),
                              meta=check_metadata(meta, self.settings.max_metadata_bytes, "meta"))

    def messages(self, message_ids: Sequence[str]) -> list[dict[str, Any]]:
        if isinstance(message_ids, (str, bytes)) or not isinstance(message_ids, Sequence):
            raise ValidationError(f"message_ids must be a list of ids, got {type(message_ids).__name__}")
        return self.repo.messages([m for m in message_ids if isinstance(m, str)])

    # ---- repair ---------------------------------------------------------------------------
    def reconcile(self, user_id: str | None = None) -> ReconcileReport:
        """Make Milvus match SQL: write missing vectors, remove orphans, re-embed stale ones
        (``maintenance.reconcile``: idempotent, safe beside concurrent writes; two calls on one
        engine run one after the other)."""
        return reconcile(self.parts, user_id)

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
            "english_model": self.english.model if self.english else None,
            # Set while a damaged Milvus Lite file's index is rebuilt from SQL (``vector_open``).
            "vectors_rebuilding": bool(getattr(self.vectors, "rebuilding", False)),
            "vectors_note": str(getattr(self.vectors, "outcome", "") or ""),
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
    repo: SqlRepositoryPort | None = None,
    english: EnglishLeg | None | bool = True,
) -> MemoryEngine:
    """Build the engine from settings (the environment's when omitted); any part may be injected.

    ``repo``: the SQL repository (any ``sql_ports.SqlRepositoryPort``; checked here, a
    ``TypeError`` names what it lacks). It is used as given: its schema must already be migrated
    (``storage.migrations.migrate``), and ``Settings.database_url`` is then not opened at all
    (the Redis cache's namespace still comes from ``Settings``: point ``database_url`` at the
    same database, or set ``CACHE_NAMESPACE``, when replicas share a Redis).

    ``english``: the English leg (``memory_core/english_leg.py``); ``True`` loads the one
    ``Settings.english_embedding_model`` names, ``False``/``None`` runs without it."""
    from memory_core.embedding import load_embedder
    from memory_core.english_leg import load_english_leg
    from memory_core.llm import build_llm
    from memory_core.rerank import load_reranker
    from memory_core.storage.database import create_sql_engine
    from memory_core.storage.migrations import migrate
    from memory_core.storage.repository import SqlRepository
    from memory_core.vector_open import open_vectors, start_rebuild

    settings = settings or Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if repo is not None:
        repo = check_repository(repo)
    else:
        sql = create_sql_engine(settings.resolved_database_url)
        migrate(sql)
        repo = SqlRepository(sql)
    embedder = embedder or load_embedder(settings.embedding_model, settings.resolved_model_cache_dir,
                                         settings.embedding_batch_size, settings.embedding_backend,
                                         settings.embedding_precision)
    # The shared cache records each user's last write for every replica; the store reads with
    # bounded staleness for users with none recent (docs/scaling.md, "Consistency"). An
    # in-process cache cannot see other replicas' writes: without Redis every search reads Strong.
    cache = cache or open_cache(settings.redis_url, settings.cache_ttl_s, settings.resolved_cache_namespace,
                                clock=clock, settle_s=settings.milvus_settle_s if settings.redis_url else 0.0)
    vectors = vectors or open_vectors(settings, embedder.dim, cache.settled)
    if english is True:
        english = load_english_leg(settings, repo)
    engine = MemoryEngine(
        settings=settings, repo=repo, vectors=vectors, embedder=embedder,
        llm=llm or build_llm(settings),
        cache=cache,
        clock=clock, reranker=reranker if reranker is not None else load_reranker(settings.reranker_model or None),
        english=english or None,
    )
    start_rebuild(engine.parts, engine.reconcile)  # only when a damaged Lite file was replaced
    return engine
