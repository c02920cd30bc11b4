"""Background maintenance: expiry cleanup, weekly merges and reconcile, once per server process.

APScheduler's ``BackgroundScheduler`` is started by ``start_scheduler`` behind a module-level
lock, so reruns and browser sessions never start a second one. With several app processes
(several Streamlit servers on one database) every process schedules the jobs, but each run
first takes the job's lease (``engine.lease``: the project's one lease implementation,
``memory_core/maintenance/locks.py``): only the holder runs it, renewing the lease while it
runs; the others, and a second run in the same process, log a 'skipped' run. Every run, whatever its outcome, is logged with ``engine.start_job_run/finish_job_run``,
with who started it under ``started_by`` in its counts (``"scheduler"`` for the background
jobs, the staff member's actor for a run started from the admin page).
"""
from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

    from memory_core import MemoryEngine

from memory_core import SCHEDULER_ACTOR, LeaseBusy
from memory_core.clock import as_utc

log = logging.getLogger(__name__)

JOB_EXPIRY = "expiry_cleanup"
JOB_MERGE = "merge"
JOB_RECONCILE = "reconcile"
JOB_ARCHIVE = "archive"
JOB_LABELS = {
    JOB_EXPIRY: "Expiry cleanup (daily 02:00)",
    JOB_ARCHIVE: "Archive long-untouched, unimportant memories (daily 02:30)",
    JOB_MERGE: "Merge redundant memories (Mondays 03:00)",
    JOB_RECONCILE: "Reconcile SQL and Milvus (every 5 minutes)",
}

# This process, in the log line of the scheduler's start (each run's lease holder is this plus a
# random part: ``maintenance.locks.new_holder``).
PROCESS = f"{socket.gethostname()}:{os.getpid()}"


# ---- the job functions (plain functions: tests and the admin page call them directly) ----------
def expire_due(engine: "MemoryEngine", actor: str = SCHEDULER_ACTOR) -> dict[str, Any]:
    """Push out the expiry of memories retrieval keeps using, then expire the rest that are due.
    ``actor`` is written into the history of every memory the run extends or expires."""
    return engine.expire_due(actor=actor)


def archive_due(engine: "MemoryEngine") -> dict[str, Any]:
    """Move unimportant memories untouched for months into the per-user archive files."""
    return engine.archive_due()


def merge_all(engine: "MemoryEngine", min_memories: int = 20) -> dict[str, Any]:
    """Plan and apply merges for every user with at least ``min_memories`` active memories."""
    return engine.merge_all(min_memories)


def reconcile(engine: "MemoryEngine") -> dict[str, Any]:
    """Make Milvus match SQL (missing, orphan and stale vectors)."""
    return engine.reconcile_job()


def _as_counts(result: Any, name: str) -> dict[str, Any]:
    if isinstance(result, dict):
        return dict(result)
    if isinstance(result, int):
        return {name: result}
    if hasattr(result, "__dataclass_fields__"):
        from dataclasses import asdict

        return {k: v for k, v in asdict(result).items() if isinstance(v, (int, float, str, bool))}
    return {name: str(result)}


# ---- leased, logged runs ------------------------------------------------------------------------
@dataclass(frozen=True)
class RunOutcome:
    job: str
    outcome: str  # ok, error, skipped
    counts: dict[str, Any]
    detail: str = ""
    started_by: str = SCHEDULER_ACTOR


def _ran_lately(engine: "MemoryEngine", name: str, within_s: float, this_run: int) -> datetime | None:
    """When ``name`` last ran to an "ok" end within ``within_s`` seconds (another run than
    ``this_run``), else None. Read under the job's lease, so a run that finished just before this
    one took the lease is seen."""
    since = as_utc(engine.clock.now()) - timedelta(seconds=within_s)
    for run in engine.job_runs(name, limit=50):
        if as_utc(run.started_at) < since:
            continue
        if (run.id != this_run and run.outcome == "ok"
                and run.counts.get("started_by") == SCHEDULER_ACTOR):  # a staff run is no slot's run
            return run.started_at
    return None



def run_job(engine: "MemoryEngine", name: str, fn: Callable[[], dict[str, Any]], *,
            holder: str | None = None, lease_s: int = 3600, actor: str = SCHEDULER_ACTOR,
            once_per_s: float | None = None) -> RunOutcome:
    """Run ``fn`` under the lease ``name`` (``engine.lease``; ``holder`` names this run in it,
    a new id per run when omitted): logged as ok/error, or as skipped when another run holds
    the lease. The lease is renewed while ``fn`` runs and released when it ends, so a crash only
    blocks the job until the lease expires. ``actor`` (who started the run) is logged as
    ``started_by``. ``once_per_s`` (the scheduler's runs): skipped when the job already ran to an
    "ok" end within that many seconds: every replica's scheduler fires at the same slot, and
    a replica whose trigger comes a moment after another's run ended would run it again.

    Never raises: APScheduler calls this in its own thread, so every failure, including the
    database being unreachable for the run log or the lease, comes back as an 'error' outcome
    (and is logged here) instead."""
    run_id: int | None = None
    counts: dict[str, Any] = {}
    logged: str | None = None  # the detail written when the run was logged inside its lease

    def finish(outcome: str, detail: str) -> str:
        assert run_id is not None
        try:
            engine.finish_job_run(run_id, engine.clock.now(), outcome,
                                  {**_json_safe(counts), "started_by": actor}, detail)
        except Exception as exc:  # the run happened; only its log entry stays 'running'
            log.warning("logging the end of job %s run %s failed: %s", name, run_id, exc)
            note = f"the run log could not be updated: {type(exc).__name__}: {exc}"
            detail = f"{detail}; {note}" if detail else note
        return detail

    try:
        run_id = engine.start_job_run(name, engine.clock.now())
        running = False
        try:
            done: datetime | None = None
            with engine.lease(name, holder=holder, lease_s=lease_s):
                if once_per_s is not None:
                    done = _ran_lately(engine, name, once_per_s, run_id)
                if done is None:
                    running = True
                    counts = fn()
                    if not counts.get("skipped"):
                        # Logged "ok" before the lease is let go: a replica that takes it next
                        # sees this run in the log and skips the slot (``_ran_lately``).
                        logged = finish("ok", "")
        except LeaseBusy as exc:
            if running:  # raised by the job itself, not by taking its lease
                raise
            outcome = "skipped"
            detail = ("another process holds the lease" if exc.elsewhere
                      else "another run in this process holds the lease")
        else:
            outcome, detail = "ok", logged or ""
            if done is not None:
                outcome, detail = "skipped", f"already ran at {as_utc(done):%Y-%m-%d %H:%M:%S} UTC (another replica or run)"
            elif counts.get("skipped"):  # the maintenance function's own lease was busy: nothing ran
                outcome, detail = "skipped", "the maintenance job's own lease is held by another run"
    except Exception as exc:  # logged, never raised into APScheduler's thread
        counts, outcome = {}, "error"
        if run_id is None:  # the run could not even be logged (database unreachable): nothing ran
            first_line = (str(exc).splitlines() or [""])[0]
            detail = f"the run could not start: {type(exc).__name__}: {first_line}"
            log.error("job %s (started by %s) did not start: %s", name, actor, detail)
        else:
            log.exception("job %s (started by %s) failed", name, actor)
            detail = f"{type(exc).__name__}: {exc}"
    if run_id is not None and (logged is None or outcome != "ok"):
        detail = finish(outcome, detail)
    return RunOutcome(name, outcome, counts, detail, actor)


def _json_safe(counts: dict[str, Any]) -> dict[str, Any]:
    return {str(k): (v if isinstance(v, (int, float, str, bool)) or v is None else str(v)) for k, v in counts.items()}


def job_functions(engine: "MemoryEngine") -> dict[str, Callable[[], dict[str, Any]]]:
    return {
        JOB_EXPIRY: lambda: expire_due(engine),
        JOB_ARCHIVE: lambda: archive_due(engine),
        JOB_MERGE: lambda: merge_all(engine, engine.settings.merge_min_memories),
        JOB_RECONCILE: lambda: reconcile(engine),
    }


# ---- the process-wide scheduler -------------------------------------------------------------------
@dataclass(frozen=True)
class JobInfo:
    job: str
    label: str
    next_run: datetime | None
    trigger: str


# Half of each job's period: a scheduled run is skipped when another replica's run of the same
# slot already ended "ok" (run_job's ``once_per_s``); staff runs from Admin always run.
ONCE_PER_S = {JOB_EXPIRY: 12 * 3600, JOB_ARCHIVE: 12 * 3600, JOB_MERGE: 3.5 * 86400, JOB_RECONCILE: 150}


class MemoryScheduler:
    """Owns one BackgroundScheduler with the three maintenance jobs for one engine."""

    def __init__(self, engine: "MemoryEngine", timezone: str = "UTC", lease_s: int = 3600) -> None:
        from apscheduler.schedulers.background import BackgroundScheduler
        from apscheduler.triggers.cron import CronTrigger
        from apscheduler.triggers.interval import IntervalTrigger

        self.engine = engine
        self.lease_s = lease_s
        self._scheduler: BackgroundScheduler = BackgroundScheduler(
            timezone=timezone, job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600},
        )
        functions = job_functions(engine)
        triggers = {
            JOB_EXPIRY: CronTrigger(hour=2, minute=0, timezone=timezone),
            JOB_ARCHIVE: CronTrigger(hour=2, minute=30, timezone=timezone),
            JOB_MERGE: CronTrigger(day_of_week="mon", hour=3, minute=0, timezone=timezone),
            JOB_RECONCILE: IntervalTrigger(minutes=5, timezone=timezone),
        }
        for name, trigger in triggers.items():
            self._scheduler.add_job(run_job, trigger, args=[engine, name, functions[name]],
                                    kwargs={"lease_s": lease_s, "once_per_s": ONCE_PER_S[name]}, id=name,
                                    name=JOB_LABELS[name], replace_existing=True)

    def start(self) -> None:
        self._scheduler.start()

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running)

    def jobs(self) -> list[JobInfo]:
        return [JobInfo(job.id, job.name, getattr(job, "next_run_time", None), str(job.trigger))
                for job in self._scheduler.get_jobs()]


_lock = threading.Lock()
_instance: MemoryScheduler | None = None


def start_scheduler(engine: "MemoryEngine", timezone: str = "UTC", lease_s: int = 3600) -> MemoryScheduler:
    """Start the scheduler once per process (idempotent: later calls return the running one)."""
    global _instance
    with _lock:
        if _instance is not None and _instance.engine is engine and _instance.running:
            return _instance
        if _instance is not None:
            _instance.shutdown()
        _instance = MemoryScheduler(engine, timezone, lease_s)
        _instance.start()
        log.info("maintenance scheduler started (%s)", PROCESS)
        return _instance


def current_scheduler() -> MemoryScheduler | None:
    return _instance


def stop_scheduler() -> None:
    global _instance
    with _lock:
        if _instance is not None:
            _instance.shutdown()
        _instance = None
