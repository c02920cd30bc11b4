"""Cache of retrieval results, keyed by user, normalised query and filters.

Invalidation is by generation: every write for a user bumps that user's generation number,
and keys embed the generation, so one O(1) increment retires all of a user's cached results.
A search reads the generation once, *before* it reads any data, and stores its result under
that generation: a write that commits while the search runs bumps the generation, so the result
(which may predate the write) lands under a generation no one reads again. Reading the
generation only when storing put such a stale result under the new one, where it was served
until its TTL ran out, even after an erasure.
Keys carry a per-deployment namespace (``Settings.cache_namespace``), and retrieval re-checks
every hit against SQL (owner, status, expiry) before serving it: a Redis shared by two
deployments, or an entry written by a misconfigured one, cannot serve another store's memories.
Redis failures never fail a request: the cache is bypassed, and a user whose invalidation
could not be delivered is served uncached until it is (so a Redis that comes back with old
entries cannot serve stale results).
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from typing import Callable

from cachetools import TLRUCache

from memory_core.clock import Clock

log = logging.getLogger(__name__)


def user_tag(user_id: str) -> str:
    """A fixed-width, key-safe tag for a user id (ids may hold any character)."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


class ResultCache(ABC):
    """Also the engine's record of *when* each user last wrote, for the vector store's choice of
    consistency (``settled``): the cache is the one part every replica shares that every write
    already reaches."""

    name: str

    def __init__(self, settle_s: float = 0.0) -> None:
        self.hits = 0
        self.misses = 0
        self.errors = 0
        # Seconds after a user's last write during which ``settled`` says False (0: never settled).
        self.settle_s = max(0.0, float(settle_s))

    def settled(self, user_id: str) -> bool:
        """True only when this cache knows no write for ``user_id`` was marked in the last
        ``settle_s`` seconds. Why: on a Milvus server a Strong read waits for the next time tick
        (~400 ms at the default tick, bench/results/latency.json ``server-100k``); a read with
        bounded staleness sees every write older than the server's grace time, so for a user whose
        vectors did not change within that time it returns what a Strong read would. Unsure
        (Redis down, no window configured) is False: the store then reads Strong."""
        return False

    @abstractmethod
    def generation(self, user_id: str) -> str | None:
        """The user's current generation, read before a search reads any data; None when the
        cache cannot be trusted for this user now (then the search neither reads nor stores)."""

    @abstractmethod
    def get(self, user_id: str, key: str, generation: str) -> str | None: ...

    @abstractmethod
    def set(self, user_id: str, key: str, value: str, generation: str, ttl_s: float | None = None) -> None:
        """Store under ``generation``, for at most ``ttl_s`` seconds (capped by the cache's TTL):
        a result that stops being true at a known time (a memory in it expires) lives no longer."""

    @abstractmethod
    def invalidate_user(self, user_id: str) -> None: ...

    @abstractmethod
    def ping(self) -> bool: ...

    def _count(self, value: str | None) -> str | None:
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value


class InProcessCache(ResultCache):
    """Bounded LRU with a TTL per entry (cachetools ``TLRUCache``), for the embedded
    single-process setup.

    Entries expire on ``clock`` when one is given (the engine's injected clock: a test moves a
    ``FixedClock`` past an entry's end instead of sleeping), else on the monotonic clock."""

    name = "in-process"

    def __init__(self, max_entries: int = 10_000, ttl_s: int = 3600, clock: Clock | None = None,
                 settle_s: float = 0.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        super().__init__(settle_s)
        # Write marks run on real elapsed time even under an injected clock: what they guard
        # against is the vector server's real staleness bound.
        self._monotonic = monotonic
        self._last_write: dict[str, float] = {}
        # A process that just started cannot know what it wrote before a restart: the users it
        # has no mark for count as written at its start.
        self._born = monotonic()
        timer: Callable[[], float] = time.monotonic if clock is None else (lambda: clock.now().timestamp())
        # Values are (ttl_s, text): the TTL of each entry travels with it to ``_expires``.
        self._data: TLRUCache[tuple[str, str, str], tuple[float, str]] = TLRUCache(
            maxsize=max_entries, ttu=_expires, timer=timer)
        self._generation: dict[str, int] = {}
        self._lock = threading.Lock()
        self._ttl = ttl_s

    def generation(self, user_id: str) -> str | None:
        with self._lock:
            return str(self._generation.get(user_id, 0))

    def get(self, user_id: str, key: str, generation: str) -> str | None:
        with self._lock:
            item = self._data.get((user_id, generation, key))  # an expired entry is a miss
            return self._count(None if item is None else item[1])

    def set(self, user_id: str, key: str, value: str, generation: str, ttl_s: float | None = None) -> None:
        ttl = self._ttl if ttl_s is None else min(self._ttl, ttl_s)
        with self._lock:
            if ttl <= 0 or generation != str(self._generation.get(user_id, 0)):
                return  # already stale: a write bumped the generation while the search ran
            self._data[(user_id, generation, key)] = (ttl, value)

    def invalidate_user(self, user_id: str) -> None:
        with self._lock:
            self._generation[user_id] = self._generation.get(user_id, 0) + 1
            self._last_write[user_id] = self._monotonic()
            self._data.expire()
            for k in [k for k in self._data if k[0] == user_id]:
                self._data.pop(k, None)

    def settled(self, user_id: str) -> bool:
        if self.settle_s <= 0:
            return False
        with self._lock:
            last = self._last_write.get(user_id)
        return self._monotonic() - (self._born if last is None else last) >= self.settle_s

    def ping(self) -> bool:
        return True


def _expires(_key: object, value: tuple[float, str], now: float) -> float:
    return now + value[0]


# Write marks hold the time of a user's last write on Redis' own clock (``TIME``), so replicas
# need no synchronised clocks and every reader applies its own window. A missing mark (never
# written, evicted, Redis restarted) is unsure: the reader reads Strong and starts the clock.
_MARK_WRITE = """
local t = redis.call('TIME')
redis.call('SET', KEYS[1], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), 'EX', ARGV[1])
return 1
"""
_SETTLED = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = redis.call('GET', KEYS[1])
if not last then
  redis.call('SET', KEYS[1], now, 'NX', 'EX', ARGV[2])
  return 0
end
if now - tonumber(last) >= tonumber(ARGV[1]) then
  return 1
end
return 0
"""
RETRY_DIRTY_S = 0.5  # how often a replica retries invalidations that did not reach Redis


class RedisCache(ResultCache):
    """Shared cache for several app processes. Every Redis error degrades to a miss."""

    name = "redis"

    def __init__(self, url: str, ttl_s: int = 3600, prefix: str = "ltm", socket_timeout_s: float = 0.5,
                 settle_s: float = 0.0) -> None:
        super().__init__(settle_s)
        import redis  # imported here so the embedded setup never needs a Redis server

        self._client = redis.Redis.from_url(
            url, socket_timeout=socket_timeout_s, socket_connect_timeout=socket_timeout_s, decode_responses=True
        )
        self._ttl = ttl_s
        self._prefix = prefix
        self._dirty: set[str] = set()  # users whose invalidation did not reach Redis
        self._lock = threading.Lock()
        self._retrier: threading.Thread | None = None
        self._mark_write = self._client.register_script(_MARK_WRITE)
        self._settled_script = self._client.register_script(_SETTLED)

    def _gen_key(self, user_id: str) -> str:
        return f"{self._prefix}:gen:{user_tag(user_id)}"

    def _key(self, user_id: str, generation: str, key: str) -> str:
        return f"{self._prefix}:r:{user_tag(user_id)}:{generation}:{key}"

    def _write_mark_key(self, user_id: str) -> str:
        """The time (ms, Redis' clock) of the user's last write; kept as long as a generation."""
        return f"{self._prefix}:w:{user_tag(user_id)}"

    @property
    def _mark_ttl(self) -> int:
        return max(self._ttl * 2, 86400)

    def _retry_dirty(self, user_id: str) -> bool:
        """True when the user's generation in Redis is known to be current."""
        with self._lock:
            if user_id not in self._dirty:
                return True
        try:
            self._bump(user_id)
        except Exception:
            return False
        with self._lock:
            self._dirty.discard(user_id)
        return True

    def _bump(self, user_id: str) -> None:
        """New generation and the write's time, in one round trip. The mark is written whatever
        this process's own ``settle_s``: other replicas may read with a window."""
        pipe = self._client.pipeline(transaction=False)
        pipe.incr(self._gen_key(user_id))
        pipe.expire(self._gen_key(user_id), self._mark_ttl)
        self._mark_write(keys=[self._write_mark_key(user_id)], args=[self._mark_ttl], client=pipe)
        pipe.execute()

    def _retry_in_background(self) -> None:
        """Other replicas learn of a write only from Redis: retry the failed invalidations every
        ``RETRY_DIRTY_S`` until they land, not only when this user searches here again."""
        with self._lock:
            if self._retrier is not None and self._retrier.is_alive():
                return
            self._retrier = threading.Thread(target=self._retry_loop, name="redis-invalidation-retry", daemon=True)
            self._retrier.start()

    def _retry_loop(self) -> None:
        while True:
            time.sleep(RETRY_DIRTY_S)
            with self._lock:
                pending = list(self._dirty)
            if not pending:
                return
            for user_id in pending:
                self._retry_dirty(user_id)

    def generation(self, user_id: str) -> str | None:
        if not self._retry_dirty(user_id):
            return None
        try:
            return self._client.get(self._gen_key(user_id)) or "0"
        except Exception as exc:
            self.errors += 1
            log.warning("redis cache generation read failed, bypassing: %s", type(exc).__name__)
            return None

    def get(self, user_id: str, key: str, generation: str) -> str | None:
        try:
            return self._count(self._client.get(self._key(user_id, generation, key)))
        except Exception as exc:
            self.errors += 1
            log.warning("redis cache get failed, bypassing: %s", type(exc).__name__)
            return self._count(None)

    def set(self, user_id: str, key: str, value: str, generation: str, ttl_s: float | None = None) -> None:
        ttl = self._ttl if ttl_s is None else min(self._ttl, ttl_s)
        if ttl < 1 or not self._retry_dirty(user_id):
            return
        try:
            # Stored under the generation the search started from: if a write bumped it since,
            # this entry is never read (and expires with its TTL).
            self._client.set(self._key(user_id, generation, key), value, ex=int(ttl))
        except Exception as exc:
            self.errors += 1
            log.warning("redis cache set failed, bypassing: %s", type(exc).__name__)

    def invalidate_user(self, user_id: str) -> None:
        try:
            self._bump(user_id)
        except Exception as exc:
            self.errors += 1
            with self._lock:
                self._dirty.add(user_id)
            log.warning("redis invalidation failed for a user; serving them uncached until it succeeds: %s",
                        type(exc).__name__)
            self._retry_in_background()

    def settled(self, user_id: str) -> bool:
        if self.settle_s <= 0:
            return False
        with self._lock:
            if user_id in self._dirty:  # a write whose mark never reached Redis
                return False
        try:
            return bool(self._settled_script(keys=[self._write_mark_key(user_id)],
                                             args=[int(self.settle_s * 1000), self._mark_ttl]))
        except Exception:
            return False

    def ping(self) -> bool:
        try:
            return bool(self._client.ping())
        except Exception:
            return False


def open_cache(redis_url: str, ttl_s: int, namespace: str = "", clock: Clock | None = None,
               settle_s: float = 0.0) -> ResultCache:
    """Redis when configured (keys under ``ltm:<namespace>``, see ``Settings.cache_namespace``),
    else an in-process cache (one per engine, so it needs no namespace) timed by ``clock`` when
    one is injected. Redis keeps its own time: its entries expire on the server's clock."""
    if not redis_url:
        return InProcessCache(ttl_s=ttl_s, clock=clock, settle_s=settle_s)
    return RedisCache(redis_url, ttl_s=ttl_s, prefix=f"ltm:{namespace}" if namespace else "ltm", settle_s=settle_s)
