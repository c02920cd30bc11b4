"""Per-key rate limit, shared by every API process: fixed windows counted in Redis when
``REDIS_URL`` is set, else in the engine's SQL database (one atomic upsert per request).

Fixed windows are simple and exact across processes; their known cost is that a client can
spend up to twice its limit across a window boundary. Redis errors fall back to SQL (logged),
so an outage of the cache never turns into an open door or a refused request.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from memory_core.storage.api_keys import ApiKeyRepository

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    count: int
    limit: int
    retry_after_s: float  # until the window ends (0 when allowed)


class Counter(Protocol):
    name: str

    def hit(self, key_id: str, window_start: int, window_s: int) -> int: ...


class SqlCounter:
    """Counts in ``api_rate_counters``; old windows are pruned once per new window."""

    name = "sql"

    def __init__(self, repo: ApiKeyRepository) -> None:
        self.repo = repo
        self._pruned_before = 0
        self._lock = threading.Lock()

    def hit(self, key_id: str, window_start: int, window_s: int) -> int:
        with self._lock:
            prune = window_start > self._pruned_before
            self._pruned_before = max(self._pruned_before, window_start)
        if prune:
            try:
                self.repo.prune_counters(window_start - window_s)
            except Exception as exc:  # noqa: BLE001 - pruning is housekeeping; counting goes on
                log.warning("pruning old rate-limit counters failed: %s", exc)
        return self.repo.hit(key_id, window_start)


class RedisCounter:
    """Counts with INCR on a key that expires after its window."""

    name = "redis"

    def __init__(self, url: str, prefix: str = "ltm:api:rate") -> None:
        import redis  # only when Redis is configured

        self._client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.prefix = prefix

    def hit(self, key_id: str, window_start: int, window_s: int) -> int:
        key = f"{self.prefix}:{key_id}:{window_start}"
        pipe = self._client.pipeline()
        pipe.incr(key)
        pipe.expire(key, window_s * 2)
        count, _ = pipe.execute()
        return int(count)


class RateLimiter:
    def __init__(self, primary: Counter, fallback: Counter | None = None, window_s: int = 60,
                 clock: Callable[[], float] = time.time) -> None:
        self.primary = primary
        self.fallback = fallback
        self.window_s = window_s
        self._clock = clock

    @property
    def backend(self) -> str:
        return self.primary.name

    def check(self, key_id: str, limit: int) -> RateDecision:
        """Count this request; ``limit`` <= 0 means unlimited (still counted)."""
        now = self._clock()
        start = int(now // self.window_s) * self.window_s
        try:
            count = self.primary.hit(key_id, start, self.window_s)
        except Exception as exc:
            if self.fallback is None:
                raise
            log.warning("rate limit counter %s failed (%s); counting in %s", self.primary.name,
                        type(exc).__name__, self.fallback.name)
            count = self.fallback.hit(key_id, start, self.window_s)
        if limit <= 0 or count <= limit:
            return RateDecision(True, count, limit, 0.0)
        return RateDecision(False, count, limit, max(0.0, start + self.window_s - now))


def build_limiter(repo: ApiKeyRepository, redis_url: str, window_s: int = 60) -> RateLimiter:
    sql = SqlCounter(repo)
    if redis_url:
        return RateLimiter(RedisCounter(redis_url), fallback=sql, window_s=window_s)
    return RateLimiter(sql, window_s=window_s)
