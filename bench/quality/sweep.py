"""``python -m bench.quality.sweep``: re-tune the retrieval boosts on the tuning halves.

Each dev set is written once (forgetting on, as in the product); then every variant below
changes one setting of the retrieval pipeline and asks all the questions again. Printed per
variant: LoCoMo cat 1-4 recall@10 and MADial zh / en recall@5, each on the tune and the
validate half (``bench.quality.datasets.TUNE_USERS``). Choose on the tune columns; the validate
columns are the report. Writes ``bench/results/sweep.json``.

Why in one process: writing LoCoMo is most of a run's time, and every setting swept here is a
number of the retrieval recipe (``memory_core.recipes.Tuning``), read at query time: each variant
is the ``FULL`` recipe with those numbers, asked of the stores as they are.
"""
from __future__ import annotations

import bench.offline_env  # noqa: F401  (sets the environment before the imports below)

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from dataclasses import replace  # noqa: E402
from typing import Any  # noqa: E402

from bench.quality.__main__ import CACHE, MODEL_DIR, RESULTS  # noqa: E402
from bench.quality.datasets import load_locomo, load_madial  # noqa: E402
from bench.quality.embed_cache import CachingEmbedder  # noqa: E402
from bench.quality.runner import _ask, locomo_scores, madial_scores, make_engine  # noqa: E402
from memory_core.recipes import FULL, Tuning  # noqa: E402

# name -> recipe numbers (``Tuning`` fields, named as in Settings) changed from the defaults (one knob at a time, both sides of the default).
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "rrf_k=2": {"rrf_k": 2},
    "rrf_k=10": {"rrf_k": 10},
    "speaker=0.3": {"speaker_match_boost": 0.3},
    "speaker=1.0": {"speaker_match_boost": 1.0},
    "when=0.3": {"when_answer_boost": 0.3},
    "when=1.0": {"when_answer_boost": 1.0},
    "neighbours=half": {"neighbour_next_share": 0.075, "neighbour_prev_share": 0.05},
    "neighbours=double": {"neighbour_next_share": 0.3, "neighbour_prev_share": 0.2},
    "priors=lighter": {"weight_relevance": 0.9, "weight_importance": 0.06, "weight_recency": 0.04},
    "priors=heavier": {"weight_relevance": 0.7, "weight_importance": 0.18, "weight_recency": 0.12},
    # each prior alone off, and a slower recency (fading keeps year-old memories in the ranking)
    "importance=0": {"weight_relevance": 0.92, "weight_importance": 0.0},
    "recency=0": {"weight_relevance": 0.88, "weight_recency": 0.0},
    "half_life=365": {"recency_half_life_days": 365.0},
    # how much of the conversation the second dense leg reads with the query (default 3 lines)
    "context=0": {"context_dense_turns": 0},
    "context=1": {"context_dense_turns": 1},
    "context=6": {"context_dense_turns": 6},
    "context=24": {"context_dense_turns": 24},
}


def headline(run: Any, corpus: Any, half: str) -> float:
    """A dev set's main measure on one half: LoCoMo cat 1-4 recall@10, MADial recall@5."""
    if corpus.name == "locomo":
        return locomo_scores(run, corpus.queries)[f"cat1-4|{half}"]["recall@10"]
    return madial_scores(run, corpus.queries)[f"recall@5|{half}"]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.quality.sweep", description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma list of " + ",".join(VARIANTS))
    parser.add_argument("--out", type=Path, default=RESULTS / "sweep.json")
    args = parser.parse_args()
    from memory_core.config import BUNDLED_EMBEDDING_MODEL
    from memory_core.embedding import load_embedder

    embedder = CachingEmbedder(load_embedder(BUNDLED_EMBEDDING_MODEL, MODEL_DIR, precision="auto"), CACHE)
    names = args.variants.split(",")
    table: dict[str, dict[str, float]] = {name: {} for name in names}
    corpora = [load_locomo(None, None), load_madial("zh"), load_madial("en")]
    for corpus in corpora:
        with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
            engine = make_engine(embedder, MODEL_DIR, Path(tmp), forgetting=True)
            try:
                engine.add_many(corpus.items)
                defaults = Tuning.from_settings(engine.settings)
                for name in names:
                    recipe = FULL.with_tuning(replace(defaults, **VARIANTS[name]))
                    run = _ask(engine, corpus, recipe, with_context=False)
                    for half in ("tune", "validate"):
                        table[name][f"{corpus.name}|{half}"] = round(headline(run, corpus, half), 3)
                    print(f"  {corpus.name} {name}: {table[name]}", flush=True)
            finally:
                engine.close()
    keys = [f"{d}|{h}" for d in ("locomo", "madial_zh", "madial_en") for h in ("tune", "validate")]
    print("\n| variant | " + " | ".join(keys) + " | mean tune | mean validate |")
    print("|---" * (len(keys) + 3) + "|")
    for name, row in table.items():
        tune = sum(row[k] for k in keys if k.endswith("tune")) / 3
        validate = sum(row[k] for k in keys if k.endswith("validate")) / 3
        row["mean|tune"], row["mean|validate"] = round(tune, 4), round(validate, 4)
        print(f"| {name} | " + " | ".join(f"{row[k]:.3f}" for k in keys) + f" | {tune:.4f} | {validate:.4f} |")
    args.out.write_text(json.dumps(table, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
