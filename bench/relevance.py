"""``python -m bench.relevance [--fit] [--threshold T]``: calibrate and measure absolute relevance.

Collects (cosine, word coverage, language, relevant?) for the top 20 results of every query of
the dev sets (the truth benchmark's scenarios played through the chat path, LoCoMo and MADial zh
and en as ``bench.quality`` writes them), fits ``memory_core.relevance.RelevanceModel`` by
logistic regression on the **tuning halves only**, and reports on both halves, for a threshold:

- truth, unrelated queries: the share that return nothing above it (target >= .95);
- truth, other queries: the share whose relevant memory clears it;
- LoCoMo / MADial: the share of questions with a gold memory above it, and recall@5 at it.

``--fit`` prints the fitted parameters (paste them into ``RelevanceModel``); without it the
model in the code is measured. Labels: a truth result is relevant when it holds one of the
scenario's ``top`` strings (constraint scenarios left out: constraints reach the reply by their
own path); a LoCoMo / MADial result when its provenance is a gold id.
"""
from __future__ import annotations

import bench.offline_env  # noqa: F401  (sets the environment before the imports below)

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from datetime import timedelta  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Sequence  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
MODEL_DIR = ROOT / "data" / "test-models"


@dataclass
class Row:
    dataset: str
    half: str
    query_index: int
    cosine: float | None
    coverage: float
    lang: str
    relevant: bool
    unrelated_query: bool = False


def _truth_rows(embedder: Any, tmp: Path) -> list[Row]:
    from bench.truth.runner import START, TruthRun, half, load
    from memory_core import FixedClock, Settings, open_memory
    from memory_core.relevance import coverage, language, query_terms

    settings = Settings(_env_file=None, data_dir=tmp / "truth", milvus_uri=str(tmp / "truth.db"),  # type: ignore[call-arg]
                        model_cache_dir=MODEL_DIR, redis_url="", openai_base_url="", openai_api_key=None, llm_model="")
    engine = open_memory(settings, clock=FixedClock(START), embedder=embedder)
    rows: list[Row] = []
    try:
        runner = TruthRun(engine)
        for index, scenario in enumerate(s for s in load() if s["kind"] != "constraint"):
            principal, _stored = runner.play_turns(scenario)
            runner.clock.set(START + timedelta(days=scenario["query"]["day"], hours=5))
            response = engine.search(principal.user_id, scenario["query"]["text"], top_k=20, min_relevance=0.0)
            terms, lang = query_terms(response.rewritten_query), language(scenario["query"]["text"])
            records = engine.repo.get_many([r.memory_id for r in response.results])
            tops = [t.casefold() for t in scenario["expect"].get("top") or []]
            for r in response.results:
                context = records[r.memory_id].context if r.memory_id in records else ""
                rows.append(Row("truth", half(scenario["id"]), index, r.parts.dense,
                                coverage(terms, r.content, context), lang,
                                any(t in r.content.casefold() for t in tops),
                                unrelated_query=scenario["kind"] == "unrelated"))
            if not response.results:
                rows.append(Row("truth", half(scenario["id"]), index, None, 0.0, lang, False,
                                unrelated_query=scenario["kind"] == "unrelated"))
    finally:
        engine.close()
    return rows


def _corpus_rows(embedder: Any, tmp: Path) -> list[Row]:
    from bench.quality.datasets import half_of, load_locomo, load_madial
    from bench.quality.runner import METHODS, QUIET, make_engine, source_ids
    from memory_core.relevance import coverage, language, query_terms

    rows: list[Row] = []
    for corpus in (load_locomo(), load_madial("zh"), load_madial("en")):
        engine = make_engine(embedder, MODEL_DIR, tmp / corpus.name, forgetting=True)
        try:
            engine.add_many(corpus.items)
            for index, q in enumerate(corpus.queries):
                if q.group == "adversarial":
                    continue
                response = engine.search(q.user_id, q.text, top_k=20, context=q.context or None, at=q.at,
                                         recipe=METHODS["full"], options=QUIET, min_relevance=0.0)
                terms, lang = query_terms(response.rewritten_query), language(q.text)
                records = engine.repo.get_many([r.memory_id for r in response.results])
                for r in response.results:
                    context = records[r.memory_id].context if r.memory_id in records else ""
                    rows.append(Row(corpus.name, half_of(q.user_id), index, r.parts.dense,
                                    coverage(terms, r.content, context), lang,
                                    bool(source_ids(r.source, corpus.name) & q.gold)))
        finally:
            engine.close()
    return rows


def _features(rows: Sequence[Row]) -> np.ndarray:
    return np.array([[1.0, r.cosine if r.cosine is not None else 0.8, 1.0 if r.lang == "zh" else 0.0, r.coverage]
                     for r in rows])


def fit(rows: Sequence[Row]) -> dict[str, float]:
    """Logistic regression (Newton's method, a little L2) with each dataset weighted equally."""
    x = _features(rows)
    y = np.array([1.0 if r.relevant else 0.0 for r in rows])
    per = {d: sum(1 for r in rows if r.dataset == d) for d in {r.dataset for r in rows}}
    w = np.array([1.0 / per[r.dataset] for r in rows])
    w *= len(rows) / w.sum()
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        grad = x.T @ (w * (p - y)) + 1e-3 * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + 1e-3 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return {"intercept_en": float(beta[0]), "intercept_zh": float(beta[0] + beta[2]),
            "cosine_weight": float(beta[1]), "coverage_weight": float(beta[3])}


def report(rows: Sequence[Row], threshold: float) -> dict[str, Any]:
    """Per dataset and half: the measures listed in the module docstring."""
    from memory_core.relevance import DEFAULT_MODEL

    out: dict[str, Any] = {}
    groups: dict[tuple[str, str], dict[int, list[Row]]] = {}
    for r in rows:
        groups.setdefault((r.dataset, r.half), {}).setdefault(r.query_index, []).append(r)
    for (dataset, half), queries in sorted(groups.items()):
        kept_gold = nothing = unrelated = related = 0
        for query_rows in queries.values():
            scores = [(DEFAULT_MODEL(r.cosine, r.coverage, r.lang) if r.cosine is not None or r.coverage else 0.0, r)
                      for r in query_rows]
            above = [r for s, r in scores if s >= threshold]
            if query_rows[0].unrelated_query:
                unrelated += 1
                nothing += int(not above)
            else:
                related += 1
                kept_gold += int(any(r.relevant for r in above[:5]))
        entry: dict[str, Any] = {"queries": len(queries)}
        if unrelated:
            entry["unrelated_nothing"] = round(nothing / unrelated, 3)
        if related:
            entry["relevant_in_top5_above"] = round(kept_gold / related, 3)
        out[f"{dataset}/{half}"] = entry
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.relevance", description=__doc__)
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--thresholds", default="0.3,0.4,0.5,0.6")
    parser.add_argument("--rows", type=Path, default=None, help="reuse rows saved by an earlier run")
    parser.add_argument("--out", type=Path, default=RESULTS / "relevance.json")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.rows and args.rows.exists():
        rows = [Row(**r) for r in json.loads(args.rows.read_text())]
    else:
        from bench.quality.__main__ import CACHE
        from bench.quality.embed_cache import CachingEmbedder
        from memory_core.config import BUNDLED_EMBEDDING_MODEL
        from memory_core.embedding import load_embedder

        embedder = CachingEmbedder(load_embedder(BUNDLED_EMBEDDING_MODEL, MODEL_DIR, precision="auto"), CACHE)
        with tempfile.TemporaryDirectory(prefix="bench-relevance-") as tmp:
            rows = _truth_rows(embedder, Path(tmp)) + _corpus_rows(embedder, Path(tmp))
        if args.rows:
            args.rows.write_text(json.dumps([r.__dict__ for r in rows]))
    result: dict[str, Any] = {"rows": len(rows)}
    if args.fit:
        result["fit_on_tune_halves"] = fit([r for r in rows if r.half == "tune"])
        print("fitted:", result["fit_on_tune_halves"])
    result["by_threshold"] = {t: report(rows, float(t)) for t in args.thresholds.split(",")}
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
