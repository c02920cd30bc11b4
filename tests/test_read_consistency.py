"""The write marks behind the server's choice of read consistency (``ResultCache.settled``):
a user who wrote within ``settle_s`` is never "settled" (the store then reads Strong), on either
cache, across replicas sharing Redis, and whenever the cache is unsure. The server side of it
(a Bounded read after the window still finds everything) is in tests/test_server_contract.py.
"""
from __future__ import annotations

import uuid

import pytest

from memory_core.cache import InProcessCache, RedisCache


class Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_in_process_marks_each_write_for_the_window() -> None:
    ticks = Ticks()
    cache = InProcessCache(settle_s=10, monotonic=ticks)
    # a process that just started cannot know what it wrote before: nobody is settled yet
    assert not cache.settled("alice") and not cache.settled("张三")
    ticks.now += 10
    assert cache.settled("alice") and cache.settled("张三")
    cache.invalidate_user("张三")  # every write of a user goes through invalidate_user
    assert not cache.settled("张三")
    assert cache.settled("alice")  # another user's write says nothing about alice
    ticks.now += 9.9
    assert not cache.settled("张三")
    ticks.now += 0.1
    assert cache.settled("张三")


def test_no_window_means_never_settled() -> None:
    ticks = Ticks()
    cache = InProcessCache(monotonic=ticks)  # settle_s defaults to 0: every read Strong
    ticks.now += 10**6
    assert not cache.settled("alice")


@pytest.fixture
def redis_pair(redis_url: str):  # type: ignore[no-untyped-def]
    """Two replicas' caches on one Redis namespace, and the raw client (keys dropped after)."""
    import redis

    prefix = f"ltmtest:{uuid.uuid4().hex[:8]}"
    a, b = (RedisCache(redis_url, prefix=prefix, settle_s=10) for _ in range(2))
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    yield a, b, raw, prefix
    for key in raw.scan_iter(match=f"{prefix}:*"):
        raw.delete(key)


def _mark(raw, prefix: str) -> str:  # type: ignore[no-untyped-def]
    marks = list(raw.scan_iter(match=f"{prefix}:w:*"))
    assert len(marks) == 1, marks
    return marks[0]


def _age(raw, key: str, ms: int) -> None:  # type: ignore[no-untyped-def]
    """Make the mark say the last write was ``ms`` ago (Redis' clock), keeping its expiry."""
    seconds, micros = raw.time()
    raw.set(key, seconds * 1000 + micros // 1000 - ms, keepttl=True)


def test_redis_marks_hold_the_last_write_time_for_every_replica(redis_pair) -> None:  # type: ignore[no-untyped-def]
    a, b, raw, prefix = redis_pair
    assert not a.settled("bob")  # no mark: unsure (never written, evicted, Redis restarted) ...
    key = _mark(raw, prefix)  # ... so Strong, and the clock starts now
    assert not b.settled("bob")
    _age(raw, key, 20_000)
    assert a.settled("bob") and b.settled("bob")
    a.invalidate_user("bob")  # every write of a user goes through invalidate_user
    assert not a.settled("bob") and not b.settled("bob")  # the other replica sees the write
    assert raw.ttl(key) > 3600  # kept as long as a generation, not just the window
    _age(raw, key, 9_000)
    assert not b.settled("bob")
    _age(raw, key, 10_500)
    assert b.settled("bob")
    raw.delete(key)  # evicted by Redis' LRU, or lost in a restart
    assert not a.settled("bob") and not b.settled("bob")


def test_a_writer_without_a_window_still_marks_its_writes(redis_pair, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    """Replicas may differ in MILVUS_SETTLE_S: one that reads Strong always (0) must still tell
    the others when it wrote."""
    _a, b, raw, prefix = redis_pair
    strict = RedisCache(redis_url, prefix=prefix, settle_s=0)
    assert not b.settled("carol")
    _age(raw, _mark(raw, prefix), 20_000)
    assert b.settled("carol")
    strict.invalidate_user("carol")
    assert not b.settled("carol") and not strict.settled("carol")


def test_redis_unsure_is_never_settled_and_a_lost_mark_is_retried(redis_pair, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import time

    a, b, raw, prefix = redis_pair
    down = RedisCache("redis://127.0.0.1:1/0", settle_s=10, socket_timeout_s=0.2)  # nothing listens
    assert not down.settled("bob")
    assert not b.settled("dave")
    key = _mark(raw, prefix)
    _age(raw, key, 20_000)
    assert b.settled("dave")
    # a write whose invalidation fails on replica A: A knows, and retries in the background
    working = a._client.pipeline

    def failing_pipeline(*args: object, **kwargs: object) -> object:
        raise ConnectionError("redis went away")

    monkeypatch.setattr(a._client, "pipeline", failing_pipeline)
    a.invalidate_user("dave")
    assert not a.settled("dave") and a.generation("dave") is None
    assert b.settled("dave")  # B cannot know yet: at most the server's grace time of staleness
    monkeypatch.setattr(a._client, "pipeline", working)
    deadline = time.monotonic() + 10
    while a._dirty and time.monotonic() < deadline:  # the retry runs without any search of dave
        time.sleep(0.05)
    assert not a._dirty
    assert not b.settled("dave")  # the mark landed: B reads Strong again


def test_open_memory_relaxes_reads_only_with_a_shared_cache(make_engine, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    """Without Redis a replica cannot see another's writes, so nothing is ever settled."""
    alone = make_engine(milvus_settle_s=7)
    assert alone.cache.settle_s == 0 and not alone.cache.settled("anyone")
    shared = make_engine(milvus_settle_s=7, redis_url=redis_url, cache_namespace=f"t{uuid.uuid4().hex[:8]}")
    assert shared.cache.name == "redis" and shared.cache.settle_s == 7
    for bad in (-1, 3, 5.9):  # negative, or inside Milvus' 5 s grace time: silently wrong reads
        with pytest.raises(ValueError):
            make_engine(milvus_settle_s=bad)
