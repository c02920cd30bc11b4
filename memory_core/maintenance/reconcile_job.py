"""The reconcile job: ``engine.reconcile`` (make Milvus match SQL) under the job lease.

``engine.reconcile`` already serialises calls within one process; the lease extends that to
several processes sharing one database and vector store, and gives the scheduler a counts
dict like every other maintenance job.
"""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_core.maintenance.locks import run_leased

if TYPE_CHECKING:
    from memory_core.engine import MemoryEngine


def run_reconcile(engine: "MemoryEngine", now: datetime | None = None, *, user_id: str | None = None,
                  wait: bool = False) -> dict[str, Any]:
    """Returns ``{"skipped", "users", "written", "removed", "reembedded", "errors"[, "first_error"]}``.

    ``now`` is accepted for symmetry with the other jobs; reconcile does not depend on time.
    """
    del now

    def body() -> dict[str, Any]:
        report = engine.reconcile(user_id)
        counts: dict[str, Any] = {"users": report.users, "written": report.written, "removed": report.removed,
                                  "reembedded": report.reembedded, "errors": len(report.errors)}
        if report.errors:
            counts["first_error"] = report.errors[0][:300]
        return counts

    return run_leased(engine, "reconcile", body, wait=wait)
