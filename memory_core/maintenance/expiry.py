"""Forgetting on schedule: expire what is past its date, but keep alive what is still used.

Memories of importance >= ``Settings.fade_from_importance`` are not expired: past their date they
fade (retrieval returns them only when relevant, ``memory_core.lifecycle.faded``), and one used
again earns a new date here like any other. Expired memories are not deleted: they leave retrieval and Milvus and stay in SQL, where staff
can restore them (``parts.restore`` re-indexes). Extending and expiring go through
``lifecycle_ops``, the same rules a person's edit and expiry follow. Extension happens *before* expiry (a
look-ahead window): once a memory below that importance is past ``expires_at`` retrieval stops
returning it, so it could never be retrieved again to earn its extension.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any, Iterator

from memory_core import lifecycle_ops
from memory_core.clock import as_utc
from memory_core.maintenance.importance import earliest_useful_access, keep_alive_until
from memory_core.maintenance.locks import SCHEDULER_ACTOR, run_leased
from memory_core.parts import EngineParts
from memory_core.records import MemoryRecord

log = logging.getLogger(__name__)


def _near_expiry(parts: EngineParts, horizon: datetime, accessed_since: datetime,
                 batch: int) -> Iterator[MemoryRecord]:
    """Active memories due by ``horizon`` and retrieved since ``accessed_since``, in keyset pages
    (no long transaction)."""
    after = ""
    while True:
        records = parts.repo.used_due_by(horizon, after, batch, accessed_since=accessed_since)
        if not records:
            return
        yield from records
        after = records[-1].memory_id


def extend_used(parts: EngineParts, now: datetime, actor: str = SCHEDULER_ACTOR) -> tuple[int, int, int]:
    """Push out the expiry of near-due memories that earned it. Returns (checked, extended, errors).

    ``actor`` is written into each memory's history (a staff-started run names the staff member)."""
    settings = parts.settings
    horizon = now + timedelta(days=settings.expiry_lookahead_days)
    checked = extended = errors = 0
    since = earliest_useful_access(now, settings)
    for record in _near_expiry(parts, horizon, since, settings.maintenance_batch_size):
        checked += 1
        until, score = keep_alive_until(record, now, settings)
        if until is None:
            continue
        try:
            lifecycle_ops.update(parts, record.memory_id, actor=actor, expires_at=until,
                          note=f"kept alive until {until.date().isoformat()}: {score.describe()}, "
                               f"retrieved {record.access_count} times")
            extended += 1
        except Exception as exc:  # one bad row must not stop the others
            log.warning("extending %s failed: %s", record.memory_id, exc)
            errors += 1
    return checked, extended, errors


def expire_past_due(parts: EngineParts, now: datetime, actor: str = SCHEDULER_ACTOR) -> tuple[int, int]:
    """Expire every active memory past ``expires_at`` whose importance does not fade
    (``Settings.fade_from_importance``). Returns (expired, errors); ``actor`` as above."""
    expired = 0
    failed: set[str] = set()
    batch = parts.settings.maintenance_batch_size
    while True:
        due = [r for r in parts.repo.due_for_expiry(now, limit=batch + len(failed),
                                                    fade_from=parts.settings.fade_from_importance)
               if r.memory_id not in failed]
        if not due:
            return expired, len(failed)
        for record in due:
            try:
                due = record.expires_at.date().isoformat() if record.expires_at else "?"
                lifecycle_ops.expire(parts, record.memory_id, actor=actor, note=f"expiry date {due} reached")
                expired += 1
            except Exception as exc:
                log.warning("expiring %s failed: %s", record.memory_id, exc)
                failed.add(record.memory_id)


def expire_due(parts: EngineParts, now: datetime | None = None, *, wait: bool = False,
               actor: str = SCHEDULER_ACTOR) -> dict[str, Any]:
    """The daily expiry job: extend what is still used, then expire what is past due.

    ``actor`` names who ran it in the history of every memory it extends or expires:
    ``"scheduler"`` for the background job, the staff member's actor for a run started by hand.

    Returns ``{"skipped", "checked", "extended", "expired", "errors"}``; ``skipped`` is 1 when
    another run holds the lease (``wait=True`` waits for it instead).
    """
    def body() -> dict[str, Any]:
        at = as_utc(now) if now is not None else parts.clock.now()
        parts.flush()  # queued access-count bumps must count before deciding what is unused
        checked, extended, errors_a = extend_used(parts, at, actor)
        expired, errors_b = expire_past_due(parts, at, actor)
        return {"checked": checked, "extended": extended, "expired": expired, "errors": errors_a + errors_b}

    return run_leased(parts, "expire", body, wait=wait)
