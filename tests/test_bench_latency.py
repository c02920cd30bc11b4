"""The latency benchmark's own pieces: what it loads must be what the product would write, and
its baseline must be an exact filtered scan. No Milvus or model needed."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from bench.latency.corpus import SPECS, SentencePool, SyntheticEmbedder, query_texts, user_batch
from bench.latency.loader import _vector_record
from bench.latency.measure import pct
from bench.latency.runner import _exact_top
from memory_core.indexing import vector_record
from memory_core.records import MemoryRecord
from memory_core.types import MemoryStatus, MemoryType
from memory_core.vectors.base import VectorFilter

NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)


def test_loader_vector_record_matches_the_products() -> None:
    record = MemoryRecord(
        memory_id="b000000001", user_id="u", session_id=None, content="我对芒果过敏，昨天 Alice 也在。",
        summary="", importance=4, memory_type=MemoryType.DECLARATIVE, entities=["芒果", "Alice"], meta={},
        status=MemoryStatus.ACTIVE, created_at=NOW - timedelta(days=3), updated_at=NOW, expires_at=None,
        expired_at=None, source=[], access_count=0, last_accessed_at=None, superseded_by=None,
        vector_written=True, content_hash="h" * 64,
    )
    v = np.ones(384, dtype=np.float32) / np.sqrt(384)
    ours, theirs = _vector_record(record, v), vector_record(record, v)
    assert ours.text == theirs.text and ours.created_at == theirs.created_at
    assert (ours.memory_id, ours.importance, ours.expires_at, ours.memory_type, ours.content_hash) == (
        theirs.memory_id, theirs.importance, theirs.expires_at, theirs.memory_type, theirs.content_hash)


def test_corpus_is_deterministic_and_unit_length() -> None:
    pool = SentencePool(size=2_000)
    a = user_batch(SPECS["100k-100pu"], 7, pool, NOW)
    b = user_batch(SPECS["100k-100pu"], 7, pool, NOW)
    assert a.texts == b.texts and np.array_equal(a.vectors, b.vectors) and len(a.texts) == 100
    assert np.allclose(np.linalg.norm(a.vectors, axis=1), 1.0, atol=1e-5)
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in a.texts)  # Chinese present
    assert any(t.isascii() for t in a.texts)  # English present
    emb = SyntheticEmbedder()
    q = emb.embed_query("我对什么过敏？")
    assert np.array_equal(q, emb.embed_query("我对什么过敏？")) and abs(float(np.linalg.norm(q)) - 1) < 1e-5
    assert len(set(query_texts(50))) == 50  # distinct, so every cold search is a cache miss


def test_exact_baseline_applies_the_filter() -> None:
    pool = SentencePool(size=2_000)
    batch = user_batch(SPECS["100k-100pu"], 1, pool, NOW)
    ttl = (30, 180, 365, 0, 0)
    keep = next(i for i, imp in enumerate(batch.importance) if imp >= 4)  # importance 4-5 never expires
    q = batch.vectors[keep]
    now = int(NOW.timestamp())
    top = _exact_top(batch, q, VectorFilter(user_id=batch.user_id, now=now, created_to=now + 1), 20, ttl)
    assert len(top) == 20 and top[0] == keep  # the vector itself ranks first
    for i in top:  # nothing expired by the importance TTL
        days = ttl[int(batch.importance[i]) - 1]
        assert days == 0 or batch.created_at[i] + timedelta(days=days) > NOW
    cut = int((NOW - timedelta(days=30)).timestamp())
    older = _exact_top(batch, q, VectorFilter(user_id=batch.user_id, now=now, created_to=cut), 20, ttl)
    assert all(batch.created_at[i] < NOW - timedelta(days=30) for i in older)


def test_pct_is_nearest_rank() -> None:
    samples = list(range(1, 101))
    assert pct(samples, 50, 95, 99) == {"p50": 50.0, "p95": 95.0, "p99": 99.0}
    assert pct([3.0], 95) == {"p95": 3.0}


def test_report_prints_every_add_many_round_beside_the_median() -> None:
    import json
    from pathlib import Path

    from bench.latency.report import markdown

    committed = json.loads((Path(__file__).resolve().parents[1] / "bench" / "results" / "latency.json").read_text())
    size, result = next(iter(committed.items()))
    old = {k: v for k, v in result.items() if not k.endswith("rounds_per_s")}  # results before rounds
    new = {**old, "add_many_per_s": 171.0, "add_many_rounds_per_s": [149.6, 171.0, 180.2],
           "embed_only_per_s": 400.0, "embed_only_rounds_per_s": [390.0, 400.0, 410.0]}
    row = next(line for line in markdown({size: new}).splitlines() if line.startswith(f"| {size} |") and "RSS" not in line
               and "(150, 171, 180)" in line)
    assert "171 (yes) (150, 171, 180)" in row and "400 (390, 400, 410)" in row
    single = {**old, "add_many_per_s": 133.0, "add_many_rounds_per_s": [133.0]}  # one round: no list
    assert "| 133 (**no**) |" in markdown({size: single})
    assert f"| {old['add_many_per_s']:.0f} (" in markdown({size: old})  # results from before rounds still print


def test_write_stages_bench_cuts_batches_as_its_variants_say() -> None:
    import pytest

    from bench.write_stages import _write, main

    class Recorder:
        def __init__(self) -> None:
            self.calls: list[tuple[int, int | None]] = []

        def add_many(self, items, stage_chunks=None):  # type: ignore[no-untyped-def]
            self.calls.append((len(items), stage_chunks))

    items = list(range(512))
    engine = Recorder()
    _write(engine, items, "calls256")  # type: ignore[arg-type]
    _write(engine, items, "stages128")  # type: ignore[arg-type]
    assert engine.calls == [(256, None), (256, None), (512, 128)]
    for bad in ("batches64", "calls0", "stages", "calls-5"):
        with pytest.raises(SystemExit):
            main(["--variants", bad])
