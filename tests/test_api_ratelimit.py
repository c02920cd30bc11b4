"""The per-key rate limit is shared across processes: counted in SQL (SQLite and PostgreSQL)
or in Redis, and a Redis outage falls back to SQL rather than opening the door."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from api.ratelimit import RateLimiter, RedisCounter, SqlCounter, build_limiter
from memory_core.storage.api_keys import open_api_keys
from tests.conftest import backend_url

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 3600  # an hour: a test's counts rarely straddle two windows (the cross-process test retries if so)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request, tmp_path) -> str:  # type: ignore[no-untyped-def]
    return backend_url(request) if request.param == "postgres" else f"sqlite:///{tmp_path / 'keys.sqlite3'}"


def _hit_in_another_process(database_url: str, key_id: str, times: int) -> list[int]:
    code = ("import json, sys; from api.ratelimit import RateLimiter, SqlCounter; "
            "from memory_core.storage.api_keys import open_api_keys; "
            f"limiter = RateLimiter(SqlCounter(open_api_keys(sys.argv[1])), window_s={WINDOW}); "
            f"print(json.dumps([limiter.check(sys.argv[2], 0).count for _ in range({times})]))")
    out = subprocess.run([sys.executable, "-c", code, database_url, key_id], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout)


def test_sql_counts_are_shared_across_processes(database_url: str) -> None:
    repo = open_api_keys(database_url)
    limiter = RateLimiter(SqlCounter(repo), window_s=WINDOW)
    key_id = uuid.uuid4().hex[:16]
    for _attempt in range(2):  # a window boundary between the two processes restarts the count: try again
        key_id = uuid.uuid4().hex[:16]
        assert limiter.check(key_id, 3).allowed
        child = _hit_in_another_process(database_url, key_id, 2)
        mine = limiter.check(key_id, 3)
        if child == [2, 3]:
            break
    assert child == [2, 3]
    assert mine.count == 4 and not mine.allowed and 0 < mine.retry_after_s <= WINDOW
    assert limiter.check(uuid.uuid4().hex[:16], 3).allowed  # another key has its own count


def test_unlimited_keys_are_counted_but_never_refused(database_url: str) -> None:
    limiter = RateLimiter(SqlCounter(open_api_keys(database_url)), window_s=WINDOW)
    decisions = [limiter.check("free", 0) for _ in range(5)]
    assert all(d.allowed for d in decisions) and decisions[-1].count == 5


def test_old_windows_are_pruned(database_url: str) -> None:
    repo = open_api_keys(database_url)
    clock = [10_000.0]
    limiter = RateLimiter(SqlCounter(repo), window_s=60, clock=lambda: clock[0])
    limiter.check("k", 0)
    clock[0] += 600  # ten windows later
    limiter.check("k", 0)
    assert repo.prune_counters(10**12) == 1  # only the current window's row was left


def test_redis_counts_are_shared_and_expire(redis_url: str) -> None:
    prefix = f"ltmtest:rate:{uuid.uuid4().hex[:8]}"
    one, two = (RateLimiter(RedisCounter(redis_url, prefix=prefix), window_s=WINDOW) for _ in range(2))
    assert [one.check("k", 3).allowed, two.check("k", 3).allowed, one.check("k", 3).allowed] == [True] * 3
    refused = two.check("k", 3)
    assert not refused.allowed and refused.count == 4
    import redis

    client = redis.Redis.from_url(redis_url)
    keys = client.keys(f"{prefix}:*")
    assert len(keys) == 1 and 0 < client.ttl(keys[0]) <= 2 * WINDOW
    client.delete(*keys)


def test_redis_down_falls_back_to_sql(tmp_path: Path) -> None:
    repo = open_api_keys(f"sqlite:///{tmp_path / 'keys.sqlite3'}")
    limiter = build_limiter(repo, "redis://127.0.0.1:9/0", window_s=WINDOW)  # nothing listens on port 9
    assert limiter.backend == "redis"
    assert [limiter.check("k", 2).allowed for _ in range(3)] == [True, True, False]
    assert repo.hit("k", int(time.time() // WINDOW) * WINDOW) == 4  # the fallback counted them
