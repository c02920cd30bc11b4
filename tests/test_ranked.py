"""Absolute relevance worked out on demand (memory_core/ranked.py) gives what a full pass gives,
and only for the results a response can show."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest

from memory_core.ranked import RankedResults
from memory_core.records import MemoryRecord
from memory_core.relevance import DEFAULT_MODEL, coverage, query_terms
from memory_core.types import MemoryStatus, MemoryType, ScoreParts, SearchResult

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
TEXTS = [
    "我对芒果过敏，吃了会起疹子。", "I live in Porto, near the river.", "我住在杭州西湖边。", "My sister is a nurse in Berlin.",
    "周末去爬山了，很开心。", "I'm allergic to peanuts.", "我的电话换成了新号。", "We adopted a beagle named Biscuit.",
]


def _record(i: int, text: str) -> MemoryRecord:
    return MemoryRecord(
        memory_id=f"m{i}", user_id="u", session_id=None, content=text, summary="", importance=3,
        memory_type=MemoryType.DECLARATIVE, entities=[], meta={}, status=MemoryStatus.ACTIVE, created_at=NOW,
        updated_at=NOW, expires_at=None, expired_at=None, source=[], access_count=0, last_accessed_at=None,
        superseded_by=None, vector_written=True, content_hash="h" * 64)


def _ranked(query: str, cosines: list[float], calls: list[str]) -> tuple[RankedResults[float], list[SearchResult]]:
    """The lazy ranking and, beside it, every result with its absolute relevance filled eagerly."""
    terms = query_terms(query)

    def absolute(cosine: float, record: MemoryRecord) -> float:
        calls.append(record.memory_id)
        return round(DEFAULT_MODEL(cosine, coverage(terms, record.content), "zh"), 6)

    items = []
    for i, (text, cosine) in enumerate(zip(TEXTS, cosines)):
        record = _record(i, text)
        result = SearchResult(memory_id=record.memory_id, user_id="u", content=text, memory_type=record.memory_type,
                              importance=3, created_at=NOW, score=1.0 - i / 10,
                              parts=ScoreParts(relevance=1.0 - i / 10, importance=0.6, recency=1.0, dense=cosine))
        items.append((result, cosine, record))
    eager = [replace(r, parts=replace(r.parts, absolute=round(DEFAULT_MODEL(c, coverage(terms, rec.content), "zh"), 6)))
             for r, c, rec in items]
    return RankedResults(items, absolute), eager


@pytest.mark.parametrize("query", ["我对什么过敏？", "Where do I live?"])
@pytest.mark.parametrize("threshold", [0.0, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("k", [1, 3, 20])
def test_top_is_the_eager_filter_then_cut(query: str, threshold: float, k: int) -> None:
    calls: list[str] = []
    ranked, eager = _ranked(query, [0.93, 0.81, 0.88, 0.79, 0.85, 0.90, 0.84, 0.80], calls)
    assert ranked.top(threshold, k) == [r for r in eager if (r.parts.absolute or 0.0) >= threshold][:k]
    assert len(calls) == len(set(calls))  # each memory's relevance worked out once at most


def test_only_the_shown_results_are_worked_out_and_a_looked_up_one_is_the_same_object() -> None:
    calls: list[str] = []
    ranked, eager = _ranked("我对什么过敏？", [0.93, 0.81, 0.88, 0.79, 0.85, 0.90, 0.84, 0.80], calls)
    shown = ranked.top(0.0, 2)  # no threshold: the first two pass, nothing after them is needed
    assert [r.memory_id for r in shown] == ["m0", "m1"] and calls == ["m0", "m1"]
    constraint = ranked.get("m5")  # a constraint further down the ranking
    assert constraint == eager[5] and calls == ["m0", "m1", "m5"]
    assert ranked.get("m5") is constraint and ranked.get("m0") is shown[0] and calls == ["m0", "m1", "m5"]
    assert ranked.get("not-scored") is None and len(ranked) == len(TEXTS)


def test_a_threshold_no_result_reaches_works_through_all_and_returns_none() -> None:
    calls: list[str] = []
    ranked, _eager = _ranked("Where do I live?", [0.5] * len(TEXTS), calls)
    assert ranked.top(0.99, 5) == [] and sorted(calls) == sorted(f"m{i}" for i in range(len(TEXTS)))
