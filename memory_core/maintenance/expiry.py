"""Forgetting on schedule: expire what is past its date, but keep alive what is still used.

Expired memories are not deleted: they leave retrieval and Milvus and stay in SQL, where staff
can restore them (``engine.restore`` re-indexes). Extension happens *before* expiry (a
look-ahead window): once a memory is past ``expires_at`` retrieval stops returning it, so it
could never be retrieved again to earn its extension.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Iterator

from sqlalchemy import select

from memory_core.clock import as_utc
from memory_core.maintenance.importance import keep_alive_until
from memory_core.maintenance.locks import SCHEDULER_ACTOR, run_leased
from memory_core.records import MemoryRecord
from memory_core.storage.repository import to_record
from memory_core.storage.schema import MemoryRow
from memory_core.types import MemoryStatus

if TYPE_CHECKING:
    from memory_core.engine import MemoryEngine

log = logging.getLogger(__name__)


def _near_expiry(engine: "MemoryEngine", horizon: datetime, batch: int) -> Iterator[MemoryRecord]:
    """Active, once-retrieved memories due by ``horizon``, in keyset pages (no long transaction)."""
    after = ""
    while True:
        with engine.repo.session() as session:
            rows = list(session.scalars(
                select(MemoryRow)
                .where(MemoryRow.status == MemoryStatus.ACTIVE.value, MemoryRow.expires_at.is_not(None),
                       MemoryRow.expires_at <= horizon, MemoryRow.last_accessed_at.is_not(None),
                       MemoryRow.memory_id > after)
                .order_by(MemoryRow.memory_id)
                .limit(batch)
            ))
            records = [to_record(row) for row in rows]
        if not records:
            return
        yield from records
        after = records[-1].memory_id


def extend_used(engine: "MemoryEngine", now: datetime, actor: str = SCHEDULER_ACTOR) -> tuple[int, int, int]:
    """Push out the expiry of near-due memories that earned it. Returns (checked, extended, errors).

    ``actor`` is written into each memory's history (a staff-started run names the staff member)."""
    settings = engine.settings
    horizon = now + timedelta(days=settings.expiry_lookahead_days)
    checked = extended = errors = 0
    for record in _near_expiry(engine, horizon, settings.maintenance_batch_size):
        checked += 1
        until, score = keep_alive_until(record, now, settings)
        if until is None:
            continue
        try:
            engine.update(record.memory_id, actor=actor, expires_at=until,
                          note=f"kept alive until {until.date().isoformat()}: {score.describe()}, "
                               f"retrieved {record.access_count} times")
            extended += 1
        except Exception as exc:  # one bad row must not stop the others
            log.warning("extending %s failed: %s", record.memory_id, exc)
            errors += 1
    return checked, extended, errors


def expire_past_due(engine: "MemoryEngine", now: datetime, actor: str = SCHEDULER_ACTOR) -> tuple[int, int]:
    """Expire every active memory past ``expires_at``. Returns (expired, errors); ``actor`` as above."""
    expired = 0
    failed: set[str] = set()
    batch = engine.settings.maintenance_batch_size
    while True:
        due = [r for r in engine.repo.due_for_expiry(now, limit=batch + len(failed)) if r.memory_id not in failed]
        if not due:
            return expired, len(failed)
        for record in due:
            try:
                due = record.expires_at.date().isoformat() if record.expires_at else "?"
                engine.expire(record.memory_id, actor=actor, note=f"expiry date {due} reached")
                expired += 1
            except Exception as exc:
                log.warning("expiring %s failed: %s", record.memory_id, exc)
                failed.add(record.memory_id)


def expire_due(engine: "MemoryEngine", now: datetime | None = None, *, wait: bool = False,
               actor: str = SCHEDULER_ACTOR) -> dict[str, Any]:
    """The daily expiry job: extend what is still used, then expire what is past due.

    ``actor`` names who ran it in the history of every memory it extends or expires:
    ``"scheduler"`` for the background job, the staff member's actor for a run started by hand.

    Returns ``{"skipped", "checked", "extended", "expired", "errors"}``; ``skipped`` is 1 when
    another run holds the lease (``wait=True`` waits for it instead).
    """
    def body() -> dict[str, Any]:
        at = as_utc(now) if now is not None else engine.clock.now()
        engine.flush()  # queued access-count bumps must count before deciding what is unused
        checked, extended, errors_a = extend_used(engine, at, actor)
        expired, errors_b = expire_past_due(engine, at, actor)
        return {"checked": checked, "extended": extended, "expired": expired, "errors": errors_a + errors_b}

    return run_leased(engine, "expire", body, wait=wait)
