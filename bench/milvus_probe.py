"""Re-runnable measurements of MilvusVectorStore on Milvus Lite (or a server with --uri).

Two parts:

* ``analyzers``: which BM25 analyzer finds the right documents for Chinese, English and mixed
  text, raw and pre-segmented (the evidence behind ``KEYWORD_ANALYZER``).
* ``latency``: upsert throughput (batches of 100 and 1,000) and filtered FLAT dense / BM25
  keyword search p50/p95 at growing collection sizes (default 10k and 100k rows, 100 users,
  dim 384), plus dense recall@20 against an exact numpy scan of the user's vectors.

Usage::

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python -m bench.milvus_probe latency --sizes 10000 100000
    .venv/bin/python -m bench.milvus_probe analyzers

Lite stores go to a temporary directory that is removed afterwards.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ZH_WORDS = "芒果 过敏 北京 上海 爬山 开会 项目 周末 电影 咖啡 医生 生日 旅行 跑步 音乐 朋友 公司 学校 孩子 猫".split()
EN_WORDS = (
    "mango allergy hiking meeting project weekend movie coffee doctor birthday travel running "
    "music friend company school child cat python milvus"
).split()

ANALYZERS: dict[str, dict[str, Any]] = {
    "standard": {"type": "standard"},
    "english": {"type": "english"},
    "chinese": {"type": "chinese"},
    "whitespace+lower": {"tokenizer": "whitespace", "filter": ["lowercase"]},
    "jieba": {"tokenizer": "jieba"},
    "jieba+lower": {"tokenizer": "jieba", "filter": ["lowercase"]},
    "jieba+lower+cnalnum+stem (chosen)": {
        "tokenizer": "jieba",
        "filter": ["lowercase", "cnalphanumonly", {"type": "stemmer", "language": "english"}],
    },
}
ANALYZER_DOCS = [
    "我喜欢吃芒果和西瓜",
    "I love hiking in the mountains",
    "明天去北京 meeting with Alice",
    "我 喜欢 吃 芒果 和 西瓜",
    "i love hike in the mountain",
    "明天 去 北京 meet with alic",
    "对芒果过敏",
]
# query -> documents that must be in the hits (and nothing from the other language groups)
ANALYZER_CASES: dict[str, set[int]] = {
    "芒果": {0, 3, 6},
    "过敏": {6},
    "北京": {2, 5},
    "西瓜": {0, 3},
    "喜欢 芒果": {0, 3, 6},
    "hiking": {1, 4},
    "hike": {1, 4},
    "Mountain": {1, 4},
    "alice": {2, 5},
    "meeting": {2, 5},
}


def _percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2)}


def run_analyzers(workdir: Path) -> dict[str, Any]:
    """Score each analyzer on ANALYZER_CASES: a case passes when hits == expected set."""
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    client = MilvusClient(str(workdir / "analyzers.db"))
    report: dict[str, Any] = {}
    for i, (name, params) in enumerate(ANALYZERS.items()):
        col = f"a{i}"
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("dv", DataType.FLOAT_VECTOR, dim=2)
        schema.add_field("text", DataType.VARCHAR, max_length=1000, enable_analyzer=True, analyzer_params=params)
        schema.add_field("sp", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(Function(name="bm25", function_type=FunctionType.BM25,
                                     input_field_names=["text"], output_field_names=["sp"]))
        index = client.prepare_index_params()
        index.add_index("dv", index_type="FLAT", metric_type="COSINE")
        index.add_index("sp", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        try:
            client.create_collection(col, schema=schema, index_params=index, timeout=10)
        except Exception as exc:  # noqa: BLE001 - an unsupported analyzer is a finding
            report[name] = {"error": str(exc)[:120]}
            continue
        client.insert(col, [{"id": j, "dv": [1.0, 0.5], "text": d} for j, d in enumerate(ANALYZER_DOCS)], timeout=10)
        client.load_collection(col, timeout=10)
        passed, failures = 0, {}
        for query, expected in ANALYZER_CASES.items():
            res = client.search(col, data=[query], anns_field="sp", limit=10,
                                search_params={"metric_type": "BM25"}, timeout=10)
            got = {int(h["id"]) for h in res[0]}
            if got == expected:
                passed += 1
            else:
                failures[query] = sorted(got)
        report[name] = {"passed": f"{passed}/{len(ANALYZER_CASES)}", "failures": failures}
    client.close()
    return report


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    out = []
    for _ in range(n):
        zh = "".join(rng.choice(ZH_WORDS, size=4))
        en = " ".join(rng.choice(EN_WORDS, size=5))
        out.append(f"{zh} {en}")
    return out


def run_latency(uri: str | None, sizes: list[int], users: int, dim: int, queries: int, seed: int) -> dict[str, Any]:
    from memory_core.vectors import MilvusVectorStore
    from memory_core.vectors.base import VectorFilter, VectorRecord

    rng = np.random.default_rng(seed)
    tmp = tempfile.TemporaryDirectory(prefix="mvprobe")
    store_uri = uri or str(Path(tmp.name) / "bench.db")
    t0 = time.perf_counter()
    store = MilvusVectorStore(store_uri, f"bench_{seed}", dim, timeout_s=60)
    report: dict[str, Any] = {"open_s": round(time.perf_counter() - t0, 2), "dim": dim, "users": users}
    all_vectors: list[np.ndarray] = []
    all_users: list[np.ndarray] = []

    def make(n: int, start: int) -> list[VectorRecord]:
        vecs = rng.standard_normal((n, dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        owners = rng.integers(0, users, size=n)
        all_vectors.append(vecs)
        all_users.append(owners)
        texts = _texts(rng, n)
        return [
            VectorRecord(f"m{start + i}", f"user-{owners[i]}", vecs[i], texts[i], int(rng.integers(1, 6)),
                         1_700_000_000 + start + i, 0, "episodic", f"h{start + i}")
            for i in range(n)
        ]

    have = 0
    for size in sizes:
        batch = 100 if have == 0 else 1_000
        rows = make(size - have, have)
        t0 = time.perf_counter()
        for i in range(0, len(rows), batch):
            store.upsert(rows[i : i + batch])
        elapsed = time.perf_counter() - t0
        report[f"upsert_rows_per_s_batch{batch}_to_{size}"] = round(len(rows) / elapsed)
        have = size
        vectors = np.concatenate(all_vectors)
        owners = np.concatenate(all_users)

        dense_ms, keyword_ms, recalls = [], [], []
        for q in range(queries):
            user = int(rng.integers(0, users))
            flt = VectorFilter(user_id=f"user-{user}", now=1_800_000_000)
            qv = rng.standard_normal(dim).astype(np.float32)
            qv /= np.linalg.norm(qv)
            t0 = time.perf_counter()
            hits = store.search_dense(qv, flt, 20)
            dense_ms.append((time.perf_counter() - t0) * 1000)
            if q < 50:  # exact reference: numpy scan of this user's vectors
                mine = np.flatnonzero(owners == user)
                truth = {f"m{i}" for i in mine[np.argsort(-(vectors[mine] @ qv))[:20]]}
                recalls.append(len(truth & {h.memory_id for h in hits}) / max(1, len(truth)))
            text = f"{rng.choice(ZH_WORDS)} {rng.choice(EN_WORDS)}"
            t0 = time.perf_counter()
            store.search_keyword(text, flt, 20)
            keyword_ms.append((time.perf_counter() - t0) * 1000)
        report[f"dense_{size}"] = {**_percentiles(dense_ms), "recall@20": round(float(np.mean(recalls)), 3)}
        report[f"keyword_{size}"] = _percentiles(keyword_ms)
        t0 = time.perf_counter()
        hashes = store.user_hashes("user-0")
        report[f"user_hashes_{size}"] = {"rows": len(hashes), "ms": round((time.perf_counter() - t0) * 1000, 1)}
        print(json.dumps(report, ensure_ascii=False), flush=True)

    # updates: re-upsert existing ids in batches of 1,000 (delete + insert inside Milvus)
    rows = make(min(10_000, have), 0)
    t0 = time.perf_counter()
    for i in range(0, len(rows), 1_000):
        store.upsert(rows[i : i + 1_000])
    report["update_rows_per_s_batch1000"] = round(len(rows) / (time.perf_counter() - t0))
    report["count_after_updates"] = store.count()
    store.close()
    tmp.cleanup()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("analyzers")
    lat = sub.add_parser("latency")
    lat.add_argument("--uri", default=None, help="Milvus server uri; default a temporary Lite file")
    lat.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    lat.add_argument("--users", type=int, default=100)
    lat.add_argument("--dim", type=int, default=384)
    lat.add_argument("--queries", type=int, default=200)
    lat.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.cmd == "analyzers":
        with tempfile.TemporaryDirectory(prefix="mvprobe") as tmp:
            result = run_analyzers(Path(tmp))
    else:
        result = run_latency(args.uri, sorted(args.sizes), args.users, args.dim, args.queries, args.seed)
    print(json.dumps(result, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
