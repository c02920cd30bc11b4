"""``python -m bench.write_stages [--rounds 4] [--variants calls256,stages256,stages512]``

Same-process A/B of how ``add_many`` cuts a batch, on the 10k corpus of ``bench.latency`` (10
users x 1,000 memories, real embeddings, the default encoder). Each round writes 512 new texts
once per variant, the variants alternating, so this machine's drifting speed is shared by all of
them; before each batch the model alone embeds the same texts (the ratio is the pipeline's own
cost). Variants:

- ``callsN``: the caller cuts the batch into ``add_many`` calls of N items (what the engine did
  itself before stages: each call analysed, stored and checked on its own, the model idle
  meanwhile);
- ``stagesN``: one ``add_many`` call written in stages of N chunks, the model one stage ahead.

Prints a markdown table (median and every round); writes nothing else. About 3 minutes.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RUST_LOG", "error")

from memory_core import AddItem, FixedClock, Settings, open_memory  # noqa: E402
from memory_core.config import BUNDLED_EMBEDDING_MODEL  # noqa: E402
from memory_core.embedding import load_embedder  # noqa: E402

from bench.latency.corpus import SPECS, SentencePool, query_texts, user_id  # noqa: E402
from bench.latency.loader import load_corpus  # noqa: E402
from bench.latency.measure import load_avg  # noqa: E402
from bench.latency.runner import NOW, REPO_ROOT  # noqa: E402

BATCH = 512


def _parse(variant: str) -> tuple[str, int]:
    """``"calls256"`` -> ``("calls", 256)``; ValueError for anything else."""
    match = re.fullmatch(r"(calls|stages)([1-9][0-9]*)", variant)
    if match is None:
        raise ValueError(f"unknown variant {variant!r}: callsN or stagesN")
    return match.group(1), int(match.group(2))


def _write(engine, items: list[AddItem], variant: str) -> None:  # type: ignore[no-untyped-def]
    kind, size = _parse(variant)
    if kind == "calls":
        for start in range(0, len(items), size):
            engine.add_many(items[start:start + size])
    else:
        engine.add_many(items, stage_chunks=size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.write_stages")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--variants", default="calls256,stages256,stages512")
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        try:
            _parse(v)
        except ValueError as exc:
            parser.error(str(exc))

    spec = SPECS["10k"]
    root = Path(tempfile.mkdtemp(prefix="write-stages-"))
    try:
        settings = Settings(_env_file=None, data_dir=root, milvus_uri=str(root / "milvus.db"),  # type: ignore[call-arg]
                            model_cache_dir=REPO_ROOT / "data" / "test-models", redis_url="", openai_base_url="",
                            openai_api_key=None, llm_model="")
        embedder = load_embedder(BUNDLED_EMBEDDING_MODEL, settings.resolved_model_cache_dir, precision=spec.precision)
        engine = open_memory(settings, embedder=embedder, clock=FixedClock(NOW))
        pool = SentencePool()
        users = [user_id(spec, i) for i in sorted(random.Random(11).sample(range(spec.users), spec.users))]
        print(f"building the 10k corpus ({embedder.name}) ...", flush=True)
        load_corpus(engine, spec, pool, NOW, vectors_for=lambda b: embedder.embed_passages(b.texts),
                    writers=[engine.vectors], keep=set(users), progress=lambda m: None)
        for uid in users:
            engine.prepare_user(uid, wait=True)
        rates: dict[str, list[float]] = {v: [] for v in variants}
        ratios: dict[str, list[float]] = {v: [] for v in variants}
        for round_ in range(args.rounds):
            for number, variant in enumerate(variants):
                fresh = query_texts(400, seed=1000 + round_ * 10 + number)
                items = [AddItem(user_id=users[i % len(users)],
                                 content=f"{pool.sentences[(i * 104729 + round_ * 7 + number * 13) % len(pool)]}"
                                         f" — note {i} {fresh[i % 400]}")
                         for i in range(BATCH)]
                started = time.perf_counter()
                embedder.embed_passages([item.content for item in items])
                model = BATCH / (time.perf_counter() - started)
                started = time.perf_counter()
                _write(engine, items, variant)
                rate = BATCH / (time.perf_counter() - started)
                rates[variant].append(rate)
                ratios[variant].append(rate / model)
                print(f"round {round_} {variant}: {rate:.0f}/s, model alone {model:.0f}/s, load {load_avg()}", flush=True)
        engine.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"\n### add_many of {BATCH} texts at 1,000 memories per user, {args.rounds} alternating rounds\n")
    print("| variant | memories/s, median | every round | ratio to the model alone, median |")
    print("|---|---|---|---|")
    for v in variants:
        print(f"| {v} | {statistics.median(rates[v]):.0f} | {', '.join(f'{r:.0f}' for r in rates[v])} "
              f"| {statistics.median(ratios[v]):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
