"""The vector-store port: what the pipelines need from Milvus (or anything that can stand in).

Only ACTIVE memories have vectors. Filters are structured (``VectorFilter``), never strings:
the adapter turns them into its own filter language with every literal validated and escaped.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from memory_core.errors import MemoryEngineError


class KeywordSearchUnavailable(MemoryEngineError):
    """The store has no keyword (BM25) index: a Milvus server older than 2.5. Callers check
    ``VectorStore.native_keyword`` first and run the keyword leg elsewhere (SQL)."""


@dataclass(frozen=True)
class VectorRecord:
    memory_id: str
    user_id: str
    vector: np.ndarray  # float32, unit length
    text: str  # what the keyword (BM25) index sees
    importance: int
    created_at: int  # epoch seconds
    expires_at: int  # epoch seconds, 0 = never
    memory_type: str
    content_hash: str  # hash of what was embedded; reconcile compares it with SQL


@dataclass(frozen=True)
class VectorFilter:
    """Which vectors a search may return. ``user_id`` is mandatory: searches never cross users."""

    user_id: str
    now: int | None = None  # epoch seconds; when set, vectors with 0 < expires_at <= now are excluded ...
    fade_from: int = 0  # ... unless their importance is at least this (> 0): faded memories stay searchable
    memory_types: tuple[str, ...] = ()
    min_importance: int | None = None
    created_from: int | None = None  # epoch seconds, inclusive
    created_to: int | None = None  # epoch seconds, exclusive
    memory_ids: tuple[str, ...] = ()  # restrict to these ids (e.g. the user's core memories)
    # Admitted whatever their created_at (ORed with the created_from / created_to clauses only;
    # every other clause still applies): memories whose *told* time falls in a time window.
    or_memory_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class VectorHit:
    memory_id: str
    score: float  # cosine similarity (dense) or BM25 score (keyword)
    rank: int  # 0-based rank within its own leg


class VectorStore(ABC):
    """Durable vector index of active memories, partitioned by user."""

    @abstractmethod
    def upsert(self, records: Sequence[VectorRecord]) -> None: ...

    def insert_new(self, records: Sequence[VectorRecord]) -> None:
        """Write vectors of memories that were never indexed (fresh ids). Adapters whose insert
        is cheaper than their upsert override this; retries and re-indexing use ``upsert``."""
        self.upsert(records)

    @abstractmethod
    def delete(self, memory_ids: Sequence[str], user_id: str | None = None) -> None:
        """Remove vectors by id. ``user_id``, when the caller knows it, says every id belongs to
        that user, so a store need only look where that user's rows live (an embedded store
        spread over shards otherwise asks each one); an id of another user is then left alone."""

    @abstractmethod
    def delete_user(self, user_id: str) -> None: ...

    @abstractmethod
    def search_dense(self, vector: np.ndarray, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """Exact (FLAT) cosine search within one user's vectors."""

    def search_dense_many(self, vectors: Sequence[np.ndarray], flt: VectorFilter, limit: int) -> list[list[VectorHit]]:
        """``search_dense`` for several query vectors under one filter, one hit list per vector.

        Why: the write path checks every new chunk of a user for near-duplicates; one batched
        request costs about one filtered scan instead of one per chunk. Adapters that can batch
        override this; the default simply loops.
        """
        return [self.search_dense(vector, flt, limit) for vector in vectors]

    @abstractmethod
    def search_keyword(self, text: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """BM25 search over the stored text within one user's vectors (Chinese-capable analyzer).
        Raises ``KeywordSearchUnavailable`` when ``native_keyword`` is False."""

    @property
    def native_keyword(self) -> bool:
        """Whether ``search_keyword`` works here. False on a Milvus server older than 2.5 (no
        BM25): retrieval then takes the keyword leg from SQL and says so."""
        return True

    def backend_info(self) -> dict[str, object]:
        """What runs behind the store, for health pages (version, where keyword search runs)."""
        return {}

    @abstractmethod
    def user_hashes(self, user_id: str) -> dict[str, str]:
        """memory_id -> content_hash for every vector of one user (for reconcile)."""

    @abstractmethod
    def all_user_ids(self) -> Iterable[str]:
        """Every user id that has at least one vector (for finding orphans of deleted users)."""

    @abstractmethod
    def count(self) -> int: ...

    @abstractmethod
    def ping(self) -> bool:
        """True when the backend answers; never raises."""

    def prepare_user(self, user_id: str, wait: bool = False) -> bool:
        """Get ready to search ``user_id`` (an adapter with a per-user cache loads it now rather
        than in the user's first search). Returns True when the user is ready; the default has
        nothing to prepare and says so."""
        return False

    def close(self) -> None:  # pragma: no cover - default no-op
        pass
