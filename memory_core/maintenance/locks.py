"""Leases: a job runs in one place at a time, and a second start waits or skips.

The one lease implementation of the project: the maintenance jobs hold theirs through
``job_lease``/``run_leased``, the scheduler (``services/scheduler.py``) its own through the
facade's ``MemoryEngine.lease``; both are ``hold_lease``. Two layers, because either alone is
not enough:

* an in-process ``threading.Lock`` per (database, lease): two threads of one process would
  otherwise both get in (a process's holders are told apart only by the SQL row);
* the SQL lease (``JobRepository.try_lock``/``release_lock``): several app processes share one
  database, and the row names one holder until it expires.

While the body runs a daemon thread renews the lease every third of its length, so a long job
keeps it and a holder that died loses it ``lease_s`` after its last renewal.

Whose time: the maintenance leases use the wall clock, never ``parts.clock``: they protect real
processes that really run, and a test's ``FixedClock`` standing still would make a crashed
holder's lease last forever. The scheduler's leases use the engine's clock, as its run log does
(``now`` below). Maintenance lease names are prefixed ``maintenance.`` so they never collide with
the scheduler's (``expiry_cleanup``, ``merge`` ... taken around calling these functions; the
nested lease is then simply free).
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
from typing import Any, Callable, Iterator, Protocol

from memory_core.parts import EngineParts

log = logging.getLogger(__name__)
# Who the background jobs act as, in memory histories and the job-run log; a run started by a
# person passes their actor instead.
SCHEDULER_ACTOR = "scheduler"

_REGISTRY_LOCK = threading.Lock()
_LOCAL: dict[tuple[str, str], threading.Lock] = {}
_POLL_S = 0.2


class LeaseStore(Protocol):
    """What a lease needs of the SQL port (``sql_ports.JobRepository`` plus ``location``)."""

    @property
    def location(self) -> str: ...
    def try_lock(self, name: str, holder: str, now: datetime, until: datetime) -> bool: ...
    def release_lock(self, name: str, holder: str) -> None: ...


class LeaseBusy(RuntimeError):
    """The lease is held elsewhere: by another run in this process (``elsewhere`` False) or by
    another process (``elsewhere`` True)."""

    def __init__(self, message: str, *, elsewhere: bool) -> None:
        super().__init__(message)
        self.elsewhere = elsewhere


def wall_now() -> datetime:
    return datetime.now(timezone.utc)


def _local_lock(store: LeaseStore, name: str) -> threading.Lock:
    key = (store.location, name)
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

    def __init__(self, store: LeaseStore, name: str, holder: str, lease_s: float,
                 now: Callable[[], datetime]) -> None:
        self._stop = threading.Event()
        self.lost = False

        def run() -> None:
            while not self._stop.wait(max(lease_s / 3.0, 0.05)):
                at = now()
                try:
                    if not store.try_lock(name, holder, at, at + timedelta(seconds=lease_s)):
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
def hold_lease(store: LeaseStore, name: str, *, lease_s: float, holder: str | None = None, wait: bool = False,
               timeout_s: float = 60.0, now: Callable[[], datetime] = wall_now,
               label: str | None = None) -> Iterator[str]:
    """Hold the lease ``name`` for the body, renewed while it runs, released after; yields the
    holder id (``holder``, or a new one per acquisition).

    With ``wait=False`` a busy lease raises ``LeaseBusy`` at once; with ``wait=True`` it polls
    until ``timeout_s`` and then raises ``LeaseBusy``. A failed release is logged, not raised:
    the lease expires by itself. ``label`` names the job in ``LeaseBusy``'s message.
    """
    label = label or name
    deadline = time.monotonic() + (timeout_s if wait else 0.0)
    local = _local_lock(store, name)
    got = local.acquire(timeout=max(0.0, timeout_s)) if wait else local.acquire(blocking=False)
    if not got:
        raise LeaseBusy(f"{label} is already running in this process", elsewhere=False)
    try:
        holder = holder or new_holder()
        while True:
            at = now()
            if store.try_lock(name, holder, at, at + timedelta(seconds=lease_s)):
                break
            if time.monotonic() >= deadline:
                raise LeaseBusy(f"{label} is running in another process", elsewhere=True)
            time.sleep(_POLL_S)
        renewer = _Renewer(store, name, holder, lease_s, now)
        try:
            yield holder
        finally:
            renewer.stop()
            try:
                store.release_lock(name, holder)
            except Exception as exc:  # it expires by itself
                log.warning("releasing lease %s failed (it expires by itself): %s", name, exc)
    finally:
        local.release()


@contextmanager
def job_lease(parts: EngineParts, name: str, *, wait: bool = False, timeout_s: float = 60.0,
              lease_s: float | None = None) -> Iterator[str]:
    """Hold the maintenance lease ``maintenance.<name>`` (wall clock) for the body; yields the
    holder id. ``LeaseBusy`` as ``hold_lease``."""
    seconds = float(lease_s if lease_s is not None else parts.settings.job_lease_s)
    with hold_lease(parts.repo, f"maintenance.{name}"[:64], lease_s=seconds, wait=wait, timeout_s=timeout_s,
                    label=name) as holder:
        yield holder


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
