"""``python -m bench.maxsim``: as ``bench.quality.sweep`` (each dev set written once, every variant
asks all questions, tune / validate printed), but the variants are rerankers over the FULL recipe's
candidates: none (the baseline) or MaxSim from the bundled encoder (``bench/maxsim/rerank.py``).
Measured for issue 21 and not kept (docs/benchmarks.md); e.g.
``python -m bench.maxsim --sets madial_zh,madial_en --out bench/results/maxsim-madial.json``.
"""
from __future__ import annotations

import bench.offline_env  # noqa: F401

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from bench.quality.__main__ import CACHE, MODEL_DIR, RESULTS  # noqa: E402
from bench.quality.datasets import load_locomo, load_madial  # noqa: E402
from bench.quality.embed_cache import CachingEmbedder  # noqa: E402
from bench.quality.runner import _ask, make_engine  # noqa: E402
from bench.quality.sweep import headline  # noqa: E402
from memory_core.recipes import FULL, Tuning  # noqa: E402

import bench.maxsim.rerank as ms  # noqa: E402

# name -> reranker mode (None = no reranker), blend weight w (1 = the pipeline's own use: the score is
# the relevance), rrf (> 0: MaxSim's rank as one more fused leg of that weight), ctx (conversation turns
# read before the query by the reranker)
V = lambda mode, w=1.0, rrf=0.0, ctx=0: {"mode": mode, "w": w, "rrf": rrf, "ctx": ctx}  # noqa: E731
VARIANTS = {
    "baseline": V(None),
    "maxsim-q2d": V("q2d"),
    "maxsim-sym": V("sym"),
    "maxsim-q2d-w0.5": V("q2d", 0.5),
    "maxsim-sym-w0.5": V("sym", 0.5),
    "maxsim-q2d-w0.25": V("q2d", 0.25),
    "maxsim-sym-w0.25": V("sym", 0.25),
    "maxsim-sym-w0.1": V("sym", 0.1),
    "maxsim-sym-ctx3": V("sym", 1.0, ctx=3),
    "maxsim-sym-ctx3-w0.25": V("sym", 0.25, ctx=3),
    "maxsim-q2d-ctx3-w0.25": V("q2d", 0.25, ctx=3),
    "maxsim-sym-rrf0.5": V("sym", rrf=0.5),
    "maxsim-sym-rrf1": V("sym", rrf=1.0),
    "maxsim-sym-ctx3-rrf0.5": V("sym", rrf=0.5, ctx=3),
    "maxsim-sym-ctx3-rrf1": V("sym", rrf=1.0, ctx=3),
}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sets", default="madial_zh,madial_en,locomo")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--out", type=Path, default=RESULTS / "maxsim.json")
    args = p.parse_args()
    from memory_core.config import BUNDLED_EMBEDDING_MODEL
    from memory_core.embedding import load_embedder

    embedder = CachingEmbedder(load_embedder(BUNDLED_EMBEDDING_MODEL, MODEL_DIR, precision="auto"), CACHE)
    print("embedder", embedder.name, flush=True)
    ms.install_blend()
    names = args.variants.split(",")
    table: dict[str, dict[str, float]] = {n: {} for n in names}
    timing: dict[str, dict[str, float]] = {}
    for set_name in args.sets.split(","):
        corpus = load_locomo(None, None) if set_name == "locomo" else load_madial(set_name.split("_")[1])
        with tempfile.TemporaryDirectory(prefix="bench-maxsim-") as tmp:
            engine = make_engine(embedder, MODEL_DIR, Path(tmp), forgetting=True)
            try:
                t = time.perf_counter()
                engine.add_many(corpus.items)
                print(f"{corpus.name}: wrote {len(corpus.items)} items in {time.perf_counter() - t:.0f}s, "
                      f"{len(corpus.queries)} queries", flush=True)
                recipe = FULL.with_tuning(Tuning.from_settings(engine.settings))
                shared = ms.MaxSimReranker(embedder)  # one token/score cache for every MaxSim variant
                ms.wrap_search(engine, shared)
                for name in names:
                    v = VARIANTS[name]
                    mode = v["mode"]
                    reranker = None
                    if mode is not None:
                        shared.mode, shared.name, shared.context_turns = mode, f"maxsim-e5-{mode}", v["ctx"]
                        shared.calls, shared.seconds = 0, 0.0
                        reranker = shared
                    engine.reranker = engine.retriever.reranker = reranker
                    ms.BLEND["w"], ms.BLEND["rrf"] = v["w"], v["rrf"]
                    run = _ask(engine, corpus, recipe, with_context=False)
                    for half in ("tune", "validate"):
                        table[name][f"{corpus.name}|{half}"] = round(headline(run, corpus, half), 3)
                    per_q = run.seconds / len(corpus.queries) * 1000
                    rr = shared.seconds / max(shared.calls, 1) * 1000 if reranker else 0.0
                    timing.setdefault(name, {})[corpus.name] = {"query_ms": round(per_q, 1), "rerank_ms": round(rr, 1)}
                    print(f"  {corpus.name} {name}: {table[name]} query {per_q:.1f} ms (rerank {rr:.1f} ms)",
                          flush=True)
                # cold cost: no token cache (each candidate encoded at query time), on 40 queries
                if any(VARIANTS[n]["mode"] for n in names):
                    cold = ms.MaxSimReranker(embedder, cache_texts=False)
                    engine.reranker = engine.retriever.reranker = cold
                    ms.wrap_search(engine, cold)
                    ms.BLEND["w"], ms.BLEND["rrf"] = 1.0, 0.0
                    sub = type(corpus)(corpus.name, corpus.items, corpus.queries[:40], corpus.skipped)
                    _ask(engine, sub, recipe, with_context=False)
                    timing.setdefault("cold", {})[corpus.name] = {
                        "rerank_ms": round(cold.seconds / max(cold.calls, 1) * 1000, 1),
                        "texts_per_query": round(cold.texts_encoded / max(cold.calls, 1) - 1, 1)}
                    print(f"  {corpus.name} cold rerank: {timing['cold'][corpus.name]}", flush=True)
            finally:
                engine.close()
        args.out.write_text(json.dumps({"table": table, "timing": timing}, indent=2) + "\n")
    keys = [k for k in next(iter(table.values()))]
    print("\n| variant | " + " | ".join(keys) + " | mean tune | mean validate |")
    for name, row in table.items():
        tune = [row[k] for k in keys if k.endswith("tune")]
        val = [row[k] for k in keys if k.endswith("validate")]
        print(f"| {name} | " + " | ".join(f"{row.get(k, float('nan')):.3f}" for k in keys)
              + f" | {sum(tune) / len(tune):.4f} | {sum(val) / len(val):.4f} |")
    print(json.dumps(timing))


if __name__ == "__main__":
    main()
