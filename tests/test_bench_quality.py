"""The retrieval-quality harness (bench/quality) stays correct: metrics by hand, data parsing,
and one real LoCoMo conversation written and searched through the product's pipelines."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from bench.quality.datasets import LOCOMO_PATH, MADIAL_DIR, load_locomo, load_madial, parse_locomo_date
from bench.quality.embed_cache import CachingEmbedder
from bench.quality.metrics import all_hit_at, ndcg_at, parse_dia_ids, recall_at
from bench.quality.report import markdown, write_chart, write_json
from bench.quality.runner import locomo_scores, madial_scores, make_engine, run_corpus
from tests.fake_openai import FakeOpenAI

needs_data = pytest.mark.skipif(not LOCOMO_PATH.exists() or not MADIAL_DIR.exists(),
                                reason="../shared/data is not present")


def test_metrics_on_a_hand_computed_toy_ranking() -> None:
    ranking = [{"a"}, {"x"}, {"b"}, set(), {"c"}]
    gold = {"a", "b", "z"}
    assert recall_at(ranking, gold, 1) == pytest.approx(1 / 3)
    assert recall_at(ranking, gold, 3) == pytest.approx(2 / 3)
    assert recall_at(ranking, gold, 10) == pytest.approx(2 / 3)
    assert all_hit_at(ranking, {"a", "b"}, 2) == 0.0 and all_hit_at(ranking, {"a", "b"}, 3) == 1.0
    # DCG = 1/log2(2) + 1/log2(4) = 1.5; IDCG (3 gold, k=5) = 1 + 1/log2(3) + 1/log2(4)
    assert ndcg_at(ranking, gold, 5) == pytest.approx(1.5 / (1 + 1 / math.log2(3) + 0.5))
    # A merged memory standing for two turns covers both at rank 1, and NDCG is capped at 1.
    assert recall_at([{"a", "b"}], {"a", "b"}, 1) == 1.0
    assert ndcg_at([{"a", "b"}, {"x"}], {"a", "b"}, 10) == 1.0
    # The same id at two ranks is credited once.
    assert ndcg_at([{"x"}, {"a"}, {"a"}], {"a"}, 3) == pytest.approx(1 / math.log2(3))
    with pytest.raises(ValueError):
        recall_at(ranking, set(), 5)


def test_malformed_evidence_ids_are_recovered() -> None:
    assert parse_dia_ids(["D8:6; D9:17"]) == {"D8:6", "D9:17"}
    assert parse_dia_ids(["D:11:26", "D30:05"]) == {"D11:26", "D30:5"}
    assert parse_dia_ids([]) == set() and parse_dia_ids("no id here") == set()
    assert parse_locomo_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"


@needs_data
def test_madial_loader_routes_memories_to_their_owner() -> None:
    corpus = load_madial("en", limit=5)
    owners = {item.source: item.user_id for item in corpus.items}
    for q in corpus.queries:
        assert q.gold and q.text and q.context
        assert all(owners[g] == q.user_id for g in q.gold)  # relevant memories belong to the asker
        assert all(item.at is not None and item.at < q.at for item in corpus.items)


def test_caching_embedder_returns_the_models_vectors(embedder, tmp_path: Path) -> None:
    cached = CachingEmbedder(embedder, tmp_path / "e.sqlite3")
    first = cached.embed_passages(["I adopted a puppy named Coco", "我对芒果过敏"])
    again = cached.embed_passages(["我对芒果过敏"])
    assert cached.misses == 2 and cached.hits == 1
    alone = np.stack([embedder.embed_passages([t])[0] for t in ("I adopted a puppy named Coco", "我对芒果过敏")])
    assert np.allclose(again[0], first[1]) and np.allclose(first, alone, atol=1e-5)  # each embedded alone
    assert not np.allclose(cached.embed_queries(["我对芒果过敏"])[0], again[0])  # e5 prompts differ
    cached.close()


class _BatchSensitive:
    """An encoder whose vectors depend on the batch, as the int8 one's do a little."""

    name, dim, max_tokens = "batch-sensitive", 4, 64

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        base = np.array([[len(t), t.count("a"), t.count(" "), 1.0] for t in texts], dtype=np.float32)
        return base + 0.1 * len(texts)

    embed_queries = embed_passages

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_a_cached_vector_does_not_depend_on_what_filled_the_cache(tmp_path: Path) -> None:
    """Each missing text is embedded alone, so two caches filled in other orders and batches hold
    the same vectors (the figures of record do not depend on the cache's history)."""
    texts = ["a cat", "another day", "banana bread"]
    one = CachingEmbedder(_BatchSensitive(), tmp_path / "one.sqlite3")  # type: ignore[arg-type]
    two = CachingEmbedder(_BatchSensitive(), tmp_path / "two.sqlite3")  # type: ignore[arg-type]
    together = one.embed_passages(texts)
    apart = np.stack([two.embed_passages([t])[0] for t in reversed(texts)][::-1])
    assert np.array_equal(together, apart)
    assert np.array_equal(together, np.stack([_BatchSensitive().embed_passages([t])[0] for t in texts]))
    one.close()
    two.close()


def test_a_turn_that_shared_a_photo_carries_its_caption_not_the_search_query() -> None:
    from bench.quality.datasets import turn_content

    turn = {"speaker": "Caroline", "text": "Look what I made!", "blip_caption": "a photo of a clay bowl",
            "query": "handmade pottery bowl", "dia_id": "D1:5"}
    assert turn_content(turn, captions=True) == "Caroline: Look what I made! [shared a photo: a photo of a clay bowl]"
    assert turn_content(turn) == "Caroline: Look what I made!"
    assert turn_content({"speaker": "Mel", "text": "hi", "dia_id": "D1:1"}) == "Mel: hi"


@needs_data
def test_harness_on_one_locomo_conversation(embedder, model_cache_dir: Path, tmp_path: Path) -> None:
    corpus = load_locomo(conversations=1, questions_per_conversation=8)
    assert {q.group for q in corpus.queries} >= {"multi-hop", "temporal", "single-hop", "adversarial"}
    cached = CachingEmbedder(embedder, tmp_path / "emb.sqlite3")
    run = run_corpus(corpus, cached, model_cache_dir, ["full", "hybrid"], forgetting=True,
                     progress=lambda _msg: None)
    all_ids = {item.source for item in corpus.items}
    assert run.memories <= len(corpus.items) and run.gold_total == sum(len(q.gold) for q in corpus.queries)
    for method, mrun in run.runs.items():
        assert len(mrun.rankings) == len(corpus.queries)
        for ranking in mrun.rankings:
            assert 0 < len(ranking) <= 20
            assert all(ids and ids <= all_ids for ids in ranking)  # ids come from provenance
        scores = locomo_scores(mrun, corpus.queries)
        # Recompute recall@10 for categories 1-4 independently of the metric helpers.
        by_hand = []
        for q, ranking in zip(corpus.queries, mrun.rankings):
            if q.group != "adversarial":
                seen = set().union(*ranking[:10])
                by_hand.append(sum(1 for g in q.gold if g in seen) / len(q.gold))
        assert scores["cat1-4"]["recall@10"] == pytest.approx(sum(by_hand) / len(by_hand))
        assert scores["cat1-4"]["n"] == len(by_hand)
        for group in scores.values():
            if group["n"]:
                assert 0 <= group["recall@5"] <= group["recall@10"] <= group["recall@20"] <= 1
                assert 0 <= group["ndcg@10"] <= 1 and group["all-hit@10"] <= group["recall@10"] + 1e-9
    full = locomo_scores(run.runs["full"], corpus.queries)
    assert full["cat1-4"]["recall@20"] > 0.3  # the pipeline finds evidence at all
    assert run.runs["full"].context_tokens and all(0 < t <= 600 for t in run.runs["full"].context_tokens)

    results = {"locomo": {m: locomo_scores(r, corpus.queries) for m, r in run.runs.items()},
               "madial_en": {"full": madial_scores(run.runs["full"], corpus.queries)}, "meta": {"wall_seconds": 1}}
    write_json(results, tmp_path / "q.json")
    write_chart(results, tmp_path / "q.html")
    loaded = json.loads((tmp_path / "q.json").read_text())
    groups = {"cat1-4", "multi-hop", "temporal", "open-domain", "single-hop", "adversarial"}
    halves = set(loaded["locomo"]["full"]) - groups
    assert set(loaded["locomo"]["full"]) >= groups and halves and halves <= {"cat1-4|tune", "cat1-4|validate"}
    for half in halves:  # one conversation is one user: all its questions fall in one half
        assert loaded["locomo"]["full"][half]["n"] == loaded["locomo"]["full"]["cat1-4"]["n"]
    assert set(loaded["madial_en"]["full"]) >= {"recall@1", "recall@3", "recall@5", "ndcg@5"}
    assert "plotly" in (tmp_path / "q.html").read_text()[:5000].lower()
    assert "| cat1-4 | full |" in markdown(results) and "cat1-4 recall@10" in markdown(results)


@needs_data
def test_harness_can_run_through_an_llm_endpoint(embedder, model_cache_dir: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``--llm``: the endpoint configured in the environment analyses every write and rewrites
    every query (a real local HTTP server speaking the OpenAI protocol), and the run says so."""
    fake = FakeOpenAI()
    rewrites: list[str] = []

    def answer(body: dict) -> str:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system.startswith("You label"):
            return json.dumps({"importance": 3, "memory_type": "episodic", "entities": ["LLM-ENTITY"],
                               "summary": user[:60]})
        if system.startswith("Rewrite"):
            rewrites.append(user)
            return user
        return json.dumps({"supersedes": False})

    fake.responder = answer
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    try:
        corpus = load_locomo(conversations=1, questions_per_conversation=3)
        corpus.items[:] = corpus.items[:60]  # the first sessions: enough to search, quick to write
        run = run_corpus(corpus, CachingEmbedder(embedder, tmp_path / "emb.sqlite3"), model_cache_dir, ["full"],
                         progress=lambda _msg: None, llm=True)
    finally:
        fake.close()
    analysed = [r for r in fake.requests if r["messages"][0]["content"].startswith("You label")]
    assert len(analysed) == len(corpus.items)
    assert sorted(rewrites) == sorted(q.text for q in corpus.queries)
    assert run.llm == "fake-model" and run.llm_failures == 0
    assert len(run.runs["full"].rankings) == len(corpus.queries)


def test_harness_refuses_llm_without_an_endpoint(embedder, model_cache_dir: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="OPENAI_BASE_URL"):
        make_engine(embedder, model_cache_dir, tmp_path, forgetting=True, llm=True)


def test_a_result_records_the_cpu_and_its_int8_instructions(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The int8 encoder's figures depend on the CPU's instruction set: each result file says which."""
    from bench.machine import INT8_FEATURES, cpu_description

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse avx2 fma\n\n"
                    "processor\t: 1\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse avx2 fma\n", encoding="utf-8")
    assert cpu_description(info)["model"] == "AMD EPYC 7B13"
    assert cpu_description(info)["int8_features"] == ["avx2"]
    here = cpu_description()
    assert here["model"] and set(here["int8_features"]) <= set(INT8_FEATURES)  # type: ignore[arg-type]
    assert cpu_description(tmp_path / "missing")["int8_features"] == []
