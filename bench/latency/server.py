"""``python -m bench.latency.server [--size 100k] [--queries 200] [--workdir DIR]``

The dense leg on a real Milvus server, index by index, under the product's layout: one
collection made by ``memory_core.vectors.schema.create_collection`` (``user_id`` as partition key
over 64 partitions, Strong consistency) and the product's filter (``build_filter``: the user,
expiry at NOW, nothing created after NOW). The server is PyPI ``milvus`` 2.3.5 standalone in a
network namespace of its own, reached through a socat bridge on 127.0.0.1
(bench/milvus_server.py): every figure includes that extra local hop.

Corpus and queries are the latency benchmark's own (bench/latency/corpus.py: the same users,
clustered synthetic vectors and query vectors as its Lite ``100k`` entry). For each index:
build time, recall@20 against an exact numpy scan of the same user's vectors under the same
filter, client-side latency of one search request (limit 20) p50/p95/p99 under Strong consistency
(the product's) and Bounded (the search alone), and the server's RSS.
Writes ``bench/results/latency.json`` under ``server-<size>`` (other entries are kept).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from bench.latency.corpus import SPECS, SentencePool, SyntheticEmbedder, UserBatch, query_texts, user_batch, user_id
from bench.latency.measure import Timer, load_avg, pct
from bench.latency.runner import NOW, _exact_top, batch_offset
from bench.milvus_server import LocalMilvusServer
from memory_core.config import Settings
from memory_core.lifecycle import epoch
from memory_core.vectors.base import VectorFilter
from memory_core.vectors.filters import build_filter
from memory_core.vectors.schema import create_collection

RESULTS = Path(__file__).resolve().parents[1] / "results"
COLLECTION = "bench_server"
INSERT_BATCH = 2_000
HNSW_BUILD = {"M": 16, "efConstruction": 200}
# (label, index type, build params, search params); FLAT is what the product creates today.
# Strong is what the product's collections use (a memory written now is found by the next
# search, from any replica); on 2.3.5 it waits for the server's next time tick. Bounded shows
# the search cost alone.
CONSISTENCY = ("Strong", "Bounded")
CONFIGS = [
    ("FLAT", "FLAT", {}, {}),
    ("HNSW M16 efC200 ef64", "HNSW", HNSW_BUILD, {"ef": 64}),
    ("HNSW M16 efC200 ef128", "HNSW", HNSW_BUILD, {"ef": 128}),
    ("IVF_FLAT nlist128 nprobe16", "IVF_FLAT", {"nlist": 128}, {"nprobe": 16}),
    ("IVF_FLAT nlist128 nprobe64", "IVF_FLAT", {"nlist": 128}, {"nprobe": 64}),
    ("IVF_SQ8 nlist128 nprobe32", "IVF_SQ8", {"nlist": 128}, {"nprobe": 32}),
]


def _rows(batch: UserBatch, offset: int, ttl: tuple[int, ...]) -> list[dict[str, Any]]:
    """The product's row for each memory (text empty: the keyword leg is not measured here)."""
    rows = []
    for j in range(len(batch.texts)):
        created = epoch(batch.created_at[j])
        days = ttl[int(np.clip(batch.importance[j], 1, 5)) - 1]
        rows.append({"memory_id": f"b{offset + j:09d}", "user_id": batch.user_id, "embedding": batch.vectors[j].tolist(),
                     "text": "", "importance": int(batch.importance[j]), "created_at": created,
                     "expires_at": created + days * 86400 if days > 0 else 0,
                     "memory_type": batch.memory_types[j].value, "content_hash": ""})
    return rows


def _wait_indexed(client: Any, total: int, timeout_s: float = 3600) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = client.describe_index(COLLECTION, "embedding", timeout=60)
        if int(info.get("indexed_rows", 0)) >= total and int(info.get("pending_index_rows", 0)) == 0:
            return
        time.sleep(1)
    raise TimeoutError("index build did not finish")


def _measure(client: Any, params: dict[str, Any], cases: list[tuple[str, np.ndarray, VectorFilter, set[str]]],
             consistency: str) -> dict[str, Any]:
    search_params = {"metric_type": "COSINE", "params": params}
    for uid, vec, flt, _ in cases[:10]:  # warm-up
        client.search(COLLECTION, data=[vec.tolist()], anns_field="embedding", filter=build_filter(flt), limit=20,
                      search_params=search_params, consistency_level=consistency, timeout=60)
    times, recalls = [], []
    for uid, vec, flt, truth in cases:
        expr = build_filter(flt)
        with Timer() as t:
            hits = client.search(COLLECTION, data=[vec.tolist()], anns_field="embedding", filter=expr, limit=20,
                                 search_params=search_params, consistency_level=consistency, timeout=60)[0]
        times.append(t.ms)
        recalls.append(len(truth & {str(h["id"]) for h in hits}) / max(1, len(truth)))
    return {"search_ms": pct(times, 50, 95, 99), "recall@20": round(float(np.mean(recalls)), 4),
            "recall@20_min": round(float(np.min(recalls)), 4)}


def run(size: str, queries: int, workdir: Path, progress: Any = print, time_tick_ms: int | None = None,
        only: str = "") -> dict[str, Any]:
    """``only``: a comma list of index kinds (FLAT, HNSW, IVF_FLAT, IVF_SQ8) to measure; all when empty."""
    from memory_core.vectors import pymilvus_import  # noqa: F401
    from pymilvus import MilvusClient

    spec = SPECS[size]
    shutil.rmtree(workdir, ignore_errors=True)
    server = LocalMilvusServer(workdir / "server",
                               config={"proxy.timeTickInterval": time_tick_ms} if time_tick_ms else None)
    server.start()
    loads = {"start": load_avg()}
    client = MilvusClient(uri=server.uri, timeout=60, alias="bench-latency-server")
    try:
        version = client.get_server_version(timeout=60)
        rss = {"idle_mb": round(server.milvus_rss_bytes() / 2**20, 1)}
        create_collection(client, COLLECTION, 384, partition_key=True, bm25=False, timeout=120)
        ttl = tuple(Settings(_env_file=None).ttl_days_by_importance)  # type: ignore[call-arg]
        pool = SentencePool()
        rng = random.Random(11)  # the Lite benchmark's query users
        query_users = [user_id(spec, i) for i in sorted(rng.sample(range(spec.users), min(spec.users, 40)))]
        kept: dict[str, UserBatch] = {}
        started, rows_done = time.perf_counter(), 0
        for index in range(spec.users):
            batch = user_batch(spec, index, pool, NOW)
            if batch.user_id in query_users:
                kept[batch.user_id] = batch
            rows = _rows(batch, batch_offset(spec, batch.user_id), ttl)
            for s in range(0, len(rows), INSERT_BATCH):
                client.insert(COLLECTION, rows[s:s + INSERT_BATCH], timeout=120)
            rows_done += len(rows)
            if index % max(1, spec.users // 10) == 0:
                progress(f"[server-{size}] inserted {rows_done:,} rows")
        insert_s = time.perf_counter() - started
        with Timer() as flush_t:
            client.flush(COLLECTION, timeout=600)
        loads["insert"] = load_avg()

        embedder = SyntheticEmbedder(spec.seed)
        texts = query_texts(queries)
        cases = []
        for i in range(queries):
            uid = query_users[i % len(query_users)]
            vec = embedder.embed_query(texts[i])
            flt = VectorFilter(user_id=uid, now=int(NOW.timestamp()), created_to=int(NOW.timestamp()) + 1)
            top = _exact_top(kept[uid], vec, flt, 20, ttl)
            cases.append((uid, vec, flt, {f"b{batch_offset(spec, uid) + j:09d}" for j in top}))

        indexes: dict[str, Any] = {}
        built: str | None = None
        kinds = {k.strip().upper() for k in only.split(",") if k.strip()}
        for label, kind, build, params in CONFIGS:
            if kinds and kind not in kinds:
                continue
            if kind != built:
                with Timer() as build_t:
                    client.release_collection(COLLECTION, timeout=120)
                    client.drop_index(COLLECTION, "embedding", timeout=120)
                    index_params = MilvusClient.prepare_index_params()
                    index_params.add_index("embedding", index_type=kind, metric_type="COSINE", params=build)
                    client.create_index(COLLECTION, index_params, timeout=600)
                    _wait_indexed(client, spec.total)
                    client.load_collection(COLLECTION, timeout=1800)
                built, build_s = kind, round(build_t.ms / 1000, 1)
                rss[f"loaded_{kind.lower()}_mb"] = round(server.milvus_rss_bytes() / 2**20, 1)
            indexes[label] = {"index": kind, "build_params": build, "search_params": params,
                              "build_and_load_s": build_s}
            for consistency in CONSISTENCY:
                progress(f"[server-{size}] measuring {label}, {consistency}")
                indexes[label][consistency] = _measure(client, params, cases, consistency)
                loads[f"{label} {consistency}"] = load_avg()
            progress(f"[server-{size}] {label}: {indexes[label]}")
        return {
            "server": f"milvus {version} standalone (PyPI milvus), own network namespace, socat bridge on 127.0.0.1",
            "layout": "one collection, user_id partition key, 64 partitions, Strong consistency (memory_core/vectors/schema.py)",
            "filter": "build_filter(user, expiry at NOW, created before NOW)",
            "measures": "one search request (1 query vector, limit 20) timed at the client; recall@20 vs exact numpy "
                        "scan of the user's vectors under the same filter",
            "proxy_time_tick_ms": time_tick_ms or 200,  # 200 = the server's default
            "indexes": indexes, "memories": spec.total, "users": spec.users, "per_user": spec.per_user, "dim": 384,
            "embeddings": "synthetic deterministic unit vectors (bench/latency/corpus.py)", "queries": queries,
            "insert_rows_per_s": round(spec.total / insert_s, 1), "flush_s": round(flush_t.ms / 1000, 1),
            "server_rss_mb": rss, "load_avg_by_phase": loads, "cpus": os.cpu_count(),
            "run_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
    finally:
        client.close()
        server.stop(timeout_s=10)
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.server")
    parser.add_argument("--size", default="100k", choices=[s for s in SPECS if not SPECS[s].real_embeddings])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=Path(os.environ.get("BENCH_WORKDIR", "data/bench-latency"))
                        / "server")
    parser.add_argument("--time-tick-ms", type=int, default=None,
                        help="proxy.timeTickInterval of the server (default 200); the entry is then "
                             "server-SIZE-tickNms")
    parser.add_argument("--only", default="",
                        help="comma list of index kinds to measure (FLAT,HNSW,IVF_FLAT,IVF_SQ8); their figures "
                             "are added to the entry's indexes, the others kept")
    parser.add_argument("--out", type=Path, default=RESULTS / "latency.json")
    args = parser.parse_args(argv)
    result = run(args.size, args.queries, args.workdir.resolve(), progress=lambda m: print(m, flush=True),
                 time_tick_ms=args.time_tick_ms, only=args.only)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    key = f"server-{args.size}" + (f"-tick{args.time_tick_ms}ms" if args.time_tick_ms else "")
    if args.only and key in previous:  # a partial run: the other indexes' figures stay, each with its run's
        earlier = previous[key]
        for label, figures in earlier["indexes"].items():
            if label not in result["indexes"]:
                result["indexes"][label] = {**figures, "run_at": earlier.get("run_at"),
                                            "load_avg_by_phase": {p: v for p, v in earlier.get("load_avg_by_phase", {}).items()
                                                                  if p.startswith(label)}}
        result["server_rss_mb"] = {**earlier.get("server_rss_mb", {}), **result["server_rss_mb"]}
        order = [label for label, *_ in CONFIGS]  # the table's order, whichever run measured a row
        result["indexes"] = dict(sorted(result["indexes"].items(),
                                        key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    previous[key] = result
    args.out.write_text(json.dumps(previous, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
