"""A damaged Milvus Lite file must not stop the app (issue 19, item 6).

The vector index is a copy: SQL holds every memory, and ``engine.reconcile()`` rewrites every
vector from it. So when the Lite file cannot be opened and no other process holds it (the one
case where "opened by one process only" is the true reason), the file is moved aside, never
deleted (``<name>.damaged-<UTC time>``), a fresh store is opened, and the engine rebuilds the
index from SQL in the background. Until the rebuild ends, searches answer from SQL keyword
search and say so (``degraded=True`` and a notice), and ``engine.health()`` reports it.
"""
from __future__ import annotations

import fcntl
import logging
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from memory_core.errors import BackendUnavailable
from memory_core.vectors.base import VectorFilter, VectorHit, VectorRecord, VectorStore

log = logging.getLogger(__name__)

def held_by_another_process(path: Path) -> bool:
    """Whether a Milvus Lite server (of this or another process) holds ``path``'s lock."""
    lock = path.parent / f".{path.name}.lock"
    if not lock.exists():
        return False
    try:
        with open(lock, "a") as handle:
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(handle, fcntl.LOCK_UN)
        return False
    except OSError:
        return True


def looks_damaged(path: Path) -> bool:
    """A Lite file that failed to open and that nobody holds: truncated, overwritten, not a
    database at all. (A file held by another process is left alone: that is the lock's job.)"""
    if not path.is_file() or held_by_another_process(path):
        return False
    # Readable by us (a permissions problem is the operator's, not damage to repair by moving).
    return os.access(path, os.R_OK | os.W_OK) and os.access(path.parent, os.W_OK)


def move_aside(path: Path, now: datetime | None = None) -> Path:
    """Rename ``path`` to ``<name>.damaged-<UTC time>`` beside it (kept for inspection)."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    os.replace(path, target)
    for sidecar in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if sidecar.exists():
            os.replace(sidecar, sidecar.with_name(f"{sidecar.name}.damaged-{stamp}"))
    return target


class RebuildingStore(VectorStore):
    """The fresh store while the index is rebuilt from SQL: writes go through (so nothing
    written meanwhile is lost), searches refuse until ``finish`` so that retrieval falls back
    to SQL keyword search and marks its answer degraded, rather than answering from a
    half-built index as if it were whole."""

    def __init__(self, inner: VectorStore, moved_to: Path) -> None:
        self.inner = inner
        self.moved_to = moved_to
        self._done = threading.Event()
        self.outcome = "rebuilding the vector index from the database"

    @property
    def rebuilding(self) -> bool:
        return not self._done.is_set()

    def finish(self, outcome: str) -> None:
        self.outcome = outcome
        self._done.set()

    def _searchable(self) -> None:
        if not self._done.is_set():
            raise BackendUnavailable(f"the vector index is being rebuilt from SQL (a damaged Milvus Lite file "
                                     f"was moved to {self.moved_to.name})")

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        self.inner.upsert(records)

    def insert_new(self, records: Sequence[VectorRecord]) -> None:
        self.inner.insert_new(records)

    def delete(self, memory_ids: Sequence[str], user_id: str | None = None) -> None:
        self.inner.delete(memory_ids, user_id)

    def delete_user(self, user_id: str) -> None:
        self.inner.delete_user(user_id)

    def search_dense(self, vector: np.ndarray, flt: VectorFilter, limit: int) -> list[VectorHit]:
        self._searchable()
        return self.inner.search_dense(vector, flt, limit)

    def search_dense_many(self, vectors: Sequence[np.ndarray], flt: VectorFilter, limit: int) -> list[list[VectorHit]]:
        self._searchable()
        return self.inner.search_dense_many(vectors, flt, limit)

    def search_keyword(self, text: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        self._searchable()
        return self.inner.search_keyword(text, flt, limit)

    @property
    def native_keyword(self) -> bool:
        return self.inner.native_keyword

    def backend_info(self) -> dict[str, object]:
        return self.inner.backend_info()

    def user_hashes(self, user_id: str) -> dict[str, str]:
        return self.inner.user_hashes(user_id)

    def all_user_ids(self) -> Iterable[str]:
        return self.inner.all_user_ids()

    def count(self) -> int:
        return self.inner.count()

    def ping(self) -> bool:
        return self.inner.ping()

    def prepare_user(self, user_id: str, wait: bool = False) -> bool:
        return self.inner.prepare_user(user_id, wait)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)  # adapter extras (e.g. ``flush``) pass through
