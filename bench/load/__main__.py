"""Load test: N simulated users hammer one store with a realistic mix, then every acknowledged
write is checked to be present exactly once in SQL and Milvus, and every search result is
checked to belong to the user who asked.

Run: ``python -m bench.load --users 16 --seconds 60`` (add ``--users 1,4,16,32`` to find where it
saturates). Loopback only: the store is embedded (SQLite/PostgreSQL + Milvus Lite) in this process.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from memory_core import MemoryQuery, MemoryStatus, Settings, open_memory  # noqa: E402

FACTS_ZH = ["我对{x}过敏", "我住在{x}", "我喜欢吃{x}", "我的爱好是{x}", "上周去了{x}", "我不喜欢{x}"]
FACTS_EN = ["I am allergic to {x}", "I live in {x}", "I like eating {x}", "My hobby is {x}", "Last week I visited {x}"]
THINGS = ["芒果", "花生", "北京", "上海", "杭州", "火锅", "寿司", "网球", "摄影", "Lisbon", "hiking", "chess", "mango",
          "peanuts", "Berlin", "ramen", "jazz", "yoga"]
QUERIES = ["我对什么过敏", "我住在哪里", "推荐点吃的", "What am I allergic to?", "Where do I live?", "my hobbies"]


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"add": [], "search": [], "edit": []})
    errors: Counter = field(default_factory=Counter)
    acknowledged: dict[str, list[str]] = field(default_factory=dict)  # user -> memory ids acknowledged
    cross_user: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def simulated_user(engine, user: str, deadline: float, stats: Stats, seed: int) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    mine: list[str] = []
    while time.monotonic() < deadline:
        op = rng.choices(["add", "search", "edit"], weights=[0.35, 0.55, 0.10])[0]
        started = time.perf_counter()
        try:
            if op == "add" or (op == "edit" and not mine):
                template = rng.choice(FACTS_ZH + FACTS_EN)
                text = template.format(x=rng.choice(THINGS)) + f" #{rng.randrange(10**6)}"
                result = engine.add(user, text, actor=user)
                mine.extend(result.created)
                op = "add"
            elif op == "search":
                response = engine.search(user, rng.choice(QUERIES))
                if any(r.user_id != user for r in response.results):
                    with stats.lock:
                        stats.cross_user += 1
            else:
                engine.update(rng.choice(mine), actor="staff:load", importance=rng.randint(1, 5))
        except Exception as exc:
            with stats.lock:
                stats.errors[f"{op}: {type(exc).__name__}"] += 1
            continue
        with stats.lock:
            stats.latencies[op].append((time.perf_counter() - started) * 1000)
    with stats.lock:
        stats.acknowledged[user] = mine


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


def run(users: int, seconds: float, database_url: str) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="ltm-load-"))
    settings = Settings(_env_file=None, data_dir=tmp, milvus_uri=str(tmp / "load.db"),
                        database_url=database_url, model_cache_dir=Path("data/models"))
    engine = open_memory(settings)
    stats = Stats()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=simulated_user, args=(engine, f"load-user-{i}", deadline, stats, i))
               for i in range(users)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    checks = verify(engine, stats)
    engine.close()
    ops = sum(len(v) for v in stats.latencies.values())
    return {
        "users": users, "seconds": round(elapsed, 1), "ops": ops, "ops_per_s": round(ops / elapsed, 1),
        **{f"{op}_p95_ms": round(pct(v, 95), 1) for op, v in stats.latencies.items()},
        **{f"{op}_p50_ms": round(statistics.median(v), 1) if v else 0.0 for op, v in stats.latencies.items()},
        "errors": sum(stats.errors.values()), "error_kinds": dict(stats.errors),
        "cross_user_results": stats.cross_user, **checks, "load_avg": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", default="1,4,16", help="comma-separated concurrency levels")
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--database-url", default="", help="default: a SQLite file in a temp dir")
    parser.add_argument("--out", default="bench/results/load.json")
    args = parser.parse_args()
    rows = [run(int(n), args.seconds, args.database_url) for n in args.users.split(",")]
    print(f"\n{os.cpu_count()} cores; loopback only; embedded Milvus Lite\n")
    print("| users | ops/s | add p50/p95 ms | search p50/p95 ms | edit p50/p95 ms | errors | lost | dup | cross-user | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['users']} | {r['ops_per_s']} | {r['add_p50_ms']}/{r['add_p95_ms']} | {r['search_p50_ms']}/"
              f"{r['search_p95_ms']} | {r['edit_p50_ms']}/{r['edit_p95_ms']} | {r['errors']} | {r['lost']} | "
              f"{r['duplicated']} | {r['cross_user_results']} | {r['load_avg']} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2, ensure_ascii=False))
    bad = [r for r in rows if r["lost"] or r["duplicated"] or r["cross_user_results"]]
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
