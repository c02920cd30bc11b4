"""Retrieval telemetry: latency rows and access-count bumps, written in bursts by the recorder."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import case, select, update

from memory_core.storage.base import SqlBase
from memory_core.storage.schema import MemoryRow, RetrievalMetricRow


class TelemetryStore(SqlBase):
    def record_telemetry(self, metrics: Sequence[dict[str, Any]],
                         accesses: Sequence[tuple[Sequence[str], datetime]]) -> None:
        """Latency rows and access bumps queued by searches, in one transaction (one commit for a
        burst of searches instead of two per search). An id bumped twice counts twice and keeps
        the later time, whatever order the bumps arrive in (searches on several threads queue
        them out of order; a late older bump must not move ``last_accessed_at`` back)."""
        with self.session() as s:
            s.add_all(RetrievalMetricRow(**values) for values in metrics)
            for memory_ids, at in accesses:
                if memory_ids:
                    s.execute(
                        update(MemoryRow)
                        .where(MemoryRow.memory_id.in_(list(memory_ids)))
                        .values(access_count=MemoryRow.access_count + 1,
                                last_accessed_at=case((MemoryRow.last_accessed_at > at, MemoryRow.last_accessed_at),
                                                      else_=at))
                    )

    def metrics(self, since: datetime | None = None, limit: int = 100_000) -> list[dict[str, Any]]:
        with self.session() as s:
            stmt = select(RetrievalMetricRow).order_by(RetrievalMetricRow.id.desc()).limit(limit)
            if since is not None:
                stmt = stmt.where(RetrievalMetricRow.at >= since)
            return [
                {c: getattr(row, c) for c in (
                    "at", "user_id", "cache_hit", "degraded", "results", "rewrite_ms", "embed_ms",
                    "search_ms", "rerank_ms", "fetch_ms", "total_ms")}
                for row in s.scalars(stmt)
            ]
