"""Near-duplicates and merged texts for the merge job, by rules."""
from __future__ import annotations

import re
from typing import Sequence

from memory_core.llm.base import MemoryBrief
from memory_core.text.chunking import split_sentences
from memory_core.text.lang import is_cjk
from memory_core.text.similarity import bigram_jaccard, normalize_for_compare

_I = re.IGNORECASE

# ---------------------------------------------------------------- merges


def _contains(outer: str, inner: str) -> bool:
    """``inner`` occurs in ``outer`` without cutting a Latin word in half."""
    if len(inner.replace(" ", "")) < 4:
        return False
    start = outer.find(inner)
    while start >= 0:
        end = start + len(inner)
        left_ok = start == 0 or not (outer[start - 1].isascii() and outer[start - 1].isalnum() and inner[0].isascii())
        right_ok = end == len(outer) or not (outer[end].isascii() and outer[end].isalnum() and inner[-1].isascii())
        if left_ok and right_ok:
            return True
        start = outer.find(inner, start + 1)
    return False


_NEGATION_RE = re.compile(r"不|没|别|未|无|非|\bnot\b|n't|\bnever\b|\bno\b|\bnone\b|\bquit\b|\bstopped\b", _I)


def _polarity(norm: str) -> int:
    return len(_NEGATION_RE.findall(norm)) % 2


def _numbers(norm: str) -> set[str]:
    return set(re.findall(r"\d+", norm))


def near_duplicate(a: str, b: str, threshold: float = 0.8) -> tuple[bool, str]:
    """Whether two memory texts say the same thing, and how we know."""
    na, nb = normalize_for_compare(a), normalize_for_compare(b)
    if not na or not nb:
        return False, ""
    if na == nb:
        return True, "identical after normalisation"
    if _polarity(na) != _polarity(nb):
        return False, ""
    short, long_ = (na, nb) if len(na) <= len(nb) else (nb, na)
    if _contains(long_, short):
        return True, "one text contains the other"
    short_text, long_text = (a, b) if len(na) <= len(nb) else (b, a)
    short_sentences = [normalize_for_compare(x) for x in split_sentences(short_text)]
    if len(short_sentences) > 1 and all(x and _contains(long_, x) for x in short_sentences):
        return True, "every sentence of one text is in the other"
    if _numbers(na) != _numbers(nb):
        return False, ""
    score = bigram_jaccard(a, b)
    if score >= threshold:
        return True, f"character-bigram Jaccard {score:.2f}"
    return False, ""


def _merged_text(members: Sequence[MemoryBrief]) -> str:
    """The longest member if it covers the rest, else the union of distinct sentences."""
    ordered = sorted(members, key=lambda m: (m.created_at, m.memory_id))
    longest = max(ordered, key=lambda m: (len(normalize_for_compare(m.content)), m.created_at))
    kept: list[str] = []
    for m in ordered:
        for sentence in split_sentences(m.content) or [m.content.strip()]:
            ns = normalize_for_compare(sentence)
            if not ns:
                continue
            if any(near_duplicate(sentence, k)[0] and len(normalize_for_compare(k)) >= len(ns) for k in kept):
                continue
            kept = [k for k in kept if not (near_duplicate(sentence, k)[0] and len(normalize_for_compare(k)) < len(ns))]
            kept.append(sentence)
    # A member cut by the chunker mid-sentence ("... Munich. I re") must not end the merged text
    # with its fragment when a whole sentence elsewhere starts with it.
    kept = [k for k in kept if re.search(r"[。！？!?.;；…]$", k) or not any(
        o is not k and normalize_for_compare(o).startswith(normalize_for_compare(k)) for o in kept)]
    longest_sentences = {normalize_for_compare(s) for s in split_sentences(longest.content)}
    if all(normalize_for_compare(k) in longest_sentences for k in kept):
        return longest.content.strip()
    joined = ""
    for k in kept:
        if joined and not re.search(r"[。！？!?.;；]$", joined):
            joined += "。" if is_cjk(joined[-1]) else "."
        joined += ("" if not joined or is_cjk(k[0]) else " ") + k
    if joined and not re.search(r"[。！？!?.;；…\"'”’)）]$", joined):
        joined += "。" if is_cjk(joined[-1]) else "."  # the merged text ends as a sentence
    return joined


