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
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from bench.load.api_client import ApiOps, ApiServer, FacadeOps  # noqa: E402
from bench.load.workload import Stats, drive, result_row, verify  # noqa: E402
from memory_core import Settings, open_memory  # noqa: E402


def _settings(database_url: str, model_cache_dir: Path) -> Settings:
    tmp = Path(tempfile.mkdtemp(prefix="ltm-load-"))
    return Settings(_env_file=None, data_dir=tmp, milvus_uri=str(tmp / "load.db"), database_url=database_url,
                    model_cache_dir=model_cache_dir, redis_url="", openai_base_url="", openai_api_key=None, llm_model="")


def run(users: int, seconds: float, database_url: str, model_cache_dir: Path = Path("data/models")) -> dict[str, object]:
    """The load through the engine facade, in this process."""
    engine = open_memory(_settings(database_url, model_cache_dir))
    engine.warm_up()  # as the API server does before its first request: the two runs start alike
    stats = Stats()
    elapsed = drive([(FacadeOps(engine, f"load-user-{i}"), f"load-user-{i}") for i in range(users)], seconds, stats)
    checks = verify(engine, stats)
    engine.close()
    return result_row("facade", users, elapsed, stats, checks, replicas=1, vector_store="milvus-lite")


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
        elapsed = drive(workers, seconds, stats)
    finally:
        server.stop()
    engine = open_memory(settings)
    checks = verify(engine, stats)
    engine.close()
    return result_row("api", users, elapsed, stats, checks, replicas=1, vector_store="milvus-lite",
                      rate_limit_backend=health.get("rate_limit_backend"))


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
