"""Cheap lexical similarity for deciding whether two memory texts say the same thing.

Embedding cosine alone is not enough: with multilingual-e5 "我对芒果过敏" and "我对花生过敏"
score 0.96, and "I live in Oslo" / "I live in Bergen" 0.92, yet they are different facts.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache


@lru_cache(maxsize=4096)  # a batch compares each new text with many others: normalise each once
def normalize_for_compare(text: str) -> str:
    """NFKC, lowercase, punctuation -> space, spaces kept only between Latin/digit runs."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = re.sub(r"[^\w]+|_", " ", t)
    t = re.sub(r"\s+", " ", t).strip()
    # Drop spaces that touch a CJK character so "我 住在 北京" == "我住在北京".
    t = re.sub(r"(?<=[^\x00-\x7f]) | (?=[^\x00-\x7f])", "", t)
    return t


def _bigrams(norm: str) -> set[str]:
    compact = norm.replace(" ", "")
    if len(compact) < 2:
        return {compact} if compact else set()
    return {compact[i : i + 2] for i in range(len(compact) - 1)}


def bigram_jaccard(a: str, b: str) -> float:
    ga, gb = _bigrams(normalize_for_compare(a)), _bigrams(normalize_for_compare(b))
    if not ga or not gb:
        return 0.0
    return len(ga & gb) / len(ga | gb)
