"""Searching and scanning the store: exact dense search (from the per-user cache when it holds
the user, else in the user's shard), BM25 keyword search, and the scans reconcile makes.

Traps: IVF / HNSW keep only ~half of the true top-20 under a ``user_id`` filter, so the dense
index is FLAT (exact). ``filter_params`` is unsupported on Lite and naive filter strings are
injectable: every filter comes from ``memory_core.vectors.filters``. ``TEXT_MATCH`` filters and
``run_analyzer`` are not implemented by Lite 2.5.1.
"""
from __future__ import annotations

import time
from typing import Any, Iterable, Sequence

import numpy as np

from memory_core.errors import ValidationError
from memory_core.vectors.base import KeywordSearchUnavailable, VectorFilter, VectorHit
from memory_core.vectors.filters import build_filter, user_filter
from memory_core.vectors.checks import truncate_utf8
from memory_core.vectors.milvus_user_load import UserVectorLoading
from memory_core.vectors.schema import TEXT_MAX_BYTES

SEARCH_BATCH = 256  # query vectors per batched search request
_OUTPUT_ID = ["memory_id"]


class MilvusSearch(UserVectorLoading):
    def search_dense(self, vector: np.ndarray, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """Exact cosine search; ``score`` is the cosine similarity in [-1, 1]."""
        data = self._checked_vector(vector, "query vector")
        expr = build_filter(flt)
        limit = self._limit(limit)
        cached = self._cached_user(flt.user_id)
        if cached is not None:
            return cached.search(data, flt, limit)
        return self._search("search_dense", flt.user_id, data.tolist(), "embedding", "COSINE", expr, limit)

    def search_dense_many(self, vectors: Sequence[np.ndarray], flt: VectorFilter, limit: int) -> list[list[VectorHit]]:
        """Several exact cosine searches in one request per ``SEARCH_BATCH`` vectors (same filter)."""
        if type(self).search_dense is not MilvusSearch.search_dense:
            # A subclass that customises single searches (a wrapper, a fault injector) keeps control.
            return super().search_dense_many(vectors, flt, limit)
        checked = [self._checked_vector(v, f"query vector {i}") for i, v in enumerate(vectors)]
        expr = build_filter(flt)
        limit = self._limit(limit)
        if not checked:
            return []
        cached = self._cached_user(flt.user_id)
        if cached is not None:
            return cached.search_many(np.stack(checked), flt, limit)
        data = [v.tolist() for v in checked]
        name = self._name_for(flt.user_id)
        out: list[list[VectorHit]] = []
        for start in range(0, len(data), SEARCH_BATCH):
            part = data[start : start + SEARCH_BATCH]
            with self._guard("search_dense"):
                if not self._readable(name):
                    return [[] for _ in data]
                result = self._client.search(
                    name,
                    data=part,
                    anns_field="embedding",
                    filter=expr,
                    limit=limit,
                    search_params={"metric_type": "COSINE"},
                    output_fields=_OUTPUT_ID,
                    timeout=self._timeout,
                    **self._read_consistency(flt.user_id),
                )
            out.extend(self._hits([rows]) for rows in (result or [[] for _ in part]))
        return out

    def search_keyword(self, text: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """BM25 over the stored text; ``[]`` for text with no indexable token. On a server without
        BM25 (``native_keyword`` False) this is an error: the caller runs the keyword leg in SQL."""
        if not self._keyword_in_milvus:
            raise KeywordSearchUnavailable(
                f"{self._caps.label} has no BM25 full-text search (Milvus 2.5+ has); "
                "the keyword leg must come from SQL (memory_core.sql_keyword)")
        if not isinstance(text, str):
            raise ValidationError("keyword query must be a string")
        expr = build_filter(flt)
        limit = self._limit(limit)
        query = truncate_utf8(text, TEXT_MAX_BYTES)
        if not query.strip():
            return []
        return self._search("search_keyword", flt.user_id, query, "sparse", "BM25", expr, limit)

    def _search(self, op: str, user_id: str, data: Any, field: str, metric: str, expr: str,
                limit: int) -> list[VectorHit]:
        """One search in the user's shard collection (dense and keyword legs differ only in
        the field searched and its metric)."""
        name = self._name_for(user_id)
        with self._guard(op):
            if not self._readable(name):
                return []
            result = self._client.search(
                name,
                data=[data],
                anns_field=field,
                filter=expr,
                limit=limit,
                search_params={"metric_type": metric},
                output_fields=_OUTPUT_ID,
                timeout=self._timeout,
                **self._read_consistency(user_id),
            )
        return self._hits(result)

    def _read_consistency(self, user_id: str) -> dict[str, str]:
        """On a server, a Bounded read for a user the result cache knows to be settled (no write
        within ``Settings.milvus_settle_s``, longer than the server's grace time): it sees every
        vector that user has, without waiting for a time tick. Otherwise nothing: the
        collection's Strong, also for a user whose vectors this store wrote within the window
        (a write's own conflict check searches before the cache hears of the write). Embedded
        Lite reads its own writes either way."""
        if not self._is_server or self._settled is None or self._wrote_lately(user_id):
            return {}
        return {"consistency_level": "Bounded"} if self._settled(user_id) else {}

    def _wrote_lately(self, user_id: str) -> bool:
        with self._written_lock:
            at = self._written.get(user_id)
        return at is not None and time.monotonic() - at < self._settle_s

    # ---- scans (reconcile, diagnostics) --------------------------------------------------------
    def user_hashes(self, user_id: str) -> dict[str, str]:
        expr = user_filter(user_id)
        return {
            str(row["memory_id"]): str(row["content_hash"])
            for row in self._iterate(self._name_for(user_id), expr, ["memory_id", "content_hash"], "user_hashes")
        }

    def all_user_ids(self) -> Iterable[str]:
        """Distinct user ids; a full scan, meant for the periodic reconcile job."""
        seen: set[str] = set()
        for name in self._all_shards():
            for row in self._iterate(name, 'memory_id != ""', ["user_id"], "all_user_ids"):
                seen.add(str(row["user_id"]))
        return sorted(seen)

    def count(self) -> int:
        total = 0
        for name in self._all_shards():
            with self._guard("count"):
                rows = self._client.query(name, filter="", output_fields=["count(*)"], timeout=self._timeout)
            total += int(rows[0]["count(*)"]) if rows else 0
        return total
