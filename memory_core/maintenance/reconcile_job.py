"""Reconcile: make the vector store match SQL, and the job that runs it under a lease.

``reconcile`` serialises calls that share one engine's parts (a lock in ``EngineParts``); the
job's lease (``run_reconcile``) extends that to several processes sharing one database and
vector store, and gives the scheduler a counts dict like every other maintenance job.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from memory_core.maintenance.locks import run_leased
from memory_core.parts import EngineParts
from memory_core.records import ReconcileReport
from memory_core.types import MemoryStatus
from memory_core.validation import check_user_id


def reconcile(parts: EngineParts, user_id: str | None = None) -> ReconcileReport:
    """Make Milvus match SQL: write missing vectors, remove orphans, re-embed stale ones.

    Idempotent and safe beside concurrent writes: they write SQL first, so a vector is never
    newer than its row, and reconcile therefore reads Milvus *before* SQL. Read the other way
    round, a memory (or a new user's first memory) written between the two reads had a vector
    but no row yet, and was removed as an orphan. Two concurrent calls on one engine run one
    after the other.
    """
    with parts.reconcile_lock:
        written = removed = reembedded = 0
        errors: list[str] = []
        vector_users: list[str] | None = None
        if user_id is None:
            try:
                vector_users = list(parts.vectors.all_user_ids())
            except Exception as exc:
                errors.append(f"listing vector users failed: {exc}")
        users = [check_user_id(user_id)] if user_id is not None else [u for u, _ in parts.repo.user_ids()]
        if vector_users is not None:
            try:
                known = set(users)
                for orphan_user in [u for u in vector_users if u not in known]:
                    if parts.repo.active_hashes(orphan_user):
                        continue  # its first memory landed after the SQL read: not an orphan
                    parts.vectors.delete_user(orphan_user)
                    removed += 1
            except Exception as exc:
                errors.append(f"removing vectors of users SQL no longer has failed: {exc}")
        for uid in users:
            try:
                w, r, e = _reconcile_user(parts, uid)
                written, removed, reembedded = written + w, removed + r, reembedded + e
            except Exception as exc:
                errors.append(f"user {uid!r}: {type(exc).__name__}: {exc}")
        return ReconcileReport(users=len(users), written=written, removed=removed, reembedded=reembedded,
                               errors=errors)


def _reconcile_user(parts: EngineParts, user_id: str) -> tuple[int, int, int]:
    in_milvus = parts.vectors.user_hashes(user_id)  # first: see ``reconcile``
    in_sql = parts.repo.active_hashes(user_id)
    orphans = [mid for mid in in_milvus if mid not in in_sql]
    missing = [mid for mid in in_sql if mid not in in_milvus]
    stale = [mid for mid in in_sql if mid in in_milvus and in_milvus[mid] != in_sql[mid]]
    if orphans:
        # A row restored or re-activated since the SQL read keeps its vector.
        now_active = {mid for mid, r in parts.repo.get_many(orphans).items() if r.status is MemoryStatus.ACTIVE}
        orphans = [mid for mid in orphans if mid not in now_active]
    if orphans:
        parts.vectors.delete(orphans, user_id=user_id)
    # Rows marked pending whose vector is already right (crash after upsert): re-upsert too,
    # since importance/expiry in the vector record may be what changed.
    pending = {r.memory_id for r in parts.repo.pending_vectors(limit=100_000, user_id=user_id)}
    todo = list(dict.fromkeys(missing + stale + [mid for mid in pending if mid in in_sql]))
    records = parts.repo.get_many(todo)
    ordered = [records[mid] for mid in todo if mid in records and records[mid].status is MemoryStatus.ACTIVE]
    for start in range(0, len(ordered), 256):
        parts.indexer.index_records(ordered[start:start + 256])
    if orphans or ordered:
        parts.cache.invalidate_user(user_id)
    return len(missing), len(orphans), len(stale)


def run_reconcile(parts: EngineParts, now: datetime | None = None, *, user_id: str | None = None,
                  wait: bool = False) -> dict[str, Any]:
    """Returns ``{"skipped", "users", "written", "removed", "reembedded", "errors"[, "first_error"]}``.

    ``now`` is accepted for symmetry with the other jobs; reconcile does not depend on time.
    """
    del now

    def body() -> dict[str, Any]:
        report = reconcile(parts, user_id)
        counts: dict[str, Any] = {"users": report.users, "written": report.written, "removed": report.removed,
                                  "reembedded": report.reembedded, "errors": len(report.errors)}
        if report.errors:
            counts["first_error"] = report.errors[0][:300]
        return counts

    return run_leased(parts, "reconcile", body, wait=wait)
