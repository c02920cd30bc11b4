"""``python -m bench.quality [--quick | --conversations N] [--forgetting on|off|both] [--precision auto|fp32|int8] [--llm]``."""
from __future__ import annotations

import bench.offline_env  # noqa: F401  (sets the environment before the imports below)
import os  # noqa: E402

import argparse  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from bench.quality.datasets import load_locomo, load_madial  # noqa: E402
from bench.quality.embed_cache import CachingEmbedder  # noqa: E402
from bench.quality.report import FLOORS, markdown, write_chart, write_json  # noqa: E402
from bench.quality.runner import METHODS, CorpusRun, locomo_scores, madial_scores, run_corpus  # noqa: E402
from bench.machine import cpu_description  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
CACHE = ROOT / "bench" / "cache" / "embeddings-alone.sqlite3"  # each text embedded alone (embed_cache.py)
MODEL_DIR = ROOT / "data" / "test-models"


def run(conversations: int | None, questions: int | None, dialogues: int | None, forgetting: str,
        methods: list[str], datasets: list[str], json_path: Path | None, html_path: Path | None,
        cache_path: Path = CACHE, off_methods: list[str] | None = None, captions: bool = False,
        precision: str = "auto", llm: bool = False) -> dict[str, Any]:
    """Run the benchmark; returns the result dict (also written to ``json_path`` / ``html_path``)."""
    from memory_core.config import BUNDLED_EMBEDDING_MODEL
    from memory_core.embedding import load_embedder

    started = time.perf_counter()
    load_start = os.getloadavg()
    embedder = CachingEmbedder(load_embedder(BUNDLED_EMBEDDING_MODEL, MODEL_DIR, precision=precision), cache_path)
    variants = {"on": [True], "off": [False], "both": [True, False]}[forgetting]
    results: dict[str, Any] = {}
    meta: dict[str, Any] = {"expiry": {}, "context_tokens_top5": {}, "write_seconds": {}, "query_seconds": {},
                            "locomo_image_captions": captions, "embedder": embedder.name,
                            "llm": {}, "llm_failures": {}}

    def record(key: str, run_: CorpusRun) -> None:
        meta["write_seconds"][key] = round(run_.write_seconds, 1)
        meta["query_seconds"][key] = {m: round(r.seconds, 1) for m, r in run_.runs.items()}
        meta["llm"][key], meta["llm_failures"][key] = run_.llm, run_.llm_failures
        meta["expiry"][key] = {"memories": run_.memories, "gold_ids": run_.gold_total,
                               "gold_ids_expired_at_query_time": run_.hidden_gold,
                               "queries_with_expired_gold": run_.queries_with_hidden_gold,
                               "gold_ids_faded_at_query_time": run_.faded_gold}
        full = run_.runs.get("full")
        if full and full.context_tokens:
            meta["context_tokens_top5"][key] = round(sum(full.context_tokens) / len(full.context_tokens), 1)

    for on in variants:
        suffix = "" if on else "_forgetting_off"
        # With both variants, the forgetting-off pass only needs the product pipeline (the cost).
        use = methods if (on or forgetting == "off" or not off_methods) else off_methods
        if "locomo" in datasets:
            corpus = load_locomo(conversations, questions, captions=captions)
            r = run_corpus(corpus, embedder, MODEL_DIR, use, forgetting=on, llm=llm)
            results["locomo" + suffix] = {m: locomo_scores(run_, corpus.queries) for m, run_ in r.runs.items()}
            meta["locomo_questions_without_evidence"] = corpus.skipped
            record("locomo" + suffix, r)
        for lang in ("zh", "en"):
            if f"madial_{lang}" not in datasets:
                continue
            corpus = load_madial(lang, dialogues)
            r = run_corpus(corpus, embedder, MODEL_DIR, use, forgetting=on, llm=llm)
            results[f"madial_{lang}" + suffix] = {m: madial_scores(run_, corpus.queries) for m, run_ in r.runs.items()}
            record(f"madial_{lang}" + suffix, r)

    meta.update(
        wall_seconds=round(time.perf_counter() - started, 1),
        load_average_start=[round(x, 2) for x in load_start],
        load_average_end=[round(x, 2) for x in os.getloadavg()],
        cpu_count=os.cpu_count(),
        machine=cpu_description(),
        embedding_cache={"hits": embedder.hits, "misses": embedder.misses},
        slice={"conversations": conversations, "questions_per_conversation": questions, "dialogues": dialogues},
        external_floors=FLOORS,
    )
    results["meta"] = meta
    embedder.close()
    if json_path:
        write_json(results, json_path)
    if html_path:
        write_chart(results, html_path)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 conversations x 40 questions, 40 dialogues")
    parser.add_argument("--conversations", type=int, default=None, help="first N LoCoMo conversations")
    parser.add_argument("--questions", type=int, default=None, help="questions per conversation")
    parser.add_argument("--dialogues", type=int, default=None, help="first N MADial dialogues per language")
    parser.add_argument("--forgetting", choices=["on", "off", "both"], default="both",
                        help="product default expiry (on), disabled (off), or both variants")
    parser.add_argument("--methods", default="full,bm25,dense,hybrid",
                        help="comma list of " + ",".join(METHODS) + " (full-no-X: the full pipeline with part X off)")
    parser.add_argument("--off-methods", default="full",
                        help="methods of the forgetting-off pass when --forgetting both")
    parser.add_argument("--datasets", default="locomo,madial_zh,madial_en")
    parser.add_argument("--captions", action="store_true",
                        help="LoCoMo turns with the caption of the photo they shared")
    parser.add_argument("--precision", choices=["auto", "fp32", "int8"],
                        default=os.environ.get("EMBEDDING_PRECISION", "auto"),
                        help="encoder precision (EMBEDDING_PRECISION; auto = the product default, int8 for the "
                             "bundled model); other precisions' results need --out")
    parser.add_argument("--llm", action="store_true",
                        help="analyse writes and rewrite queries with the OpenAI-compatible endpoint configured in "
                             "the environment (OPENAI_BASE_URL, OPENAI_API_KEY, LLM_MODEL) instead of the offline "
                             "stand-in; its results are written only with --out")
    parser.add_argument("--out", default=None, help="JSON path (default bench/results/quality.json for full "
                                                    "runs; slices are not written unless given)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.llm:
        from memory_core.config import Settings
        if not Settings(_env_file=None).llm_configured:  # type: ignore[call-arg]
            parser.error("--llm needs an OpenAI-compatible endpoint: set OPENAI_BASE_URL (or OPENAI_API_KEY) "
                         "and LLM_MODEL")
    conversations, questions, dialogues = args.conversations, args.questions, args.dialogues
    if args.quick:
        conversations, questions, dialogues = conversations or 2, questions or 40, dialogues or 40
    sliced = any(v is not None for v in (conversations, questions, dialogues))
    # Only the default configuration overwrites the committed result.
    json_path = Path(args.out) if args.out else (
        None if sliced or args.precision != "auto" or args.llm else RESULTS / "quality.json")
    html_path = json_path.with_suffix(".html") if json_path else None
    results = run(conversations, questions, dialogues, args.forgetting,
                  [m.strip() for m in args.methods.split(",") if m.strip()],
                  [d.strip() for d in args.datasets.split(",") if d.strip()], json_path, html_path,
                  off_methods=[m.strip() for m in args.off_methods.split(",") if m.strip()],
                  captions=args.captions, precision=args.precision, llm=args.llm)
    print(markdown(results))
    if json_path:
        print(f"\nwrote {json_path} and {html_path}")


if __name__ == "__main__":
    main()
