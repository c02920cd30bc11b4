"""The facade's operations side: the maintenance jobs, the job-run log, job leases, the database
probe, and the handle the storage adapters that share the engine's database are built on.

Why on the facade: the scheduler (``services/scheduler.py``), the status panel
(``services/runtime.py``) and the API's key store used to take these from ``engine.repo``,
reaching past the facade to the SQL adapter. A mixin keeps them on ``MemoryEngine`` without
``engine.py`` growing past the size guide.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from memory_core import maintenance
from memory_core.errors import ValidationError
from memory_core.maintenance.locks import hold_lease
from memory_core.maintenance.merge import MergePlan
from memory_core.parts import EngineParts
from memory_core.validation import check_datetime


def _name(value: object, what: str, longest: int = 64) -> str:
    """A non-empty name that fits its column (job and lease names 64, holders 128, outcomes 16)."""
    if not isinstance(value, str) or not value.strip() or len(value) > longest:
        raise ValidationError(f"{what} must be a non-empty string of at most {longest} characters, got {value!r}")
    return value


def _at(value: object, what: str) -> datetime:
    checked = check_datetime(value, what, optional=False)
    assert checked is not None  # optional=False never returns None
    return checked


class EngineJobs:
    """Mixed into ``MemoryEngine``; uses only ``self.parts``."""

    parts: EngineParts

    # ---- the maintenance jobs (the scheduler and staff run them through the facade) -------------
    def expire_due(self, *, actor: str = maintenance.SCHEDULER_ACTOR) -> dict[str, Any]:
        """The daily expiry job: extend what retrieval still uses, expire what is past due.
        ``actor`` goes into the history of every memory it touches. Returns its counts."""
        return maintenance.expire_due(self.parts, actor=actor)

    def archive_due(self) -> dict[str, Any]:
        """The archive job: move unimportant memories untouched for months to the archive files."""
        return maintenance.archive_due(self.parts)

    def merge_all(self, min_memories: int | None = None, *,
                  actor: str = maintenance.SCHEDULER_ACTOR) -> dict[str, Any]:
        """The weekly merge job, for every user with at least ``min_memories`` active memories."""
        return maintenance.merge_all(self.parts, min_memories, actor=actor)

    def plan_merges(self, user_id: str) -> list[MergePlan]:
        """The merges the weekly job would make for ``user_id``; nothing is changed."""
        return maintenance.plan_merges(self.parts, user_id)

    def apply_merge(self, plan: MergePlan, *, actor: str) -> str:
        """Fold a planned merge into one new memory (its id); ``ValidationError`` when the plan
        went stale since it was made."""
        return maintenance.apply_merge(self.parts, plan, actor)

    def reconcile_job(self) -> dict[str, Any]:
        """The reconcile job (under its lease, counts as a dict); ``reconcile`` is the direct call."""
        return maintenance.run_reconcile(self.parts)

    # ---- the job-run log ------------------------------------------------------------------------
    def start_job_run(self, job: str, at: datetime) -> int:
        """Log that ``job`` started at ``at`` (outcome "running"); returns the run's id for
        ``finish_job_run``. Read back with ``job_runs``."""
        return self.parts.repo.start_job(_name(job, "job"), _at(at, "at"))

    def finish_job_run(self, run_id: int, at: datetime, outcome: str, counts: dict[str, Any],
                       detail: str = "") -> None:
        """Close a run's log entry: its outcome (ok, error, skipped ...), JSON-safe counts and a
        detail line (cut to 4,000 characters)."""
        if isinstance(run_id, bool) or not isinstance(run_id, int):
            raise ValidationError(f"run_id must be an integer, got {run_id!r}")
        if not isinstance(counts, dict):
            raise ValidationError(f"counts must be a dict, got {type(counts).__name__}")
        self.parts.repo.finish_job(run_id, _at(at, "at"), _name(outcome, "outcome", 16), counts, str(detail))

    # ---- leases: one holder per job across processes ------------------------------------------
    def try_lease(self, name: str, holder: str, now: datetime, until: datetime) -> bool:
        """Take or renew the lease ``name`` for ``holder`` until ``until``; True when ``holder``
        has it (free, expired by ``now``, or already its own). Atomic on SQLite and PostgreSQL."""
        now_at, until_at = _at(now, "now"), _at(until, "until")
        if until_at <= now_at:
            raise ValidationError("until must be after now")
        return self.parts.repo.try_lock(_name(name, "name"), _name(holder, "holder", 128), now_at, until_at)

    def release_lease(self, name: str, holder: str) -> None:
        """Give the lease back if ``holder`` has it (another holder's lease is left alone)."""
        self.parts.repo.release_lock(_name(name, "name"), _name(holder, "holder", 128))

    def lease(self, name: str, *, lease_s: float, holder: str | None = None, wait: bool = False,
              timeout_s: float = 60.0) -> AbstractContextManager[str]:
        """Hold the lease ``name`` for a ``with`` block (``maintenance.locks.hold_lease``, the one
        lease implementation): one run at a time across this process's threads and across every
        process on the database, renewed every ``lease_s / 3`` while the block runs, released
        after it, lost ``lease_s`` after a holder that died. Yields the holder id (``holder``, or
        a new one). A busy lease raises ``maintenance.LeaseBusy`` (at once, or after
        ``timeout_s`` with ``wait``). Lease times are on the engine's clock, as the run log is."""
        if isinstance(lease_s, bool) or not isinstance(lease_s, (int, float)) or not lease_s > 0:
            raise ValidationError(f"lease_s must be a positive number of seconds, got {lease_s!r}")
        return hold_lease(self.parts.repo, _name(name, "name"), lease_s=float(lease_s),
                          holder=None if holder is None else _name(holder, "holder", 128), wait=wait,
                          timeout_s=timeout_s, now=self.parts.clock.now)

    # ---- the database ---------------------------------------------------------------------------
    def database_ok(self) -> bool:
        """Whether the SQL database answers now (``SELECT 1``); never raises."""
        return self.parts.repo.ping()

    @property
    def sql_database(self) -> Any:
        """The handle of the engine's SQL database, for the storage adapters that keep their own
        tables there (``storage.api_keys.ApiKeyRepository``, the sign-in throttle, the sign-out
        list): they share its connection pool. Opaque above storage: only passed on."""
        return self.parts.repo.database
