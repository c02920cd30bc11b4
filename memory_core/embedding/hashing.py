"""A small deterministic ``Embedder``: hashed words and character n-grams, no model.

Why: the bundled model costs seconds to load per process and its vectors carry meaning that
a test of plumbing (an id refused, a row deleted, a page drawn) does not need. This embedder
loads nothing and gives the same vector for the same text in every process and on every
machine (hashing is ``blake2b``, not Python's salted ``hash``).

What its vectors mean: texts that share words or character n-grams are close ("mango" and
"mangoes" share trigrams; "芒果过敏" and "我对芒果过敏" share characters and bigrams); texts
that share none are not. There is no knowledge of synonyms or translation: "I love hiking" and
"我喜欢徒步" are unrelated here. A test that depends on what the real model understands must use
the real model.

Its cosines sit where e5's do: e5's vectors share a common direction, so unrelated texts score
about 0.7-0.8 there (measured on this model: English 0.69-0.80, Chinese 0.80-0.91), not 0. The
engine's calibrated cut-offs assume that range (absolute relevance in ``relevance.py`` needs an
English cosine near 0.8; dedup, merge and conflict floors are 0.8-0.97). So one coordinate holds
a component common to every text, worth ``COMMON`` of the cosine, and the hashed features share
the rest: ``cosine = COMMON + (1 - COMMON) * overlap``, with ``overlap`` in [0, 1] the cosine of
the (non-negative) feature counts. A repeat scores 1, a rewording that keeps most words clears
the conflict floor, and a text sharing no word stays below every cut-off.

Held to the port by ``tests/test_embedder_contract.py`` (dimension, unit length, float32,
determinism, a batch equals its items one by one), which runs on the real model too.
"""
from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from functools import lru_cache
from typing import Sequence

import numpy as np

from memory_core.embedding.base import Embedder

DEFAULT_DIM = 384  # the bundled model's, so a store built on one opens with the other
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_PIECE = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)  # a run of CJK, or of other letters/digits
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_]+|[^\s\w]", re.UNICODE)
_CJK_RUN = re.compile(rf"[{_CJK}]+")
COMMON = 0.72  # the cosine of two texts that share no feature (e5's unrelated texts: ~0.7-0.8)


@lru_cache(maxsize=65_536)
def _slot(feature: str, dim: int) -> int:
    """The coordinate a feature is counted in: 1..dim-1 (0 holds the common component)."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return 1 + digest % (dim - 1)


def features(text: str) -> list[tuple[str, float]]:
    """The weighted features of ``text``: each word, its character trigrams (with word edges),
    and for Chinese each character and each pair of neighbouring characters."""
    norm = unicodedata.normalize("NFKC", text).lower()
    out: list[tuple[str, float]] = []
    for piece in _PIECE.findall(norm):
        if _CJK_RUN.fullmatch(piece):
            out.extend((f"z:{ch}", 1.0) for ch in piece)
            out.extend((f"z:{piece[i:i + 2]}", 1.0) for i in range(len(piece) - 1))
            continue
        out.append((f"w:{piece}", 1.0))
        padded = f"<{piece}>"
        out.extend((f"t:{padded[i:i + 3]}", 0.5) for i in range(len(padded) - 2))
    return out


class HashingEmbedder(Embedder):
    """Hashed word and n-gram features in ``dim`` dimensions, L2-normalised float32."""

    def __init__(self, dim: int = DEFAULT_DIM, max_tokens: int = 512) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise ValueError(f"dim must be an integer >= 8, got {dim!r}")
        self.dim = dim
        self.max_tokens = max_tokens
        self.name = f"hashing-ngrams-{dim}"

    def _embed(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        counts = np.zeros(self.dim, dtype=np.float64)
        for feature, weight in features(text):
            counts[_slot(feature, self.dim)] += weight
        norm = math.sqrt(float(counts @ counts))
        if norm == 0.0:  # no word at all ("", "!!!"): the common component alone
            counts[0] = 1.0
            return counts.astype(np.float32)
        vector = counts * (math.sqrt(1.0 - COMMON) / norm)
        vector[0] = math.sqrt(COMMON)
        return vector.astype(np.float32)

    def _embed_all(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._embed(t) for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed_all(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The same features as passages (e5's "query: " prefix has no counterpart here)."""
        return self._embed_all(texts)

    def count_tokens(self, text: str) -> int:
        """One token per Chinese character, per run of other letters or digits, and per other
        symbol: about what a subword tokenizer counts for short words, fewer for long ones."""
        return len(_TOKEN.findall(text))


__all__ = ["COMMON", "DEFAULT_DIM", "HashingEmbedder", "features"]
