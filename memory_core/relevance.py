"""Absolute relevance: a score that means the same for every query, so "nothing fits" can be said.

Retrieval ranks by reciprocal-rank fusion, and the fused score is divided by the query's best,
so the top hit is always 1.0: "The weather is lovely" got five memories scored .9-1.0 (the phone
number, an allergy, Berlin), and small talk and real questions had the same median final score.
Ranks cannot say "nothing here is relevant"; raw similarities can, once calibrated.

``absolute = sigmoid(intercept_lang + w_cos * cosine + w_cov * coverage)`` where ``cosine`` is
the e5 query-passage cosine, ``intercept_lang`` a per-language intercept (e5's Chinese cosines
sit higher than its English ones for unrelated text), and ``coverage`` the share of the query's
content words the memory (or the question it answered) contains. The values are chosen on the
tuning halves of the truth benchmark, LoCoMo and MADial (``python -m bench.relevance`` collects
the features and reports each threshold on both halves): the cut-off that lets at least 95% of
unrelated queries return nothing while keeping the most relevant memories. A result is shown
when ``absolute >= Settings.min_relevance`` (0.5 by default; 0 keeps every result).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from memory_core.text.expansion import slot_keywords
from memory_core.text.keywords import keyword_tokens
from memory_core.text.lang import detect_language


@dataclass(frozen=True)
class RelevanceModel:
    """The calibrated map from (cosine, coverage, language) to a probability of relevance."""

    # Chosen on the tuning halves (bench.relevance, grid over per-language cosine cut-offs and a
    # coverage bonus; see docs/benchmarks.md): at 0.5 an English memory needs cosine + 0.12 *
    # coverage >= 0.80, a Chinese one >= 0.865. Slope 40: 0.05 of cosine moves 0.12 -> 0.88.
    intercept_en: float = -32.0
    intercept_zh: float = -34.6
    cosine_weight: float = 40.0
    coverage_weight: float = 4.8
    # Stands in for the cosine when the vector store could not give one (degraded search).
    neutral_cosine: float = 0.80

    def __call__(self, cosine: float | None, coverage: float, lang: str) -> float:
        intercept = self.intercept_zh if lang == "zh" else self.intercept_en
        z = intercept + self.cosine_weight * (self.neutral_cosine if cosine is None else cosine) \
            + self.coverage_weight * coverage
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


DEFAULT_MODEL = RelevanceModel()


@lru_cache(maxsize=4096)
def query_terms(query: str) -> frozenset[str]:
    """The content words of a query, lower-cased (stopwords and question words are gone)."""
    return frozenset(t.lower() for t in keyword_tokens(query))


def coverage(terms: frozenset[str], memory_text: str, context: str = "", slot_words: frozenset[str] = frozenset()) -> float:
    """Share of the query's content words found in the memory or the question it answered. A
    query about a slot ("我家在哪儿？", "where do I live?") shares no word with "我住在杭州" or "I
    moved to Porto": a memory that uses the words stating that slot covers half of it."""
    if not terms and not slot_words:
        return 0.0
    found = {t.lower() for t in keyword_tokens(f"{memory_text}\n{context}" if context else memory_text)}
    share = len(terms & found) / len(terms) if terms else 0.0
    return max(share, 0.5) if slot_words & found else share


@lru_cache(maxsize=4096)
def slot_terms(query: str) -> frozenset[str]:
    """The words that state the slots ``query`` asks about (memory_core.text.expansion)."""
    return frozenset(t.lower() for t in keyword_tokens(slot_keywords(query))) if slot_keywords(query) else frozenset()


def language(query: str) -> str:
    return detect_language(query)
