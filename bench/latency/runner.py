"""Measure one corpus size end to end (run in its own process by ``__main__`` so RSS, the
Milvus Lite child and caches of one size never leak into the next)."""
from __future__ import annotations

import os
import random
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from memory_core import AddItem, FixedClock, RetrievalOptions, Settings, open_memory
from memory_core.config import BUNDLED_EMBEDDING_MODEL
from memory_core.lifecycle import epoch
from memory_core.vectors.base import VectorFilter
from memory_core.vectors.milvus_store import MilvusVectorStore

from bench.latency.corpus import SPECS, SentencePool, SyntheticEmbedder, UserBatch, query_texts, user_id
from bench.latency.loader import load_corpus
from bench.latency.measure import PeakRss, Timer, disk_mb, load_avg, pct

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
STAGE_NAMES = ("rewrite", "embed", "search", "rerank", "fetch", "other", "total")
ADD_MANY_ROUNDS = 3  # batches of 512 texts; the median is reported (one batch was noise-bound)
REPO_ROOT = Path(__file__).resolve().parents[2]


def _exact_top(batch: UserBatch, query: np.ndarray, flt: VectorFilter, k: int, ttl: tuple[int, ...]) -> list[int]:
    """Exact filtered top-k over one user's vectors held in RAM: the physical-limit baseline."""
    created = np.fromiter((epoch(c) for c in batch.created_at), dtype=np.int64, count=len(batch.created_at))
    days = np.asarray(ttl, dtype=np.int64)[np.clip(batch.importance, 1, 5) - 1]
    expires = np.where(days > 0, created + days * 86400, 0)
    mask = ((expires == 0) | (expires > flt.now)) & (created < flt.created_to)
    scores = batch.vectors @ query
    scores = np.where(mask, scores, -np.inf)
    top = np.argpartition(-scores, k)[:k]
    return [int(i) for i in top[np.argsort(-scores[top])] if np.isfinite(scores[i])]


def run_size(label: str, workdir: Path, queries: int = 200, progress: Callable[[str], None] = print) -> dict[str, Any]:
    spec = SPECS[label]
    root = workdir / label
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rss = PeakRss().start()
    loads: dict[str, float] = {"start": load_avg()}
    settings = Settings(_env_file=None, data_dir=root, milvus_uri=str(root / "milvus.db"),  # type: ignore[call-arg]
                        model_cache_dir=REPO_ROOT / "data" / "test-models", redis_url="", openai_base_url="",
                        openai_api_key=None, llm_model="")
    if spec.real_embeddings:
        from memory_core.embedding import load_embedder

        embedder = load_embedder(BUNDLED_EMBEDDING_MODEL, settings.resolved_model_cache_dir, precision=spec.precision)
    else:
        embedder = SyntheticEmbedder(spec.seed)
    engine = open_memory(settings, embedder=embedder, clock=FixedClock(NOW))
    store = engine.vectors
    assert isinstance(store, MilvusVectorStore)
    writer = MilvusVectorStore(settings.resolved_milvus_uri, settings.milvus_collection, embedder.dim,
                               shards=store.shards)
    pool = SentencePool()
    rng = random.Random(11)
    query_users = [user_id(spec, i) for i in sorted(rng.sample(range(spec.users), min(spec.users, 40)))]
    vectors_for = (lambda b: embedder.embed_passages(b.texts)) if spec.real_embeddings else None
    progress(f"[{label}] building {spec.total:,} memories ({spec.users:,} users x {spec.per_user:,}), "
             f"{store.shards} Lite shards, embeddings: {'real ' + embedder.name if spec.real_embeddings else 'synthetic'}")
    build, kept = load_corpus(engine, spec, pool, NOW, vectors_for=vectors_for, writers=[store, writer],
                              keep=set(query_users), progress=progress)
    writer.close()
    # The same store without the per-user vector cache: Milvus answers its dense searches.
    uncached = MilvusVectorStore(settings.resolved_milvus_uri, settings.milvus_collection, embedder.dim,
                                 shards=store.shards, vector_cache_rows=0)
    loads["build"] = load_avg()
    progress(f"[{label}] built in {build['build_s']} s ({build['rows_per_s']:,.0f} rows/s), load {loads['build']}")

    texts = query_texts(queries + 10)
    # warm-up: jieba, model, SQL page cache, Milvus segments of the query users' shards
    for i in range(10):
        engine.search(query_users[i % len(query_users)], texts[queries + i], options=RetrievalOptions(use_cache=False))

    cold, warm, stages = [], [], {s: [] for s in STAGE_NAMES}
    search_stage, dense_only, dense_milvus, exact, recalls, recalls_milvus = [], [], [], [], [], []
    first_of_user: list[float] = []
    later_of_user: list[float] = []  # the user's vectors were already requested once in this process
    seen_users: set[str] = set()
    ttl = tuple(settings.ttl_days_by_importance)
    for i in range(queries):
        uid = query_users[i % len(query_users)]
        if uid not in seen_users:
            # The chat page calls prepare_user when the user opens it, seconds before the first
            # message; the unprepared first search is measured separately below.
            engine.prepare_user(uid, wait=True)
        with Timer() as t:
            response = engine.search(uid, texts[i], top_k=5)
        assert not response.cache_hit and not response.degraded
        cold.append(t.ms)
        if uid not in seen_users:  # includes loading the user's vectors into the vector cache
            seen_users.add(uid)
            first_of_user.append(t.ms)
        else:
            later_of_user.append(t.ms)
        timings = response.timings_ms
        for stage in STAGE_NAMES:
            if stage == "other":  # scoring, context block, cache write, telemetry enqueue
                stages[stage].append(timings["total"] - sum(timings.get(s, 0.0) for s in STAGE_NAMES[:5]))
            else:
                stages[stage].append(timings.get(stage, 0.0))
        search_stage.append(timings["search"])
        with Timer() as t:
            hit = engine.search(uid, texts[i], top_k=5)
        assert hit.cache_hit
        warm.append(t.ms)
        # exactness of the dense leg, on the same user, query vector and filter
        qvec = embedder.embed_query(response.rewritten_query)
        flt = VectorFilter(user_id=uid, now=int(NOW.timestamp()), created_to=int(NOW.timestamp()) + 1)
        with Timer() as t:
            ours = store.search_dense(qvec, flt, 20)
        dense_only.append(t.ms)
        with Timer() as t:
            raw = uncached.search_dense(qvec, flt, 20)
        dense_milvus.append(t.ms)
        batch = kept[uid]
        with Timer() as t:
            top = _exact_top(batch, qvec, flt, 20, ttl)
        exact.append(t.ms)
        truth = {f"b{int(batch_offset(spec, uid)) + j:09d}" for j in top}
        recalls.append(len(truth & {h.memory_id for h in ours}) / max(1, len(truth)))
        recalls_milvus.append(len(truth & {h.memory_id for h in raw}) / max(1, len(truth)))
    # A first search nobody prepared for (a client calling search() straight away): Milvus
    # answers the dense leg while the user's vectors load in the background.
    unprepared: list[float] = []
    others = [user_id(spec, i) for i in range(spec.users) if user_id(spec, i) not in set(query_users)][:10]
    for i, uid in enumerate(others):
        with Timer() as t:
            engine.search(uid, texts[i], top_k=5, options=RetrievalOptions(use_cache=False))
        unprepared.append(t.ms)
        store.prepare_user(uid, wait=True)  # the load it started must not overlap the next search
    loads["search"] = load_avg()
    progress(f"[{label}] search measured, load {loads['search']}")

    # add(): one memory at a time for existing users (near-duplicate check runs on their shard)
    add_ms = []
    fresh = query_texts(400, seed=99)
    for i in range(40):
        with Timer() as t:
            engine.add(query_users[i % len(query_users)], f"新的记忆 {i}: {pool.sentences[(i * 7919) % len(pool)]} ({fresh[i]})")
        add_ms.append(t.ms)
    # add_many: ADD_MANY_ROUNDS batches of 512 new texts, the median reported. The machine's speed
    # moves by a third between runs on these shared cores, so before each batch the model alone
    # embeds the same texts: the ratio of the two is the pipeline's own cost.
    rates: list[float] = []
    model_rates: list[float] = []
    for round_ in range(ADD_MANY_ROUNDS):
        batch_texts = query_texts(400, seed=99 + round_)
        items = [AddItem(user_id=query_users[i % len(query_users)],
                         content=f"{pool.sentences[(i * 104729 + round_ * 7919) % len(pool)]} — note {i} {batch_texts[i % 400]}")
                 for i in range(512)]
        if spec.real_embeddings:
            started = time.perf_counter()
            embedder.embed_passages([item.content for item in items])
            model_rates.append(len(items) / (time.perf_counter() - started))
        profiler = _profiler(label, "add_many") if round_ == 0 else None
        started = time.perf_counter()
        engine.add_many(items)
        rates.append(len(items) / (time.perf_counter() - started))
        if profiler is not None:
            profiler()
    add_many_per_s = float(np.median(rates))
    embed_only_per_s = round(float(np.median(model_rates)), 1) if model_rates else None
    loads["add"] = load_avg()
    engine.flush()
    cache = getattr(store, "_vcache", None)
    cache_stats = {"users_loaded": cache.loads, "rows": cache.rows} if cache is not None else None
    uncached.close()
    engine.close()
    peak = rss.stop()
    size_mb = disk_mb(root)

    ratio = float(np.median(search_stage) / max(1e-6, np.median(exact)))
    result = {
        "search_ms": {"cold": pct(cold, 50, 95, 99), "warm": pct(warm, 50, 95, 99),
                      "cold_not_first_of_user": pct(later_of_user, 50, 95, 99)},
        "stages_ms": {s: pct(v, 50, 95) for s, v in stages.items()},
        "dense_leg_ms": pct(dense_only, 50, 95),
        "dense_leg_milvus_ms": pct(dense_milvus, 50, 95),
        "recall@20_milvus_path": round(float(np.mean(recalls_milvus)), 4),
        "first_search_of_user_ms": pct(first_of_user, 50, 95),
        "first_search_unprepared_ms": pct(unprepared, 50, 95),
        "vector_cache": cache_stats,
        "exact_scan_ms": pct(exact, 50, 95),
        "search_stage_vs_exact_x": round(ratio, 1),
        "recall@20": round(float(np.mean(recalls)), 4),
        "add_ms": pct(add_ms, 50, 95),
        "add_many_per_s": round(add_many_per_s, 1),  # median of the rounds
        "add_many_rounds_per_s": [round(r, 1) for r in rates],
        "embed_only_per_s": embed_only_per_s,  # the same texts through the model alone, median (real model only)
        "embed_only_rounds_per_s": [round(r, 1) for r in model_rates],
        "peak_rss_mb": peak,
        "peak_rss_by_process_mb": rss.by_process_mb,
        "disk_mb": size_mb,
        "load_avg": round(float(np.mean([loads["search"], loads["add"]])), 2),
        "load_avg_by_phase": loads,
        "memories": spec.total, "users": spec.users, "per_user": spec.per_user,
        "embeddings": embedder.name if spec.real_embeddings else "synthetic deterministic unit vectors",
        "lite_shards": store.shards, "queries": queries, "build": build, "cpus": os.cpu_count(),
    }
    shutil.rmtree(root, ignore_errors=True) if os.environ.get("BENCH_KEEP") != "1" else None
    return result


def _profiler(label: str, what: str) -> Callable[[], None] | None:
    """With BENCH_PROFILE=1, profile one phase with pyinstrument (install it yourself) and write
    the tree to bench/results/profile-SIZE-PHASE.txt; returns the function that stops it."""
    if os.environ.get("BENCH_PROFILE") != "1":
        return None
    from pyinstrument import Profiler

    profiler = Profiler()
    profiler.start()

    def stop() -> None:
        profiler.stop()
        out = REPO_ROOT / "bench" / "results" / f"profile-{label}-{what}.txt"
        out.write_text(profiler.output_text(unicode=True, color=False), encoding="utf-8")

    return stop


def batch_offset(spec: Any, uid: str) -> int:
    """First memory-id number of a user (the loader numbers memories user by user)."""
    return int(uid.rsplit("u", 1)[1]) * spec.per_user
