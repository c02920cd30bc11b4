"""Real backends with a fault switched on: constructor injection, no patching."""
from __future__ import annotations

import os
from typing import Sequence

from memory_core.errors import BackendUnavailable
from memory_core.vectors.base import VectorRecord
from memory_core.vectors.milvus_store import MilvusVectorStore


class FailingWritesStore(MilvusVectorStore):
    """A real Milvus Lite store whose writes fail while ``failing`` is set (Milvus outage)."""

    failing = True

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        if self.failing:
            raise BackendUnavailable("injected: milvus write failed")
        super().upsert(records)


class DownStore(MilvusVectorStore):
    """A real store that answers nothing while ``down`` is set (Milvus unreachable)."""

    down = True

    def _check(self) -> None:
        if self.down:
            raise BackendUnavailable("injected: milvus unavailable")

    def upsert(self, records):  # type: ignore[no-untyped-def]
        self._check()
        super().upsert(records)

    def search_dense(self, vector, flt, limit):  # type: ignore[no-untyped-def]
        self._check()
        return super().search_dense(vector, flt, limit)

    def search_keyword(self, text, flt, limit):  # type: ignore[no-untyped-def]
        self._check()
        return super().search_keyword(text, flt, limit)

    def ping(self) -> bool:
        return not self.down and super().ping()


class DiesOnUpsertStore(MilvusVectorStore):
    """Kills the whole process at the vector write: the SQL commit has happened, nothing else."""

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        os._exit(17)
