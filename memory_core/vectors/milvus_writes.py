"""Writing and deleting vectors: rows validated in full before anything is written, grouped by
shard, sent in batches under gRPC's message limit, and the per-user vector cache kept current.

Traps: Milvus Lite 2.5.1 puts string primary keys unescaped into its internal SQLite statements,
so a memory id with a single quote cannot be upserted or deleted: memory ids are limited to
``[A-Za-z0-9._:-]`` (``filters.validate_id``); user ids are not keys and may hold any printable
text. The BM25 function (jieba analysis) roughly halves write throughput on Lite (~1.5k vs
~3.5k rows/s at dim 384); searches are unaffected.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

from memory_core.errors import ValidationError
from memory_core.vectors.base import VectorRecord
from memory_core.vectors.filters import (
    checked_int,
    checked_memory_type,
    ids_filter,
    owned_ids_filter,
    user_filter,
    validate_id,
)
from memory_core.vectors.checks import truncate_utf8
from memory_core.vectors.milvus_shards import ShardedCollections
from memory_core.vectors.schema import TEXT_MAX_BYTES
from memory_core.vectors.user_cache import UserVectors

UPSERT_BATCH_ROWS = 1_000
UPSERT_BATCH_BYTES = 16 * 1024 * 1024  # well under gRPC's message limit
DELETE_BATCH_IDS = 1_000


class MilvusWrites(ShardedCollections):
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by ``memory_id``; validated in full before anything is written."""
        self._write(records, fresh=False)

    def insert_new(self, records: Sequence[VectorRecord]) -> None:
        """A plain insert for ids never indexed before: Lite's upsert is a delete plus an insert
        and cost 2-5x as much in a 60k-row shard (most of ``add_many`` at 1M memories). Any
        retry or re-index of the same ids goes through ``upsert``, which replaces every copy."""
        self._write(records, fresh=True)

    def _note_written(self, users: set[str]) -> None:
        """Before a write: these users read Strong here for the settle window (milvus_search)."""
        if not self._is_server:
            return
        now = time.monotonic()
        with self._written_lock:
            if len(self._written) > 10_000:  # forget users whose window is long over
                self._written = {u: t for u, t in self._written.items() if now - t < self._settle_s}
            for user in users:
                self._written[user] = now

    def _row(self, record: VectorRecord) -> dict[str, Any]:
        content_hash = record.content_hash
        if not isinstance(content_hash, str) or len(content_hash.encode("utf-8")) > 128:
            raise ValidationError("content_hash must be a string of at most 128 bytes")
        if not isinstance(record.text, str):
            raise ValidationError("text must be a string")
        return {
            "memory_id": validate_id(record.memory_id, "memory_id"),
            "user_id": validate_id(record.user_id, "user_id"),
            "embedding": self._vector(record.vector, f"vector of {record.memory_id!r}"),
            # Only the keyword index reads this field; chunks are far below the limit.
            "text": truncate_utf8(record.text, TEXT_MAX_BYTES),
            "importance": checked_int(record.importance, "importance"),
            "created_at": checked_int(record.created_at, "created_at"),
            "expires_at": checked_int(record.expires_at, "expires_at"),
            "memory_type": checked_memory_type(record.memory_type),
            "content_hash": content_hash,
        }

    def _write(self, records: Sequence[VectorRecord], fresh: bool) -> None:
        latest: dict[str, dict[str, Any]] = {}
        for record in records:  # a repeated id in one call: the last one wins, no duplicates
            row = self._row(record)
            latest.pop(row["memory_id"], None)
            latest[row["memory_id"]] = row
        self._note_written({row["user_id"] for row in latest.values()})
        by_shard: dict[str, list[dict[str, Any]]] = {}
        for row in latest.values():  # a memory never changes user, so it always lands in one shard
            by_shard.setdefault(self._name_for(row["user_id"]), []).append(row)
        for name, rows in by_shard.items():
            batch: list[dict[str, Any]] = []
            batch_bytes = 0
            for row in rows:
                row_bytes = len(row["text"].encode("utf-8")) + 4 * self._dim + 512
                if batch and (len(batch) >= UPSERT_BATCH_ROWS or batch_bytes + row_bytes > UPSERT_BATCH_BYTES):
                    self._write_batch(name, batch, fresh)
                    batch, batch_bytes = [], 0
                batch.append(row)
                batch_bytes += row_bytes
            if batch:
                self._write_batch(name, batch, fresh)

    def _write_batch(self, name: str, rows: list[dict[str, Any]], fresh: bool) -> None:
        """One insert (fresh ids) or upsert call, then the same cache bookkeeping for both."""
        try:
            with self._guard("insert" if fresh else "upsert"):
                self._writable(name)
                if fresh:
                    self._client.insert(name, rows, timeout=self._timeout)
                elif self._caps.upsert:
                    self._client.upsert(name, rows, timeout=self._timeout)
                else:  # upsert misroutes rows under a partition key here (server_caps.py)
                    self._client.delete(name, filter=ids_filter([r["memory_id"] for r in rows]), timeout=self._timeout)
                    self._client.insert(name, rows, timeout=self._timeout)
        except BaseException:
            if self._vcache is not None:  # outcome unknown: forget these users' cached vectors
                for user in {r["user_id"] for r in rows}:
                    self._vcache.drop_user(user)
            raise
        if self._vcache is not None:
            by_user: dict[str, list[dict[str, Any]]] = {}
            for row in rows:
                by_user.setdefault(row["user_id"], []).append(row)
            for user, mine in by_user.items():
                self._vcache.upserted(user, lambda mine=mine: UserVectors.from_rows(mine, self._dim))

    def delete(self, memory_ids: Sequence[str], user_id: str | None = None) -> None:
        """Delete by id: from the owner's shard when ``user_id`` is given (and only that user's
        rows), else from every shard (a delete of an id a shard does not hold is a no-op there).
        One request instead of 16 was most of a superseding write's time."""
        ids = list(dict.fromkeys(validate_id(m, "memory_id") for m in memory_ids))
        if not ids:
            return
        shards = self._all_shards() if user_id is None else [self._name_for(user_id)]
        try:
            for start in range(0, len(ids), DELETE_BATCH_IDS):
                part = ids[start : start + DELETE_BATCH_IDS]
                expr = ids_filter(part) if user_id is None else owned_ids_filter(part, user_id)
                for name in shards:
                    with self._guard("delete"):
                        if user_id is not None and not self._readable(name):
                            continue  # the user's shard was never created: nothing to delete
                        self._client.delete(name, filter=expr, timeout=self._timeout)
        finally:  # on failure too: some shards may have deleted already
            if self._vcache is not None:
                self._vcache.deleted(ids)

    def delete_user(self, user_id: str) -> None:
        expr = user_filter(user_id)
        name = self._name_for(user_id)
        try:
            with self._guard("delete_user"):
                if self._readable(name):
                    self._client.delete(name, filter=expr, timeout=self._timeout)
        finally:
            if self._vcache is not None:
                self._vcache.drop_user(user_id)
