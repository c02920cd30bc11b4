"""Bulk loading of a benchmark corpus through the product's own storage layer.

1M memories cannot go through ``add_many`` in a benchmark budget (the offline write path runs
at ~150-500 memories/s), so the loader writes exactly what the write pipeline would write:
SQL rows through the ORM table (same columns, same expiry rule, ``vector_written=True``) and
vectors through ``VectorStore.upsert`` with the product's ``vector_record`` (same schema,
same BM25 text), and, when the engine has the English leg, the English memories' rows of
``english_vectors`` (the real MiniLM's when the corpus uses the real model, else seeded random
unit vectors: what a search reads and ranks costs the same). Only the per-memory LLM analysis is
replaced by values drawn with the corpus.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np
from sqlalchemy import insert

from memory_core.engine import MemoryEngine
from memory_core.english_leg import reads_english
from memory_core.indexing import index_text
from memory_core.lifecycle import content_hash, epoch, expires_at_for
from memory_core.records import MemoryRecord
from memory_core.storage.schema import EnglishVectorRow, MemoryRow
from memory_core.text.entities import extract_entities
from memory_core.types import MemoryStatus
from memory_core.vectors.base import VectorRecord, VectorStore
from memory_core.vectors.milvus_store import shard_of

from bench.latency.corpus import SentencePool, Spec, UserBatch, iter_users

SQL_CHUNK = 5_000
VECTOR_CHUNK = 4_000  # rows per upsert call (the store splits it into 1,000-row requests)


@lru_cache(maxsize=50_000)
def _entities(text: str) -> tuple[str, ...]:
    try:
        return tuple(extract_entities(text))
    except Exception:  # noqa: BLE001 - entity extraction is decoration here
        return ()


@lru_cache(maxsize=50_000)
def _index_text(text: str, entities: tuple[str, ...]) -> str:
    return index_text(text, entities)


def _vector_record(record: MemoryRecord, vector: np.ndarray) -> VectorRecord:
    """``memory_core.indexing.vector_record`` with its BM25 text memoised: the corpus reuses a
    20k-sentence pool and jieba costs ~0.6 ms per text (10 minutes at 1M uncached)."""
    return VectorRecord(
        memory_id=record.memory_id, user_id=record.user_id, vector=vector,
        text=_index_text(record.content, tuple(record.entities)), importance=record.importance,
        created_at=epoch(record.created_at), expires_at=epoch(record.expires_at),
        memory_type=record.memory_type.value, content_hash=record.content_hash,
    )


def _records(engine: MemoryEngine, batch: UserBatch, start_id: int) -> tuple[list[dict], list[MemoryRecord]]:
    ttl = engine.settings.ttl_days_by_importance
    rows: list[dict] = []
    records: list[MemoryRecord] = []
    for j, text in enumerate(batch.texts):
        importance = int(batch.importance[j])
        at = batch.created_at[j]
        values = dict(
            memory_id=f"b{start_id + j:09d}", user_id=batch.user_id, session_id=None, content=text,
            summary=text[:120], importance=importance, memory_type=batch.memory_types[j].value,
            entities=list(_entities(text)), meta={}, status=MemoryStatus.ACTIVE.value, created_at=at,
            updated_at=at, expires_at=expires_at_for(importance, at, ttl), expired_at=None, source=[],
            access_count=0, last_accessed_at=None, superseded_by=None, merged_from=[], vector_written=True,
            content_hash=content_hash(engine.embedder.name, text),
        )
        rows.append(values)
        fields = {k: v for k, v in values.items() if k in MemoryRecord.__dataclass_fields__}
        fields.update(memory_type=batch.memory_types[j], status=MemoryStatus.ACTIVE)
        records.append(MemoryRecord(**fields))
    return rows, records


def _english_rows(english, records: Sequence[MemoryRecord], real: bool,  # type: ignore[no-untyped-def]
                  rng: np.random.Generator) -> list[dict]:
    """The ``english_vectors`` rows the write path would store for these memories."""
    mine = [r for r in records if reads_english(r.content)]
    if not mine:
        return []
    if real:
        vectors = np.asarray(english.embedder.embed_passages([r.content for r in mine]), dtype=np.float32)
    else:
        vectors = rng.standard_normal((len(mine), english.embedder.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [{"memory_id": memory_id, "user_id": user_id, "model": english.model, "content_hash": content_hash,
             "vector": vector} for memory_id, user_id, content_hash, vector in english.rows(zip(mine, vectors))]


def load_corpus(engine: MemoryEngine, spec: Spec, pool: SentencePool, now: datetime,
                vectors_for: Callable[[UserBatch], np.ndarray] | None = None,
                writers: Sequence[VectorStore] = (), keep: set[str] = frozenset(),
                progress: Callable[[str], None] = print) -> tuple[dict[str, float], dict[str, UserBatch]]:
    """Write ``spec``'s corpus into ``engine``'s SQL database and vector store.

    ``vectors_for`` replaces the synthetic per-user vectors (the 10k corpus uses the real
    model). ``writers`` are extra store instances on the same Milvus file: upserts run on
    ``len(writers)`` threads, a user's rows always on the writer of its shard (measured 2.5x
    faster than one writer on Lite: the Lite server indexes two collections in parallel).
    Returns build timings and the batches of the users in ``keep`` (for the exact baseline).
    """
    stores = list(writers) or [engine.vectors]
    shards = getattr(engine.vectors, "shards", 1)
    started = time.perf_counter()
    sql_s = 0.0
    pending_rows: list[dict] = []
    pending_vecs: list[list[VectorRecord]] = [[] for _ in stores]
    kept: dict[str, UserBatch] = {}
    next_id = 0
    table = MemoryRow.__table__
    english = engine.english
    pending_english: list[dict] = []
    rng = np.random.default_rng(spec.seed)
    pool_exec = ThreadPoolExecutor(max_workers=len(stores), thread_name_prefix="bench-writer")
    inflight: list[Future[None]] = []

    def flush_sql() -> None:
        nonlocal sql_s
        if pending_rows:
            t = time.perf_counter()
            with engine.repo.session() as session:
                session.execute(insert(table), pending_rows)
                if pending_english:
                    session.execute(insert(EnglishVectorRow.__table__), pending_english)
            sql_s += time.perf_counter() - t
            pending_rows.clear()
            pending_english.clear()

    def flush_vec(k: int) -> None:
        if pending_vecs[k]:
            batch, pending_vecs[k] = pending_vecs[k], []
            inflight.append(pool_exec.submit(stores[k].upsert, batch))
        while len(inflight) > 2 * len(stores):  # bounded memory: wait for the oldest batch
            inflight.pop(0).result()

    try:
        for index, batch in enumerate(iter_users(spec, pool, now)):
            vectors = vectors_for(batch) if vectors_for is not None else batch.vectors
            if batch.user_id in keep:
                kept[batch.user_id] = UserBatch(batch.user_id, batch.texts, vectors, batch.importance,
                                                batch.created_at, batch.memory_types)
            rows, records = _records(engine, batch, next_id)
            next_id += len(rows)
            pending_rows.extend(rows)
            k = shard_of(batch.user_id, shards) % len(stores)
            pending_vecs[k].extend(_vector_record(r, v) for r, v in zip(records, vectors))
            if english is not None:
                pending_english.extend(_english_rows(english, records, vectors_for is not None, rng))
            if len(pending_rows) >= SQL_CHUNK:
                flush_sql()
            if len(pending_vecs[k]) >= VECTOR_CHUNK:
                flush_vec(k)
            if (index + 1) % max(1, spec.users // 10) == 0:
                rate = next_id / (time.perf_counter() - started)
                progress(f"  [{spec.label}] loaded {next_id:,}/{spec.total:,} ({rate:,.0f}/s, load {os.getloadavg()[0]:.2f})")
        flush_sql()
        for k in range(len(stores)):
            flush_vec(k)
        for f in inflight:
            f.result()
    finally:
        pool_exec.shutdown(wait=True)
    total = time.perf_counter() - started
    return ({"build_s": round(total, 1), "sql_s": round(sql_s, 1), "writers": len(stores),
             "rows_per_s": round(spec.total / total, 1)}, kept)
