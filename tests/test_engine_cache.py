"""Retrieval results are cached per user and invalidated by every write for that user."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("sql,cache", [("sqlite", "memory"), ("postgres", "redis")])
def test_cache_hits_and_is_invalidated_by_writes(make_engine, sql: str, cache: str) -> None:
    engine = make_engine(sql=sql, cache=cache)
    engine.add("u1", "I am vegetarian and I do not eat fish")
    engine.add("u2", "I love grilled fish on Fridays")
    first = engine.search("u1", "What food do I avoid?")
    assert not first.cache_hit
    second = engine.search("u1", "  what FOOD do i avoid? ")  # normalised to the same key
    assert second.cache_hit
    assert [r.memory_id for r in second.results] == [r.memory_id for r in first.results]
    assert second.results[0].parts == first.results[0].parts
    assert second.context_block == first.context_block

    # Another user's write leaves u1's cache alone; u1's own write retires it.
    engine.add("u2", "I also eat sushi")
    assert engine.search("u1", "What food do I avoid?").cache_hit
    new = engine.add("u1", "I also avoid eggs since last year").memory_ids[0]
    third = engine.search("u1", "What food do I avoid?")
    assert not third.cache_hit
    assert new in [r.memory_id for r in third.results]

    # Edits, expiry and deletes invalidate too.
    assert engine.search("u1", "What food do I avoid?").cache_hit
    engine.expire(new, actor="staff:x")
    after = engine.search("u1", "What food do I avoid?")
    assert not after.cache_hit and new not in [r.memory_id for r in after.results]
    engine.flush()
    rows = engine.repo.metrics()
    assert sum(1 for r in rows if r["cache_hit"]) == 3 and len(rows) == 6


def test_redis_down_bypasses_cache(make_engine) -> None:
    from memory_core.cache import RedisCache

    broken = RedisCache("redis://127.0.0.1:1/0", socket_timeout_s=0.2)  # nothing listens on port 1
    engine = make_engine(cache=broken)
    mid = engine.add("u1", "I take the 7:40 train to work").memory_ids[0]
    for _ in range(2):
        response = engine.search("u1", "which train do I take")
        assert not response.cache_hit and response.results[0].memory_id == mid
    assert broken.errors >= 1 and engine.health()["cache"] is False


def test_redis_flushed_mid_run_stays_correct(make_engine, redis_url) -> None:
    import redis

    engine = make_engine(cache="redis")
    engine.add("u1", "My locker number is 42")
    assert not engine.search("u1", "locker number").cache_hit
    assert engine.search("u1", "locker number").cache_hit
    redis.Redis.from_url(redis_url).flushdb()
    mid = engine.add("u1", "My locker moved to number 77").memory_ids[0]
    response = engine.search("u1", "locker number")
    assert not response.cache_hit and mid in [r.memory_id for r in response.results]
