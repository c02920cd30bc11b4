"""SQL access for memories, history, messages, metrics and job runs: ``SqlRepository``.

All queries are built with SQLAlchemy expressions and bound parameters; no SQL text is ever
assembled from input. Methods take and return plain values (``MemoryRecord`` etc.), never
ORM rows, so no caller holds a session.

One repository per concern (``memories``, ``memory_reads``, ``history``, ``messages``,
``telemetry_store``, ``jobs``, each usable alone); ``SqlRepository`` combines them so callers keep
one object.
"""
from __future__ import annotations

from memory_core.storage.history import HistoryStore
from memory_core.storage.jobs import JobStore
from memory_core.storage.memory_reads import MemoryReads
from memory_core.storage.messages import MessageStore
from memory_core.storage.rowmap import SNAPSHOT_FIELDS, snapshot, to_record
from memory_core.storage.telemetry_store import TelemetryStore

__all__ = ["SNAPSHOT_FIELDS", "SqlRepository", "snapshot", "to_record"]


class SqlRepository(MemoryReads, HistoryStore, MessageStore, TelemetryStore, JobStore):
    """Every SQL repository in one object (the engine's SQL port)."""
