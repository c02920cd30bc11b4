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


def test_redis_marks_are_seen_by_every_replica_and_expire_on_redis(redis_pair) -> None:  # type: ignore[no-untyped-def]
    a, b, raw, prefix = redis_pair
    assert a.settled("bob") and b.settled("bob")  # no mark in Redis: nothing written lately
    a.invalidate_user("bob")
    assert not a.settled("bob") and not b.settled("bob")  # the other replica sees the mark
    assert b.settled("carol")
    marks = list(raw.scan_iter(match=f"{prefix}:w:*"))
    assert len(marks) == 1
    assert 0 < raw.pttl(marks[0]) <= 10_000  # the window is Redis' own expiry, no replica's clock
    raw.delete(marks[0])  # what Redis does when the window ends
    assert a.settled("bob") and b.settled("bob")


def test_redis_unsure_is_never_settled(redis_pair, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    a, _b, _raw, _prefix = redis_pair
    down = RedisCache("redis://127.0.0.1:1/0", settle_s=10, socket_timeout_s=0.2)  # nothing listens
    assert not down.settled("bob")
    # a write whose mark did not reach Redis: unsettled until the retry lands
    broken = a._client.pipeline

    def failing_pipeline(*args: object, **kwargs: object) -> object:
        raise ConnectionError("redis went away")

    monkeypatch.setattr(a._client, "pipeline", failing_pipeline)
    a.invalidate_user("dave")
    assert not a.settled("dave")
    monkeypatch.setattr(a._client, "pipeline", broken)
    assert a.generation("dave") is not None  # the next read retries the bump, mark included
    assert not a.settled("dave")


def test_open_memory_relaxes_reads_only_with_a_shared_cache(make_engine, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    """Without Redis a replica cannot see another's writes, so nothing is ever settled."""
    alone = make_engine(milvus_settle_s=7)
    assert alone.cache.settle_s == 0 and not alone.cache.settled("anyone")
    shared = make_engine(milvus_settle_s=7, redis_url=redis_url, cache_namespace=f"t{uuid.uuid4().hex[:8]}")
    assert shared.cache.name == "redis" and shared.cache.settle_s == 7
    with pytest.raises(ValueError):
        make_engine(milvus_settle_s=-1)
