"""Job leases: a maintenance job runs in one place at a time, and a second start waits or skips.

Two layers, because either alone is not enough:

* an in-process ``threading.Lock`` per (database, job): two threads of one process share one
  holder identity, so the SQL lease alone would let both in;
* the SQL lease (``repo.try_lock``/``release_lock``): several app processes share one database.

Lease times use the wall clock, never ``parts.clock``: a lease protects real processes that
really run, and a test's ``FixedClock`` standing still would make a crashed holder's lease
last forever. While the job runs a daemon thread renews the lease every third of its length,
so a long job keeps it and a crashed one loses it after ``lease_s``.

Lease names are prefixed ``maintenance.`` so they never collide with the scheduler's own
leases (``services/scheduler.py`` takes ``expiry_cleanup``/``merge``/``reconcile`` around
calling these functions; the nested lease here is then simply free).
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterator

from memory_core.parts import EngineParts

log = logging.getLogger(__name__)
# Who the background jobs act as, in memory histories and the job-run log; a run started by a
# person passes their actor instead.
SCHEDULER_ACTOR = "scheduler"

_REGISTRY_LOCK = threading.Lock()
_LOCAL: dict[tuple[str, str], threading.Lock] = {}
_POLL_S = 0.2


class LeaseBusy(RuntimeError):
    """The job is running elsewhere (another thread or process holds its lease)."""


def _wall_now() -> datetime:
    return datetime.now(timezone.utc)


def _local_lock(parts: EngineParts, name: str) -> threading.Lock:
    key = (parts.repo.location, name)
    with _REGISTRY_LOCK:
        lock = _LOCAL.get(key)
        if lock is None:
            lock = _LOCAL[key] = threading.Lock()
        return lock


def new_holder() -> str:
    """A holder id unique to one acquisition: host, pid and a random part (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class _Renewer:
    """Renews a held lease every ``lease_s / 3`` seconds until stopped."""

    def __init__(self, parts: EngineParts, name: str, holder: str, lease_s: float) -> None:
        self._stop = threading.Event()
        self.lost = False

        def run() -> None:
            while not self._stop.wait(max(lease_s / 3.0, 0.05)):
                now = _wall_now()
                try:
                    if not parts.repo.try_lock(name, holder, now, now + timedelta(seconds=lease_s)):
                        self.lost = True
                        log.warning("lease %s was taken over while its job ran", name)
                        return
                except Exception as exc:  # a database blip: try again next period
                    log.warning("renewing lease %s failed: %s", name, exc)

        self._thread = threading.Thread(target=run, name=f"lease-{name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@contextmanager
def job_lease(parts: EngineParts, name: str, *, wait: bool = False, timeout_s: float = 60.0,
              lease_s: float | None = None) -> Iterator[str]:
    """Hold the lease ``maintenance.<name>`` for the body; yields the holder id.

    With ``wait=False`` a busy lease raises ``LeaseBusy`` at once; with ``wait=True`` it polls
    until ``timeout_s`` and then raises ``LeaseBusy``.
    """
    lease_name = f"maintenance.{name}"[:64]
    lease_s = float(lease_s if lease_s is not None else parts.settings.job_lease_s)
    deadline = time.monotonic() + (timeout_s if wait else 0.0)
    local = _local_lock(parts, lease_name)
    got = local.acquire(timeout=max(0.0, timeout_s)) if wait else local.acquire(blocking=False)
    if not got:
        raise LeaseBusy(f"{name} is already running in this process")
    try:
        holder = new_holder()
        while True:
            now = _wall_now()
            if parts.repo.try_lock(lease_name, holder, now, now + timedelta(seconds=lease_s)):
                break
            if time.monotonic() >= deadline:
                raise LeaseBusy(f"{name} is running in another process")
            time.sleep(_POLL_S)
        renewer = _Renewer(parts, lease_name, holder, lease_s)
        try:
            yield holder
        finally:
            renewer.stop()
            try:
                parts.repo.release_lock(lease_name, holder)
            except Exception as exc:  # it expires by itself
                log.warning("releasing lease %s failed: %s", lease_name, exc)
    finally:
        local.release()


def run_leased(parts: EngineParts, name: str, body: Callable[[], dict[str, Any]], *, wait: bool = False,
               timeout_s: float = 60.0) -> dict[str, Any]:
    """Run ``body`` under the job's lease; a busy lease gives ``{"skipped": 1, "reason": ...}``.

    Why a counts dict and not an exception: the callers (scheduler, admin page) log and show
    counts, and "someone else is already doing it" is a normal outcome, not a failure.
    """
    try:
        with job_lease(parts, name, wait=wait, timeout_s=timeout_s):
            counts = body()
    except LeaseBusy as exc:
        return {"skipped": 1, "reason": str(exc)}
    return {"skipped": 0, **counts}
