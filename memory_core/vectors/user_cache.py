"""A bounded, write-through cache of whole users' vectors for exact in-process dense search.

Why: on Milvus Lite every filtered FLAT search scans the whole (shard) collection, so the dense
leg costs ~12 ms p50 at 1M memories even with 64 shards, while an exact numpy scan of one user's
1,000 vectors costs ~0.3 ms. A user's vectors are loaded once (one query on their shard), then
kept current by the store's own writes: ``upsert`` / ``delete`` / ``delete_user`` update or drop
entries after Milvus accepted them, so every write path (chat, edits, jobs, imports, reconcile,
erasure) is covered because all of them go through the store. Results are exact: the same
filter is applied in numpy and cosine is computed on normalised vectors, as Milvus does.

Only used embedded: a Lite file is locked to one process, and every store instance on the same
file in this process shares one cache (``shared_cache``), so no writer can bypass it. A Milvus
server (several app processes) never uses it.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from memory_core.vectors.base import VectorFilter, VectorHit

DEFAULT_MAX_ROWS = 200_000  # ~300 MB of float32 384-d vectors plus ids
SCORE_BLOCK_CELLS = 4_000_000  # scores computed at once by search_many (16 MB of float32)


@dataclass
class UserVectors:
    """One user's active vectors with the fields a ``VectorFilter`` can test."""

    ids: np.ndarray  # object (str)
    vectors: np.ndarray  # float32 (n, dim), rows L2-normalised
    importance: np.ndarray  # int64
    created_at: np.ndarray  # int64
    expires_at: np.ndarray  # int64, 0 = never
    memory_type: np.ndarray  # object (str)

    @property
    def rows(self) -> int:
        return len(self.ids)

    @classmethod
    def from_rows(cls, rows: Sequence[dict], dim: int) -> "UserVectors":
        vectors = np.asarray([r["embedding"] for r in rows], dtype=np.float32).reshape(len(rows), dim)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms > 0, norms, 1.0)
        return cls(
            ids=np.asarray([str(r["memory_id"]) for r in rows], dtype=object),
            vectors=vectors,
            importance=np.asarray([int(r["importance"]) for r in rows], dtype=np.int64),
            created_at=np.asarray([int(r["created_at"]) for r in rows], dtype=np.int64),
            expires_at=np.asarray([int(r["expires_at"]) for r in rows], dtype=np.int64),
            memory_type=np.asarray([str(r["memory_type"]) for r in rows], dtype=object),
        )

    def without(self, memory_ids: Iterable[str]) -> "UserVectors":
        drop = set(memory_ids)
        keep = np.fromiter((i not in drop for i in self.ids), dtype=bool, count=self.rows)
        return UserVectors(self.ids[keep], self.vectors[keep], self.importance[keep], self.created_at[keep],
                           self.expires_at[keep], self.memory_type[keep])

    def merged(self, other: "UserVectors") -> "UserVectors":
        """``other`` replaces rows with the same id and adds the rest."""
        base = self.without(other.ids.tolist())
        return UserVectors(
            np.concatenate([base.ids, other.ids]), np.concatenate([base.vectors, other.vectors]),
            np.concatenate([base.importance, other.importance]), np.concatenate([base.created_at, other.created_at]),
            np.concatenate([base.expires_at, other.expires_at]), np.concatenate([base.memory_type, other.memory_type]),
        )

    def search(self, query: np.ndarray, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """Exact filtered cosine top-``limit``, same semantics as ``filters.build_filter``."""
        return self.search_many(np.asarray(query, dtype=np.float32)[None, :], flt, limit)[0]

    def search_many(self, queries: np.ndarray, flt: VectorFilter, limit: int) -> list[list[VectorHit]]:
        """``search`` for each row of ``queries`` (m, dim): the filter is applied once and all
        scores come from one matrix product (a write's near-duplicate and conflict checks search
        a whole batch against the same user; one search per vector was a tenth of add_many)."""
        if self.rows == 0 or len(queries) == 0:
            return [[] for _ in range(len(queries))]
        mask = np.ones(self.rows, dtype=bool)
        if flt.now is not None:
            alive = (self.expires_at == 0) | (self.expires_at > int(flt.now))
            if flt.fade_from:
                alive |= self.importance >= int(flt.fade_from)
            mask &= alive
        if flt.memory_types:
            mask &= np.isin(self.memory_type, [str(getattr(t, "value", t)) for t in flt.memory_types])
        if flt.min_importance is not None:
            mask &= self.importance >= int(flt.min_importance)
        created = np.ones(self.rows, dtype=bool)
        if flt.created_from is not None:
            created &= self.created_at >= int(flt.created_from)
        if flt.created_to is not None:
            created &= self.created_at < int(flt.created_to)
        if flt.or_memory_ids and (flt.created_from is not None or flt.created_to is not None):
            told = set(flt.or_memory_ids)
            created |= np.fromiter((i in told for i in self.ids), dtype=bool, count=self.rows)
        mask &= created
        if flt.memory_ids:  # a set lookup: np.isin on object arrays sorts both sides
            wanted = set(flt.memory_ids)
            mask &= np.fromiter((i in wanted for i in self.ids), dtype=bool, count=self.rows)
        index = np.flatnonzero(mask)
        if index.size == 0:
            return [[] for _ in range(len(queries))]
        q = np.asarray(queries, dtype=np.float32)
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        ids = self.ids[index]
        matrix = self.vectors[index]
        k = min(limit, index.size)
        out: list[list[VectorHit]] = []
        block = max(1, SCORE_BLOCK_CELLS // index.size)  # a big user times a big batch stays small
        for start in range(0, q.shape[0], block):
            block_scores = matrix @ q[start:start + block].T  # (n, block)
            for column in range(block_scores.shape[1]):
                scores = block_scores[:, column]
                top = np.argpartition(-scores, k - 1)[:k] if k < index.size else np.arange(index.size)
                top = top[np.lexsort((ids[top].astype(str), -scores[top]))]
                out.append([VectorHit(memory_id=str(ids[i]), score=float(scores[i]), rank=r) for r, i in enumerate(top)])
        return out


class UserVectorCache:
    """LRU of ``UserVectors`` bounded by total rows; thread-safe. A per-user version counter
    stops a load that raced with a write from installing a stale entry."""

    def __init__(self, max_rows: int = DEFAULT_MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._data: OrderedDict[str, UserVectors] = OrderedDict()
        self._rows = 0
        self._version: dict[str, int] = {}
        self._epoch = 0  # bumped by clear(): invalidates every load in flight
        self._lock = threading.Lock()
        self.hits = 0
        self.loads = 0

    def get(self, user_id: str) -> UserVectors | None:
        with self._lock:
            entry = self._data.get(user_id)
            if entry is not None:
                self._data.move_to_end(user_id)
                self.hits += 1
            return entry

    def ticket(self, user_id: str) -> tuple[int, int]:
        """Take before loading from Milvus; pass to ``install``."""
        with self._lock:
            return self._epoch, self._version.get(user_id, 0)

    def install(self, user_id: str, entry: UserVectors, ticket: tuple[int, int]) -> None:
        with self._lock:
            if ticket != (self._epoch, self._version.get(user_id, 0)) or entry.rows > self.max_rows:
                return  # a write happened during the load (or the user is too big): do not cache
            self.loads += 1
            self._put(user_id, entry)

    def _put(self, user_id: str, entry: UserVectors) -> None:
        old = self._data.pop(user_id, None)
        self._rows -= old.rows if old is not None else 0
        self._data[user_id] = entry
        self._rows += entry.rows
        while self._rows > self.max_rows and self._data:
            _, evicted = self._data.popitem(last=False)
            self._rows -= evicted.rows

    def _bump(self, user_id: str) -> None:
        self._version[user_id] = self._version.get(user_id, 0) + 1

    def upserted(self, user_id: str, rows: Callable[[], UserVectors]) -> None:
        """Rows of ``user_id`` were written to Milvus: merge them into a cached entry. ``rows``
        is only called for a cached user (bulk writes of uncached users cost nothing here)."""
        with self._lock:
            self._bump(user_id)
            current = self._data.get(user_id)
            if current is not None:
                self._put(user_id, current.merged(rows()))

    def deleted(self, memory_ids: Sequence[str]) -> None:
        """Ids were deleted (owners unknown): drop them from every cached user."""
        drop = set(memory_ids)
        with self._lock:
            for user_id, entry in list(self._data.items()):
                if not drop.isdisjoint(entry.ids):  # the scan in C: every cached user's ids, per delete
                    self._bump(user_id)
                    self._put(user_id, entry.without(drop))
            self._epoch += 1  # loads in flight may have read the deleted rows: retire them

    def drop_user(self, user_id: str) -> None:
        with self._lock:
            self._bump(user_id)
            old = self._data.pop(user_id, None)
            self._rows -= old.rows if old is not None else 0

    def clear(self) -> None:
        """Forget everything (after a write whose outcome is unknown)."""
        with self._lock:
            self._data.clear()
            self._rows = 0
            self._epoch += 1

    @property
    def rows(self) -> int:
        return self._rows


_SHARED: dict[tuple[str, str], UserVectorCache] = {}
_SHARED_LOCK = threading.Lock()


def shared_cache(key: tuple[str, str], max_rows: int = DEFAULT_MAX_ROWS) -> UserVectorCache:
    """The one cache of a (resolved Lite path, collection) in this process."""
    with _SHARED_LOCK:
        cache = _SHARED.get(key)
        if cache is None:
            cache = _SHARED[key] = UserVectorCache(max_rows)
        return cache
