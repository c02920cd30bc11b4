"""Does the keyword leg read Chinese as well as a character-bigram BM25? (issue 21)

``python -m bench.keyword_leg`` ranks each MADial user's memories with the same BM25 (k1 1.2,
b 0.75, statistics per user: ``memory_core.sql_keyword.bm25_rank``) over different tokenisations
of the same texts, and prints recall@5 on the whole set and on the fixed tune/validate halves:

* ``jieba words``: what the product indexes (``memory_core.text.keywords.keyword_tokens``:
  jieba search mode, stopwords dropped, stemmed English);
* ``char bigrams``, ``char uni+bigrams``: the plain baseline of ``../shared/README.md``;
* ``words + bigrams``: both side by side.

Each is asked with the last user turn alone and with the dialogue before it (as the pipeline
asks). No forgetting, no dense leg, no boosts: the tokenisation is the only variable. Writes
``bench/results/keyword_leg.json``.
"""
from __future__ import annotations

import bench.offline_env  # noqa: F401  (first: the offline environment)

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Callable

from bench.quality.datasets import half_of, load_madial
from memory_core.sql_keyword import bm25_rank
from memory_core.text.keywords import keyword_tokens
from memory_core.text.lang import CJK_CLASS

_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
K = 5


def char_unigrams(text: str) -> list[str]:
    return [ch for run in _CJK_RUN.findall(text) for ch in run]


def char_bigrams(text: str) -> list[str]:
    return [run[i:i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)]


TOKENISERS: dict[str, Callable[[str], list[str]]] = {
    "jieba words": keyword_tokens,
    "char bigrams": char_bigrams,
    "char uni+bigrams": lambda t: char_unigrams(t) + char_bigrams(t),
    # Bigrams carry a marker so a two-character jieba word and the same pair count apart.
    "words + bigrams": lambda t: keyword_tokens(t) + ["2:" + b for b in char_bigrams(t)],
}


def run(lang: str) -> dict[str, dict[str, float]]:
    corpus = load_madial(lang)
    docs: dict[str, dict[str, str]] = defaultdict(dict)
    for item in corpus.items:
        docs[item.user_id][str(item.source)] = item.content
    out: dict[str, dict[str, float]] = {}
    for name, tokens in TOKENISERS.items():
        indexed = {user: {sid: tokens(text) for sid, text in d.items()} for user, d in docs.items()}
        for asked in ("turn", "turn+dialogue"):
            recalls: dict[str, list[float]] = {"all": [], "tune": [], "validate": []}
            for q in corpus.queries:
                text = q.text if asked == "turn" else " ".join([q.text, *q.context])
                top = {sid for sid, _ in bm25_rank(tokens(text), indexed[q.user_id], K)}
                r = len(top & q.gold) / len(q.gold)
                recalls["all"].append(r)
                recalls[half_of(q.user_id)].append(r)
            out[f"{name} | {asked}"] = {h: round(mean(v), 3) for h, v in recalls.items() if v}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--langs", default="zh", help="comma list of zh,en")
    parser.add_argument("--out", default="bench/results/keyword_leg.json")
    args = parser.parse_args()
    results = {f"madial_{lang}": run(lang) for lang in args.langs.split(",")}
    for dataset, rows in results.items():
        print(f"\n{dataset}: BM25 recall@{K} per user index, by tokenisation\n")
        print("| tokens | asked with | all | tune | validate |\n|---|---|---|---|---|")
        for key, r in rows.items():
            name, asked = key.split(" | ")
            print(f"| {name} | {asked} | {r['all']:.3f} | {r.get('tune', 0):.3f} | {r.get('validate', 0):.3f} |")
    Path(args.out).write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
