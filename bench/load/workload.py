"""The load test's workload, shared by ``python -m bench.load`` (one process) and
``python -m bench.load.replicas`` (several replica processes on one Milvus server): the simulated
users' mix of writes, searches and edits, the after-run check that every acknowledged write is
present exactly once in SQL and in the vector store, and the result row.
"""
from __future__ import annotations

import os
import random
import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memory_core import MemoryQuery, MemoryStatus

FACTS_ZH = ["我对{x}过敏", "我住在{x}", "我喜欢吃{x}", "我的爱好是{x}", "上周去了{x}", "我不喜欢{x}"]
FACTS_EN = ["I am allergic to {x}", "I live in {x}", "I like eating {x}", "My hobby is {x}", "Last week I visited {x}"]
THINGS = ["芒果", "花生", "北京", "上海", "杭州", "火锅", "寿司", "网球", "摄影", "Lisbon", "hiking", "chess", "mango",
          "peanuts", "Berlin", "ramen", "jazz", "yoga"]
QUERIES = ["我对什么过敏", "我住在哪里", "推荐点吃的", "What am I allergic to?", "Where do I live?", "my hobbies"]


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"add": [], "search": [], "edit": []})
    errors: Counter = field(default_factory=Counter)
    acknowledged: dict[str, list[str]] = field(default_factory=dict)  # engine user id -> memory ids acknowledged
    cross_user: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


# The operation mixes: "mixed" is the load test's (writes, searches, staff edits); "search" only
# asks, as users do once they have stopped telling things (replicas.py's read phase).
MIXES = {"mixed": (0.35, 0.55, 0.10), "search": (0.0, 1.0, 0.0)}


def simulated_user(ops, engine_user: str, deadline: float, stats: Stats, seed: int,  # type: ignore[no-untyped-def]
                   mix: str = "mixed", known: list[str] | None = None) -> None:
    """One user's loop. A search result counts as cross-user when it is not one of the memories
    this user was acknowledged (each user writes from one thread, so every own memory is known
    before the search that may return it) or comes back under another user id. ``known``: the
    memories this user was acknowledged in an earlier phase (its own, for the same check)."""
    rng = random.Random(seed)
    mine: list[str] = list(known or [])
    own: set[str] = set(mine)
    while time.monotonic() < deadline:
        op = rng.choices(["add", "search", "edit"], weights=MIXES[mix])[0]
        started = time.perf_counter()
        try:
            if op == "add" or (op == "edit" and not mine):
                template = rng.choice(FACTS_ZH + FACTS_EN)
                text = template.format(x=rng.choice(THINGS)) + f" #{rng.randrange(10**6)}"
                ids = ops.add(text, actor=ops.user)
                mine.extend(i for i in ids if i not in own)
                own.update(ids)
                op = "add"
            elif op == "search":
                hits = ops.search(rng.choice(QUERIES))
                if any(mid not in own or uid != ops.user for mid, uid in hits):
                    with stats.lock:
                        stats.cross_user += 1
            else:
                ops.edit(rng.choice(mine), importance=rng.randint(1, 5))
        except Exception as exc:
            with stats.lock:
                stats.errors[f"{op}: {type(exc).__name__}"] += 1
            continue
        with stats.lock:
            stats.latencies[op].append((time.perf_counter() - started) * 1000)
    ops.close()
    with stats.lock:
        stats.acknowledged[engine_user] = mine


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def verify(engine, stats: Stats) -> dict[str, int]:  # type: ignore[no-untyped-def]
    engine.reconcile()
    lost = duplicated = missing_vectors = 0
    for user, ids in stats.acknowledged.items():
        rows = engine.list_memories(MemoryQuery(user_id=user, limit=1000)).items
        counts = Counter(r.memory_id for r in rows)
        active = {r.memory_id for r in rows if r.status is MemoryStatus.ACTIVE}
        vectors = engine.vectors.user_hashes(user)
        for mid in ids:
            if counts[mid] == 0:
                lost += 1
            elif counts[mid] > 1:
                duplicated += 1
            if mid in active and mid not in vectors:
                missing_vectors += 1
        duplicated += sum(1 for mid in vectors if mid not in counts)
    return {"lost": lost, "duplicated": duplicated, "missing_vectors": missing_vectors}


def drive(workers: list[tuple[Any, str]], seconds: float, stats: Stats, first_seed: int = 0, mix: str = "mixed",
          known: dict[str, list[str]] | None = None) -> float:
    """Run each (ops, engine user) on a thread of its own for ``seconds``; user ``i`` draws its
    operations from seed ``first_seed + i`` (replicas pass distinct first seeds)."""
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=simulated_user, args=(ops, engine_user, deadline, stats, first_seed + i, mix,
                                                             (known or {}).get(engine_user)))
               for i, (ops, engine_user) in enumerate(workers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def result_row(mode: str, users: int, elapsed: float, stats: Stats, checks: dict[str, int], **extra: Any) -> dict[str, Any]:
    ops = sum(len(v) for v in stats.latencies.values())
    return {
        "mode": mode, "users": users, "seconds": round(elapsed, 1), "ops": ops, "ops_per_s": round(ops / elapsed, 1),
        **{f"{op}_p95_ms": round(pct(v, 95), 1) for op, v in stats.latencies.items()},
        **{f"{op}_p50_ms": round(statistics.median(v), 1) if v else 0.0 for op, v in stats.latencies.items()},
        "errors": sum(stats.errors.values()), "error_kinds": dict(stats.errors),
        "cross_user_results": stats.cross_user, **checks, "load_avg": round(os.getloadavg()[0], 2), **extra,
    }
