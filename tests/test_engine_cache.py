"""Retrieval results are cached per user and invalidated by every write for that user."""
from __future__ import annotations

from pathlib import Path

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


class _WriteMidSearch:
    """A reranker (a real pipeline stage, injected through the constructor) that runs a write
    once, after the search has read its candidates and before it stores its result."""

    name = "write-mid-search"

    def __init__(self) -> None:
        self.write = None

    def score(self, query, texts):  # type: ignore[no-untyped-def]
        write, self.write = self.write, None
        if write is not None:
            write()
        return [0.5] * len(texts)


@pytest.mark.parametrize("sql,cache", [("sqlite", "memory"), ("postgres", "redis")])
def test_a_write_during_a_search_is_not_hidden_by_its_cached_result(make_engine, sql: str, cache: str) -> None:
    """The search read the data before the write and stored its result after it: stored under
    the generation the write created, that stale result was served until its TTL, even after
    an erasure. Now it is stored under the generation the search started from."""
    stage = _WriteMidSearch()
    engine = make_engine(sql=sql, cache=cache, reranker=stage)
    mango = engine.add("u1", "I am allergic to mango").created[0]
    stage.write = lambda: engine.expire(mango, actor="staff:x")
    first = engine.search("u1", "What am I allergic to?")
    assert [r.memory_id for r in first.results] == [mango]  # read before the expiry committed
    again = engine.search("u1", "What am I allergic to?")
    assert not again.cache_hit and again.results == []

    passport = engine.add("u2", "My passport is in the blue drawer").created[0]
    stage.write = lambda: engine.delete_user("u2", actor="staff:x")
    assert [r.memory_id for r in engine.search("u2", "Where is my passport?").results] == [passport]
    assert engine.search("u2", "Where is my passport?").results == []


@pytest.mark.parametrize("sql,cache", [("sqlite", "memory"), ("postgres", "redis")])
def test_an_answer_served_from_the_cache_counts_as_a_use(make_engine, sql: str, cache: str) -> None:
    """Use keeps a memory alive (expiry extends often-retrieved memories); a repeated question
    answered from the cache is a use too."""
    engine = make_engine(sql=sql, cache=cache)
    memory_id = engine.add("u1", "My locker at the gym is number 214").created[0]
    answers = [engine.search("u1", "Which locker is mine?") for _ in range(4)]
    assert [a.cache_hit for a in answers] == [False, True, True, True]
    engine.flush()
    assert engine.get(memory_id).access_count == 4


def test_a_cached_answer_lasts_no_longer_than_its_memories(make_engine) -> None:
    """An expiry is a moment passing, not a write, so nothing invalidates the answer then: the
    entry's lifetime ends when the first memory it was ranked with expires."""
    from datetime import datetime, timedelta, timezone

    from memory_core import FixedClock

    start = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    clock = FixedClock(start)
    engine = make_engine(clock=clock)
    memory_id = engine.add("u1", "I parked the car on level 3").created[0]
    expires = engine.get(memory_id).expires_at
    assert expires is not None  # a passing remark: it expires (importance 2)
    clock.set(expires - timedelta(seconds=1))  # one second (of the engine's clock) before it expires
    assert engine.search("u1", "Where did I park?").results[0].memory_id == memory_id
    clock.set(expires + timedelta(seconds=1))  # same day, past its expiry: the entry's end too
    after = engine.search("u1", "Where did I park?")
    assert not after.cache_hit and after.results == []


def _redis_engine(make_settings, embedder, redis_url: str, where: Path, database_url: str = "",
                  **extra: object):  # type: ignore[no-untyped-def]
    from memory_core import open_memory

    settings = make_settings(data_dir=where, milvus_uri=str(where / "m.db"), redis_url=redis_url,
                             database_url=database_url, **extra)
    return open_memory(settings, embedder=embedder)


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_deployments_sharing_one_redis_never_serve_each_other(make_settings, embedder, redis_url, pg_url,
                                                              tmp_path: Path, sql: str) -> None:
    """Attack (issue 19, 2): two engines with different data, one REDIS_URL, the same user id:
    B's "alice" was served A's "My bank card PIN is 4321" from the cache (cache_hit=True)."""
    import redis

    from tests.conftest import fresh_pg_schema

    urls = [fresh_pg_schema(pg_url) if sql == "postgres" else "" for _ in range(2)]
    engines = []
    try:
        a = _redis_engine(make_settings, embedder, redis_url, tmp_path / "a", urls[0])
        b = _redis_engine(make_settings, embedder, redis_url, tmp_path / "b", urls[1])
        engines += [a, b]
        a.add("alice", "My bank card PIN is 4321, never tell anyone")
        b.add("alice", "I like green tea")
        query = "what is my bank card PIN?"
        assert not a.search("alice", query).cache_hit
        assert a.search("alice", query).cache_hit  # A's answer is in the shared Redis
        theirs = b.search("alice", query)
        assert not theirs.cache_hit
        assert all("4321" not in r.content for r in theirs.results) and "4321" not in theirs.context_block
        assert a.settings.resolved_cache_namespace != b.settings.resolved_cache_namespace

        # Two deployments configured with the same namespace by mistake: every hit is checked
        # against SQL (owner, status, text), so A's entry is a miss for B all the same.
        c = _redis_engine(make_settings, embedder, redis_url, tmp_path / "c", cache_namespace="same")
        d = _redis_engine(make_settings, embedder, redis_url, tmp_path / "d", cache_namespace="same")
        engines += [c, d]
        c.add("alice", "My bank card PIN is 4321, never tell anyone")
        d.add("alice", "I like green tea")
        c.search("alice", query)
        assert c.search("alice", query).cache_hit
        leaked = d.search("alice", query)
        assert not leaked.cache_hit and all("4321" not in r.content for r in leaked.results)
    finally:
        client = redis.Redis.from_url(redis_url)
        for engine in engines:
            namespace = getattr(engine.settings, "resolved_cache_namespace", "")
            for key in client.scan_iter(f"ltm:{namespace}:*") if namespace else ():
                client.delete(key)
            engine.close()


@pytest.mark.parametrize("sql,cache", [("sqlite", "memory"), ("postgres", "redis")])
def test_a_cache_hit_sql_no_longer_admits_is_a_miss(make_engine, sql: str, cache: str) -> None:
    """A cached answer whose memory changed in SQL without an invalidation reaching the cache
    (another process, a restored backup, a lost Redis write) is not served."""
    engine = make_engine(sql=sql, cache=cache)
    mid = engine.add("u1", "My locker number is 42").memory_ids[0]
    engine.search("u1", "locker number")
    assert engine.search("u1", "locker number").cache_hit
    with engine.repo.session() as session:  # behind the engine's back: no cache invalidation
        engine.repo.update_fields(session, mid, status="expired")
    after = engine.search("u1", "locker number")
    assert not after.cache_hit and mid not in [r.memory_id for r in after.results]


def test_the_cache_namespace_holds_no_secret_and_follows_the_data(make_settings, tmp_path: Path) -> None:
    one = make_settings(database_url="postgresql+psycopg2://ltm:s3cret@db:5432/ltm", milvus_uri="http://m:19530")
    rotated = make_settings(database_url="postgresql+psycopg2://ltm:other@db:5432/ltm", milvus_uri="http://m:19530")
    other_db = make_settings(database_url="postgresql+psycopg2://ltm:s3cret@db:5432/ltm2", milvus_uri="http://m:19530")
    assert "s3cret" not in one.resolved_cache_namespace
    assert one.resolved_cache_namespace == rotated.resolved_cache_namespace  # a password change keeps it
    assert one.resolved_cache_namespace != other_db.resolved_cache_namespace
    assert make_settings(cache_namespace="prod-eu").resolved_cache_namespace == "prod-eu"
    odd = make_settings(cache_namespace="a b:c*").resolved_cache_namespace
    assert odd.isalnum() and len(odd) == 16  # anything not key-safe is hashed


def test_the_in_process_cache_runs_on_the_injected_clock() -> None:
    """Entries end when the engine's clock passes their TTL (no test sleeps for it), the
    shorter of the cache's TTL and the entry's own wins, the oldest unused entry goes first
    when full, and an invalidation retires the user's entries and nobody else's."""
    from datetime import datetime, timedelta, timezone

    from memory_core import FixedClock
    from memory_core.cache import InProcessCache

    start = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
    clock = FixedClock(start)
    cache = InProcessCache(max_entries=2, ttl_s=60, clock=clock)
    gen = cache.generation("u1")
    assert gen is not None
    cache.set("u1", "q", "answer", gen, ttl_s=10)
    cache.set("u1", "long", "kept", gen)
    clock.set(start + timedelta(seconds=9))
    assert cache.get("u1", "q", gen) == "answer"
    clock.set(start + timedelta(seconds=11))
    assert cache.get("u1", "q", gen) is None  # its own 10 s are over
    assert cache.get("u1", "long", gen) == "kept"  # the cache's 60 s are not
    clock.set(start + timedelta(seconds=61))
    assert cache.get("u1", "long", gen) is None

    cache.set("u1", "a", "1", gen)
    cache.set("u1", "b", "2", gen)
    assert cache.get("u1", "a", gen) == "1"  # "a" used last: "b" is the one to go
    cache.set("u1", "c", "3", gen)
    assert [cache.get("u1", k, gen) for k in ("a", "b", "c")] == ["1", None, "3"]

    other = cache.generation("u2")
    assert other is not None
    cache.set("u2", "x", "theirs", other)
    cache.invalidate_user("u1")
    assert cache.get("u1", "a", gen) is None and cache.generation("u1") != gen
    assert cache.get("u2", "x", other) == "theirs"
    cache.set("u1", "late", "stale", gen)  # a search that began before the write
    assert cache.get("u1", "late", gen) is None
