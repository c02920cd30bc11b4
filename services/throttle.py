"""Sign-in throttling that slows guessing down without handing anyone a way to lock staff out.

Three counters of failed sign-ins, each with its own exponential backoff (a delay that doubles
with every further failure, measured from the last one):

* per **name and client**: after ``free_failures`` the next try from that client for that name
  waits 1, 2, 4 ... seconds up to ``max_delay_s``. Someone guessing from their own connection
  slows down only themselves: the real person signs in from another client unhindered.
* per **client**, across names: after ``client_budget`` failures the client waits, doubling up
  to ``max_delay_s``, so one password tried against many names (spraying) is slowed too.
* per **name**, across clients: after ``name_budget`` failures every try for that name waits,
  but never more than ``name_max_delay_s`` (30 s by default). Guessing from many clients at once
  is held to a few tries a minute, and the real person is never kept out for longer than that.

A client that cannot be told apart (``client == ""``: Streamlit gives no address for loopback,
and behind a proxy every visitor has the proxy's address unless ``TRUSTED_PROXY_HEADER`` names
the header it sets) has no counters of its own: only the per-name backoff, with its short cap,
applies, so one visitor can never slow everyone down for long.

Counters live in a store shared by every app process (``SqlThrottleStore``: a table in the
engine's database, in ``memory_core.storage.throttle_store`` as it speaks SQL), keyed by a hash
(no names or addresses are stored). A counter restarts
when ``window_s`` passes without a failure. Times are wall-clock seconds (shared by processes).
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from memory_core.storage.throttle_store import SqlThrottleStore

__all__ = ["LoginThrottle", "MemoryThrottleStore", "SqlThrottleStore", "ThrottlePolicy", "ThrottleStore"]
log = logging.getLogger(__name__)


class ThrottleStore(Protocol):
    def counts(self, keys: Sequence[str], now: float, window_s: float) -> dict[str, tuple[int, float]]:
        """(failures, last failure time) per key; a key idle for ``window_s`` counts 0."""

    def add_failure(self, keys: Sequence[str], now: float, window_s: float) -> None: ...

    def clear(self, keys: Sequence[str]) -> None: ...

    def prune(self, before: float) -> int:
        """Forget counters whose last failure is older than ``before``; returns how many."""


class MemoryThrottleStore:
    """One process only: for tests and for a sign-in page that has no database to share."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def counts(self, keys: Sequence[str], now: float, window_s: float) -> dict[str, tuple[int, float]]:
        with self._lock:
            out = {}
            for key in keys:
                count, last = self._data.get(key, (0, 0.0))
                out[key] = (count, last) if now - last < window_s else (0, last)
            return out

    def add_failure(self, keys: Sequence[str], now: float, window_s: float) -> None:
        with self._lock:
            for key in keys:
                count, last = self._data.get(key, (0, 0.0))
                self._data[key] = (count + 1 if now - last < window_s else 1, now)

    def clear(self, keys: Sequence[str]) -> None:
        with self._lock:
            for key in keys:
                self._data.pop(key, None)

    def prune(self, before: float) -> int:
        with self._lock:
            old = [key for key, (_count, last) in self._data.items() if last < before]
            for key in old:
                del self._data[key]
            return len(old)

    def __len__(self) -> int:
        return len(self._data)


@dataclass(frozen=True)
class ThrottlePolicy:
    free_failures: int = 3  # per name and client before delays start
    client_budget: int = 20  # per client across names
    name_budget: int = 10  # per name across clients
    base_delay_s: float = 1.0
    max_delay_s: float = 900.0  # cap of the per-client and per-name-and-client delays
    name_max_delay_s: float = 30.0  # cap of the per-name delay (what a guesser can cost the real person)
    window_s: float = 3600.0  # a counter restarts after this long without a failure


def _key(kind: str, *parts: str) -> str:
    return hashlib.sha256("\x1f".join((kind, *parts)).encode("utf-8")).hexdigest()[:64]


class LoginThrottle:
    """Backoff per (name, client), per client and per name; see the module docstring."""

    PRUNE_EVERY_S = 60.0

    def __init__(self, store: ThrottleStore | None = None, policy: ThrottlePolicy | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.store: ThrottleStore = store if store is not None else MemoryThrottleStore()
        self.policy = policy or ThrottlePolicy()
        self._clock = clock
        self._next_prune = 0.0

    def _keys(self, name: str, client: str) -> dict[str, tuple[str, int, float]]:
        """key -> (what, failures before backoff, delay cap)."""
        p = self.policy
        name = name.strip().casefold()
        keys = {_key("name", name): ("name", p.name_budget, p.name_max_delay_s)}
        if client:
            keys[_key("name+client", name, client)] = ("name+client", p.free_failures, p.max_delay_s)
            keys[_key("client", client)] = ("client", p.client_budget, p.max_delay_s)
        return keys

    def retry_after(self, name: str, client: str = "") -> float:
        """Seconds until ``name`` may be tried again from ``client`` (0: now)."""
        now = self._clock()
        keys = self._keys(name, client)
        counts = self.store.counts(list(keys), now, self.policy.window_s)
        wait = 0.0
        for key, (_what, free, cap) in keys.items():
            failures, last = counts[key]
            if failures >= free:
                delay = min(cap, self.policy.base_delay_s * 2.0 ** min(failures - free, 40))
                wait = max(wait, last + delay - now)
        return max(0.0, wait)

    def failed(self, name: str, client: str = "") -> None:
        now = self._clock()
        self.store.add_failure(list(self._keys(name, client)), now, self.policy.window_s)
        if now >= self._next_prune:  # counters of made-up names must not pile up for good
            self._next_prune = now + self.PRUNE_EVERY_S
            try:
                self.store.prune(now - self.policy.window_s - self.policy.max_delay_s)
            except Exception as exc:  # pruning is housekeeping; a failed one is retried later
                log.warning("pruning the sign-in throttle failed: %s", exc)

    def succeeded(self, name: str, client: str = "") -> None:
        """The right password: that name's counters start over (the client's budget does not:
        a client that sprays many names keeps its count)."""
        keys = [k for k, (what, _f, _c) in self._keys(name, client).items() if what != "client"]
        self.store.clear(keys)
