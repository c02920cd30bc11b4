"""Load test: N simulated users hammer one store with a realistic mix, then every acknowledged
write is checked to be present exactly once in SQL and Milvus, and every search result is
checked to be one of the asking user's own memories.

Run: ``python -m bench.load --users 16 --seconds 60`` (add ``--users 1,4,16,32`` to find where it
saturates). ``--api`` runs the same load a second time through the HTTP API (``python -m api``
in a child process, each simulated user a keep-alive HTTP client with its tenant's key; users
split over two tenants with the same user names), on a fresh store in the same run, and prints
the API's figures beside the facade's with their ratio. Loopback only: the stores are embedded
(SQLite/PostgreSQL + Milvus Lite).
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
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from bench.load.api_client import ApiOps, ApiServer, FacadeOps  # noqa: E402
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
    acknowledged: dict[str, list[str]] = field(default_factory=dict)  # engine user id -> memory ids acknowledged
    cross_user: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def simulated_user(ops, engine_user: str, deadline: float, stats: Stats, seed: int) -> None:  # type: ignore[no-untyped-def]
    """One user's loop. A search result counts as cross-user when it is not one of the memories
    this user was acknowledged (each user writes from one thread, so every own memory is known
    before the search that may return it) or comes back under another user id."""
    rng = random.Random(seed)
    mine: list[str] = []
    own: set[str] = set()
    while time.monotonic() < deadline:
        op = rng.choices(["add", "search", "edit"], weights=[0.35, 0.55, 0.10])[0]
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


def _drive(workers: list[tuple[Any, str]], seconds: float, stats: Stats) -> float:
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=simulated_user, args=(ops, engine_user, deadline, stats, i))
               for i, (ops, engine_user) in enumerate(workers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def _row(mode: str, users: int, elapsed: float, stats: Stats, checks: dict[str, int], **extra: Any) -> dict[str, Any]:
    ops = sum(len(v) for v in stats.latencies.values())
    return {
        "mode": mode, "users": users, "seconds": round(elapsed, 1), "ops": ops, "ops_per_s": round(ops / elapsed, 1),
        **{f"{op}_p95_ms": round(pct(v, 95), 1) for op, v in stats.latencies.items()},
        **{f"{op}_p50_ms": round(statistics.median(v), 1) if v else 0.0 for op, v in stats.latencies.items()},
        "errors": sum(stats.errors.values()), "error_kinds": dict(stats.errors),
        "cross_user_results": stats.cross_user, **checks, "load_avg": round(os.getloadavg()[0], 2), **extra,
    }


def _settings(database_url: str, model_cache_dir: Path) -> Settings:
    tmp = Path(tempfile.mkdtemp(prefix="ltm-load-"))
    return Settings(_env_file=None, data_dir=tmp, milvus_uri=str(tmp / "load.db"), database_url=database_url,
                    model_cache_dir=model_cache_dir, redis_url="", openai_base_url="", openai_api_key=None, llm_model="")


def run(users: int, seconds: float, database_url: str, model_cache_dir: Path = Path("data/models")) -> dict[str, object]:
    """The load through the engine facade, in this process."""
    engine = open_memory(_settings(database_url, model_cache_dir))
    engine.warm_up()  # as the API server does before its first request: the two runs start alike
    stats = Stats()
    elapsed = _drive([(FacadeOps(engine, f"load-user-{i}"), f"load-user-{i}") for i in range(users)], seconds, stats)
    checks = verify(engine, stats)
    engine.close()
    return _row("facade", users, elapsed, stats, checks)


TENANTS = ("load-a", "load-b")


def run_api(users: int, seconds: float, database_url: str, model_cache_dir: Path) -> dict[str, object]:
    """The same load through ``python -m api`` (a child process) on a fresh store; users alternate
    between two tenants that use the same user names, so a namespace leak would show as a
    cross-user result."""
    from api.keys import create_key
    from api.tenancy import engine_user
    from memory_core.storage.api_keys import open_api_keys

    settings = _settings(database_url, model_cache_dir)
    key_repo = open_api_keys(settings.resolved_database_url)
    # The limiter runs (one counter write per request) but a high limit never refuses.
    keys = {t: create_key(key_repo, f"bench-{t}", t, rate_limit_per_min=1_000_000) for t in TENANTS}
    key_repo.engine.dispose()
    env = {"DATA_DIR": str(settings.data_dir), "MILVUS_URI": settings.milvus_uri,
           "DATABASE_URL": settings.resolved_database_url, "MODEL_CACHE_DIR": str(model_cache_dir), "REDIS_URL": "",
           "OPENAI_BASE_URL": "", "LOG_LEVEL": "WARNING", "API_RATE_LIMIT_PER_MIN": "0"}
    server = ApiServer(env, settings.data_dir / "api-server.log")
    try:
        health = server.wait_ready()
        workers = []
        for i in range(users):
            tenant, user = TENANTS[i % 2], f"load-user-{i // 2}"
            workers.append((ApiOps(server.base_url, keys[tenant], user), engine_user(tenant, user)))
        stats = Stats()
        elapsed = _drive(workers, seconds, stats)
    finally:
        server.stop()
    engine = open_memory(settings)
    checks = verify(engine, stats)
    engine.close()
    return _row("api", users, elapsed, stats, checks, rate_limit_backend=health.get("rate_limit_backend"))


RATIO_FIELDS = ("ops_per_s", "add_p50_ms", "add_p95_ms", "search_p50_ms", "search_p95_ms", "edit_p50_ms", "edit_p95_ms")


def ratios(facade: dict[str, Any], api: dict[str, Any]) -> dict[str, float | None]:
    """API figure / facade figure: below 1 for ops/s and above 1 for latencies is the API's cost."""
    return {f: round(float(api[f]) / float(facade[f]), 2) if facade[f] else None for f in RATIO_FIELDS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", default="1,4,16", help="comma-separated concurrency levels")
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--database-url", default="", help="default: a SQLite file in a temp dir")
    parser.add_argument("--model-cache-dir", type=Path, default=Path(os.environ.get("MODEL_CACHE_DIR", "data/models")))
    parser.add_argument("--api", action="store_true", help="also run each level through the HTTP API")
    parser.add_argument("--out", default=None, help="default bench/results/load.json (load-api.json with --api)")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    compared: list[dict[str, Any]] = []
    for n in (int(x) for x in args.users.split(",")):
        rows.append(run(n, args.seconds, args.database_url, args.model_cache_dir))
        if args.api:
            rows.append(run_api(n, args.seconds, args.database_url, args.model_cache_dir))
            compared.append({"users": n, **ratios(rows[-2], rows[-1])})
    print(f"\n{os.cpu_count()} cores; loopback only; embedded Milvus Lite"
          + ("; api = python -m api in a child process, httpx clients" if args.api else "") + "\n")
    print("| mode | users | ops/s | add p50/p95 ms | search p50/p95 ms | edit p50/p95 ms | errors | lost | dup | cross-user | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['users']} | {r['ops_per_s']} | {r['add_p50_ms']}/{r['add_p95_ms']} | "
              f"{r['search_p50_ms']}/{r['search_p95_ms']} | {r['edit_p50_ms']}/{r['edit_p95_ms']} | {r['errors']} | "
              f"{r['lost']} | {r['duplicated']} | {r['cross_user_results']} | {r['load_avg']} |")
    for c in compared:
        print(f"api / facade at {c['users']} users: " + ", ".join(f"{f} {c[f]}" for f in RATIO_FIELDS))
    out = Path(args.out or ("bench/results/load-api.json" if args.api else "bench/results/load.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "api_over_facade": compared} if args.api else rows, indent=2,
                              ensure_ascii=False))
    bad = [r for r in rows if r["lost"] or r["duplicated"] or r["cross_user_results"] or (r["mode"] == "api" and r["errors"])]
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
