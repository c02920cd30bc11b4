"""The parts an engine is built from, as one value the pipelines and maintenance jobs take.

Why a bag of ports and not the engine: maintenance (expiry, merge, conflicts, archive,
reconcile) needs the SQL repository, the vector store, the writer's indexing and the clock, but
nothing of the facade. Handing it the engine made every job import ``engine.py`` while the engine
imported the jobs (a cycle hidden by imports inside functions), and let a job reach anything.
The engine builds one ``EngineParts`` and passes it down. A test that swaps a port
(``engine.parts.llm = ...``) swaps it for the facade and the jobs; the write and retrieval
pipelines keep the parts they were built with.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from memory_core.cache import ResultCache
from memory_core.clock import Clock
from memory_core.config import Settings
from memory_core.embedding.base import Embedder
from memory_core.llm.base import LLMProvider
from memory_core.pii_vault import PiiVault
from memory_core.records import MemoryRecord
from memory_core.sql_ports import SqlRepositoryPort
from memory_core.vectors.base import VectorStore


class Indexer(Protocol):
    """Writes the vectors of stored memories and marks their rows written (the write pipeline)."""

    def index_records(self, records: Sequence[MemoryRecord], known: Mapping[str, Any] | None = None) -> Any: ...


class Flusher(Protocol):
    """Waits for queued telemetry (access counts) to be written (the telemetry recorder)."""

    def flush(self, timeout_s: float = 10.0) -> None: ...


@dataclass(eq=False)
class EngineParts:
    settings: Settings
    repo: SqlRepositoryPort
    vectors: VectorStore
    embedder: Embedder
    llm: LLMProvider
    cache: ResultCache
    clock: Clock
    indexer: Indexer
    telemetry: Flusher
    vault: PiiVault  # seals and reveals the user's own contact details (memory_core/pii_vault.py)
    # Two reconciles of one engine run one after the other (see maintenance.reconcile); the lock
    # belongs to the parts they share, not to a module (two engines must not wait on each other).
    reconcile_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def flush(self) -> None:
        """Queued retrievals count as touches: jobs that judge use flush them first."""
        self.telemetry.flush()
