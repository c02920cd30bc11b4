"""The fused relevance and the final score: priors reorder near-ties, never a clear rank gap."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory_core.config import Settings
from memory_core.scoring import Weights, final_score, recency, rrf_sum

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def _weights(s: Settings) -> Weights:
    return Weights(s.weight_relevance, s.weight_importance, s.weight_recency, s.recency_half_life_days)


def _score(rank: int, importance: int, age_days: float, s: Settings) -> float:
    """Final score of a memory found at ``rank`` by every leg, relative to a first-rank hit."""
    legs = 3
    best = rrf_sum([0] * legs, s.rrf_k)
    relevance = rrf_sum([rank] * legs, s.rrf_k) / best
    return final_score(relevance, importance, recency(NOW - timedelta(days=age_days), NOW, s.recency_half_life_days),
                       _weights(s))


def test_default_fusion_keeps_a_clear_rank_gap_ahead_of_the_priors() -> None:
    """A first-rank memory that is unimportant and a year old still beats the tenth-rank one that is
    important and from today: importance and recency must not reshuffle the top of a ranking
    (with the classic k=60 they did: LoCoMo NDCG@10 .476 against .532 at k=5)."""
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert _score(0, 1, 365, s) > _score(9, 5, 0, s)
    # ... while between neighbours in rank the priors do decide.
    assert _score(1, 5, 0, s) > _score(0, 1, 365, s)


def test_the_classic_constant_lets_priors_overturn_the_top() -> None:
    """Why the default moved: the same pair ranks the other way round with k=60."""
    s = Settings(_env_file=None, rrf_k=60)  # type: ignore[call-arg]
    assert _score(9, 5, 0, s) > _score(0, 1, 365, s)


def test_rrf_k_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RRF_K", "25")
    assert Settings(_env_file=None).rrf_k == 25  # type: ignore[call-arg]
    monkeypatch.setenv("RRF_K", "-1")
    with pytest.raises(ValueError):
        Settings(_env_file=None)  # type: ignore[call-arg]
