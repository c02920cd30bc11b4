"""Final score = w_rel * relevance + w_imp * importance/5 + w_rec * recency, every part in [0, 1].

Relevance comes from the cross-encoder when one is configured, otherwise from reciprocal-rank
fusion of the retrieval legs (dense, dense-with-conversation, keyword, time window) plus what
neighbour expansion lends, divided by the best fused score of the same query (the top hit is
1.0). Relative normalisation keeps the gap between a first and a tenth rank large enough that
importance and recency only reorder comparably relevant memories (measured: with the older
"best possible score" normalisation the priors outweighed relevance and cost recall).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Weights:
    relevance: float
    importance: float
    recency: float
    half_life_days: float


def rrf_sum(ranks: list[int | None], k: int) -> float:
    """Raw reciprocal-rank fusion: sum of 1/(k+rank+1) over the legs that found the item
    (``k`` is ``Settings.rrf_k``, where its measured choice is documented)."""
    return sum(1.0 / (k + rank + 1) for rank in ranks if rank is not None)


def recency(created_at: datetime, now: datetime, half_life_days: float) -> float:
    """Exponential decay with age: 1.0 today, 0.5 after one half-life; future dates count as now."""
    age_days = max(0.0, (now - created_at).total_seconds() / 86400.0)
    return math.exp(-math.log(2) * age_days / max(half_life_days, 1e-6))


def final_score(relevance: float, importance: int, recency_value: float, weights: Weights) -> float:
    return (
        weights.relevance * relevance
        + weights.importance * (importance / 5.0)
        + weights.recency * recency_value
    )
