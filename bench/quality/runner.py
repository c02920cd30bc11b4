"""Write a corpus through one engine, ask its queries with each method, score the rankings."""
from __future__ import annotations

import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from bench.quality.datasets import Corpus, Query, half_of
from bench.quality.metrics import all_hit_at, mean, ndcg_at, parse_dia_ids, recall_at
from memory_core import MemoryEngine, RetrievalOptions, Settings, open_memory
from memory_core.context_block import build_context_block
from memory_core.embedding.base import Embedder
from memory_core.lifecycle import faded, in_retrieval
from memory_core.recipes import RECIPES, Recipe, recipe_named

# METHOD -> the retrieval recipe it runs (memory_core/recipes.py): "full", the baselines "bm25",
# "dense", "hybrid" (the product pipeline with its parts switched off), and the ablations
# "full-no-X" (the full pipeline with part X off: a part is kept only while switching it off
# costs recall on the validation halves, issue 21).
METHODS: Mapping[str, Recipe] = RECIPES
# A benchmark's searches neither read the result cache nor count as uses of what they find.
QUIET = RetrievalOptions(use_cache=False, record=False)
TOP_K = 20


@dataclass
class MethodRun:
    """Per-query rankings (each rank a set of source ids) and the full method's context sizes."""

    rankings: list[list[set[str]]] = field(default_factory=list)
    context_tokens: list[int] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class CorpusRun:
    corpus: Corpus
    runs: dict[str, MethodRun]
    write_seconds: float
    memories: int
    hidden_gold: int  # gold ids whose memory is expired at query time
    gold_total: int
    queries_with_hidden_gold: int
    faded_gold: int = 0  # gold ids whose memory has faded at query time (searchable, on a clear match only)
    llm: str = "offline"  # the provider that analysed the writes and rewrote the queries
    llm_failures: int = 0  # calls the endpoint failed and the offline provider answered instead


def source_ids(sources: Sequence[str], dataset: str) -> set[str]:
    """Provenance of one memory to gold-comparable ids (LoCoMo ids normalised by regex)."""
    if dataset == "locomo":
        return parse_dia_ids(sources)
    return set(sources)


def make_engine(embedder: Embedder, model_cache_dir: Path, workdir: Path, forgetting: bool,
                llm: bool = False) -> MemoryEngine:
    """One engine with its own SQLite and Milvus Lite store under ``workdir``. The offline LLM
    stand-in unless ``llm``: then the OpenAI-compatible endpoint configured in the environment
    (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``LLM_MODEL``) analyses every write and rewrites
    every query, as it would in production; that is the run that shows what an LLM adds."""
    overrides: dict[str, object] = {}
    if not forgetting:
        overrides["ttl_days_by_importance"] = "0,0,0,0,0"
    if not llm:
        overrides.update(openai_base_url="", openai_api_key=None, llm_model="")
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=workdir / "data", milvus_uri=str(workdir / f"q{uuid.uuid4().hex[:8]}.db"),
        model_cache_dir=model_cache_dir, redis_url="",
        **overrides,
    )
    if llm and not settings.llm_configured:
        raise ValueError("--llm needs an OpenAI-compatible endpoint: set OPENAI_BASE_URL (or OPENAI_API_KEY) "
                         "and LLM_MODEL")
    return open_memory(settings, embedder=embedder)


def run_corpus(corpus: Corpus, embedder: Embedder, model_cache_dir: Path, methods: Sequence[str],
               forgetting: bool = True, progress: Callable[[str], None] = print, llm: bool = False) -> CorpusRun:
    with tempfile.TemporaryDirectory(prefix="bench-quality-") as tmp:
        engine = make_engine(embedder, model_cache_dir, Path(tmp), forgetting, llm=llm)
        try:
            t = time.perf_counter()
            results = engine.add_many(corpus.items)
            write_seconds = time.perf_counter() - t
            memories = len({mid for r in results for mid in r.memory_ids})
            progress(f"  {corpus.name}: wrote {len(corpus.items)} items -> {memories} memories "
                     f"in {write_seconds:.1f}s (forgetting {'on' if forgetting else 'off'})")
            hidden, total, hidden_q, faded_n = _expired_gold(engine, corpus, results)
            runs: dict[str, MethodRun] = {}
            for method in methods:
                runs[method] = _ask(engine, corpus, recipe_named(method), method == "full")
                progress(f"  {corpus.name}/{method}: {len(corpus.queries)} queries in {runs[method].seconds:.1f}s")
            engine.flush()
        finally:
            engine.close()
    return CorpusRun(corpus, runs, write_seconds, memories, hidden, total, hidden_q, faded_n,
                     llm=engine.llm.name if llm else "offline", llm_failures=int(getattr(engine.llm, "failures", 0)))


def _ask(engine: MemoryEngine, corpus: Corpus, recipe: Recipe, with_context: bool) -> MethodRun:
    run = MethodRun()
    t = time.perf_counter()
    for q in corpus.queries:
        # The ranking is what is scored: no relevance threshold here (bench.relevance measures
        # what the default threshold keeps of it).
        response = engine.search(q.user_id, q.text, top_k=TOP_K, context=q.context or None, at=q.at,
                                 recipe=recipe, options=QUIET, min_relevance=0.0)
        run.rankings.append([source_ids(r.source, corpus.name) for r in response.results])
        if with_context:
            block = build_context_block(response.results[:5], engine.embedder.count_tokens,
                                        engine.settings.context_max_tokens)
            run.context_tokens.append(engine.embedder.count_tokens(block))
    run.seconds = time.perf_counter() - t
    return run


def _expired_gold(engine: MemoryEngine, corpus: Corpus, results: Sequence) -> tuple[int, int, int, int]:
    """How many gold ids sit only in memories already expired at their question's time (of how
    many, in how many questions), and how many only in faded ones (``Settings.fade_from_importance``)."""
    by_source: dict[tuple[str, str], set[str]] = {}
    for item, result in zip(corpus.items, results):
        for sid in source_ids([item.source] if isinstance(item.source, str) else list(item.source or []),
                              corpus.name):
            by_source.setdefault((item.user_id, sid), set()).update(result.memory_ids)
    ids = sorted({m for s in by_source.values() for m in s})
    records = engine.repo.get_many(ids)
    fade_from = engine.settings.fade_from_importance
    hidden = total = hidden_q = faded_n = 0
    for q in corpus.queries:
        q_hidden = 0
        for gid in q.gold:
            total += 1
            mids = by_source.get((q.user_id, gid), set())
            active = [records[m] for m in mids if m in records and records[m].status.value == "active"]
            if mids and not [r for r in active if in_retrieval(r, q.at, fade_from)]:
                q_hidden += 1
            elif active and all(faded(r, q.at, fade_from) for r in active):
                faded_n += 1
        hidden += q_hidden
        hidden_q += int(q_hidden > 0)
    return hidden, total, hidden_q, faded_n


def locomo_scores(run: MethodRun, queries: Sequence[Query]) -> dict[str, dict[str, float]]:
    """Per category, and the headline cat1-4 per fixed half ("cat1-4|tune", "cat1-4|validate":
    settings are chosen on the tune half; the validate half is the figure of record)."""
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(queries):
        groups.setdefault(q.group, []).append(i)
        if q.group != "adversarial":
            groups.setdefault("cat1-4", []).append(i)
            groups.setdefault(f"cat1-4|{half_of(q.user_id)}", []).append(i)
    out: dict[str, dict[str, float]] = {}
    for name in ("cat1-4", "multi-hop", "temporal", "open-domain", "single-hop", "adversarial",
                 "cat1-4|tune", "cat1-4|validate"):
        idx = groups.get(name, [])
        if "|" in name and not idx:
            continue  # a slice holding one half only
        out[name] = {
            "recall@5": mean([recall_at(run.rankings[i], queries[i].gold, 5) for i in idx]),
            "recall@10": mean([recall_at(run.rankings[i], queries[i].gold, 10) for i in idx]),
            "recall@20": mean([recall_at(run.rankings[i], queries[i].gold, 20) for i in idx]),
            "all-hit@10": mean([all_hit_at(run.rankings[i], queries[i].gold, 10) for i in idx]),
            "ndcg@10": mean([ndcg_at(run.rankings[i], queries[i].gold, 10) for i in idx]),
            "n": float(len(idx)),
        }
    return out


def madial_scores(run: MethodRun, queries: Sequence[Query]) -> dict[str, float]:
    """The whole set, and recall@5 / ndcg@5 per fixed half ("recall@5|validate", ...)."""
    n = range(len(queries))
    out = {
        "recall@1": mean([recall_at(run.rankings[i], queries[i].gold, 1) for i in n]),
        "recall@3": mean([recall_at(run.rankings[i], queries[i].gold, 3) for i in n]),
        "recall@5": mean([recall_at(run.rankings[i], queries[i].gold, 5) for i in n]),
        "ndcg@5": mean([ndcg_at(run.rankings[i], queries[i].gold, 5) for i in n]),
        "n": float(len(queries)),
    }
    for half in ("tune", "validate"):
        idx = [i for i in n if half_of(queries[i].user_id) == half]
        if not idx:
            continue
        out[f"recall@5|{half}"] = mean([recall_at(run.rankings[i], queries[i].gold, 5) for i in idx])
        out[f"ndcg@5|{half}"] = mean([ndcg_at(run.rankings[i], queries[i].gold, 5) for i in idx])
        out[f"n|{half}"] = float(len(idx))
    return out
