"""Prototype (issue 21): a late-interaction (ColBERT MaxSim) reranker from the bundled e5 encoder.

Token states = the ONNX encoder's last_hidden_state, L2-normalised per token, with the e5 prompts
("query: " / "passage: ") in the input but the prompt's own tokens, the special tokens and the pads
dropped from the token set. score(q, d) = mean over query tokens of the max cosine over d's tokens;
``symmetric`` averages it with the d -> q direction.

Scores are squashed to [0, 1] per query (min-max over the candidates), since the pipeline lets a
reranker's score stand in for the relevance term (memory_core/ranking.py: fused_relevance).

``install_blend(w)`` patches, in this process only, the pipeline's ``score`` so that the relevance is
``w * maxsim + (1 - w) * fused / best`` instead (w = 1: the pipeline's own behaviour).
"""
from __future__ import annotations

import threading
import time
from typing import Sequence

import numpy as np

from memory_core.rerank import Reranker


def _unwrap(embedder):
    while hasattr(embedder, "inner"):
        embedder = embedder.inner
    if not hasattr(embedder, "_session"):
        raise TypeError(f"MaxSim needs the ONNX embedder, got {embedder!r}")
    return embedder


class MaxSimReranker(Reranker):
    def __init__(self, embedder, *, mode: str = "q2d", norm: str = "minmax", drop_prompt: bool = True,
                 cache_texts: bool = True) -> None:
        self.onnx = _unwrap(embedder)
        self.mode = mode  # "q2d" | "sym" | "d2q"
        self.norm = norm  # "minmax" | "best" | "raw"
        self.drop_prompt = drop_prompt
        self.cache_texts = cache_texts
        self.name = f"maxsim-e5-{mode}"
        self._tokens: dict[tuple[str, str], np.ndarray] = {}
        self._pairs: dict[tuple[str, str], tuple[float, float]] = {}
        self._lock = threading.Lock()
        self.calls = 0
        self.seconds = 0.0
        self.texts_encoded = 0
        self.context_turns = 0  # > 0: the query is read after the last N turns of the conversation
        self.context: list[str] | None = None  # set per search by the caller (wrap_search)

    # ---- token states -------------------------------------------------------------------
    def _encode_tokens(self, texts: Sequence[str], prompt: str) -> list[np.ndarray]:
        enc = self.onnx._encoder.encode_batch([prompt + t for t in texts])
        out: list[np.ndarray | None] = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(enc[i].ids))
        bs = 32
        for start in range(0, len(order), bs):
            rows = order[start:start + bs]
            width = max(len(enc[i].ids) for i in rows)
            ids = np.full((len(rows), width), self.onnx._pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                ids[r, :len(enc[i].ids)] = enc[i].ids
                mask[r, :len(enc[i].ids)] = 1
            hidden = self.onnx._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            for r, i in enumerate(rows):
                e = enc[i]
                n = len(e.ids)
                keep = [j for j in range(n) if not e.special_tokens_mask[j]
                        and not (self.drop_prompt and e.offsets[j][1] <= len(prompt))]
                if not keep:  # empty text: keep whatever is not special
                    keep = [j for j in range(n) if not e.special_tokens_mask[j]] or [0]
                h = hidden[r, keep, :].astype(np.float32)
                h /= np.maximum(np.linalg.norm(h, axis=1, keepdims=True), 1e-12)
                out[i] = h.astype(np.float16)
        return out  # type: ignore[return-value]

    def _tokens_for(self, texts: Sequence[str], prompt: str) -> list[np.ndarray]:
        if not self.cache_texts:
            self.texts_encoded += len(texts)
            return self._encode_tokens(texts, prompt)
        missing = list(dict.fromkeys(t for t in texts if (prompt, t) not in self._tokens))
        if missing:
            self.texts_encoded += len(missing)
            for t, h in zip(missing, self._encode_tokens(missing, prompt)):
                self._tokens[(prompt, t)] = h
        return [self._tokens[(prompt, t)] for t in texts]

    def pair_scores(self, query: str, texts: Sequence[str]) -> list[tuple[float, float]]:
        """(q->d, d->q) MaxSim per text."""
        todo = [t for t in dict.fromkeys(texts) if (query, t) not in self._pairs]
        if todo:
            q = self._tokens_for([query], self.onnx.query_prompt or "")[0].astype(np.float32)
            docs = self._tokens_for(todo, self.onnx.passage_prompt or "")
            for t, d in zip(todo, docs):
                sim = q @ d.astype(np.float32).T
                self._pairs[(query, t)] = (float(sim.max(axis=1).mean()), float(sim.max(axis=0).mean()))
        return [self._pairs[(query, t)] for t in texts]

    def raw(self, query: str, texts: Sequence[str]) -> np.ndarray:
        pairs = np.asarray(self.pair_scores(query, texts), dtype=np.float64).reshape(-1, 2)
        if self.mode == "q2d":
            return pairs[:, 0]
        if self.mode == "d2q":
            return pairs[:, 1]
        return pairs.mean(axis=1)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        items = list(texts)
        if not items:
            return []
        t = time.perf_counter()
        if self.context_turns and self.context:
            query = "\n".join(list(self.context)[-self.context_turns:] + [query])
        with self._lock:
            s = self.raw(query, items)
        if self.norm == "minmax":
            lo, hi = s.min(), s.max()
            s = (s - lo) / (hi - lo) if hi > lo else np.ones_like(s)
        elif self.norm == "best":
            s = s / s.max() if s.max() > 0 else s
        self.seconds += time.perf_counter() - t
        self.calls += 1
        return [float(max(0.0, min(1.0, v))) for v in s]


# ---- blending with the fused relevance (the pipeline itself has no blend knob) ------------------
_ORIGINAL_SCORE = None
BLEND = {"w": 1.0, "rrf": 0.0}  # rrf > 0: MaxSim's rank is one more reciprocal-rank leg of that weight


def install_blend() -> None:
    """Patch ``memory_core.retrieval.score`` once; ``BLEND['w']`` then decides (1.0 = as the pipeline)."""
    global _ORIGINAL_SCORE
    import memory_core.retrieval as retrieval
    from memory_core.ranking import fused_relevance

    if _ORIGINAL_SCORE is not None:
        return
    _ORIGINAL_SCORE = retrieval.score

    def blended_score(candidates, records, now, recipe, *args, **kwargs):
        w, leg = BLEND["w"], BLEND["rrf"]
        if leg > 0 and any(c.rerank is not None for c in candidates):
            saved = [c.rerank for c in candidates]
            for c in candidates:
                c.rerank = None
            fused = [fused_relevance(c, recipe) for c in candidates]
            order = sorted(range(len(candidates)), key=lambda i: -(saved[i] or 0.0))
            k = recipe.resolved_tuning.rrf_k
            for rank, i in enumerate(order):
                fused[i] += leg / (k + rank + 1)
            best = max(fused, default=0.0)
            for c, f in zip(candidates, fused):
                c.rerank = f / best if best > 0 else 0.0
        elif w < 1.0 and any(c.rerank is not None for c in candidates):
            saved = [c.rerank for c in candidates]
            for c in candidates:
                c.rerank = None
            fused = [fused_relevance(c, recipe) for c in candidates]
            best = max(fused, default=0.0)
            for c, r, f in zip(candidates, saved, fused):
                c.rerank = w * (r or 0.0) + (1.0 - w) * (f / best if best > 0 else 0.0)
        return _ORIGINAL_SCORE(candidates, records, now, recipe, *args, **kwargs)

    retrieval.score = blended_score


def wrap_search(engine, reranker: MaxSimReranker) -> None:
    """Hand each search's conversation to the reranker (the Reranker port sees the query alone)."""
    original = engine.search

    def search(*args, **kwargs):
        reranker.context = kwargs.get("context")
        return original(*args, **kwargs)

    engine.search = search
