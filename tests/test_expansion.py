"""Slot-aware keyword expansion: questions about home, work, phone or e-mail also search the
words that state them, in the keyword leg only."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory_core import FixedClock, RetrievalOptions
from memory_core.text.expansion import slot_keywords

NOW = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)


@pytest.mark.parametrize(("query", "must"), [
    ("where do I live?", "moved"),
    ("Where are we living these days", "moved"),
    ("what's my address", "address"),
    ("我现在住在哪里？", "搬"),
    ("where do I work now?", "joined"),
    ("我在哪里上班", "入职"),
    ("what is my phone number", "电话"),
    ("我的邮箱是什么", "email"),
    ("what car do I drive, need it for the insurance form", "drive"), ("我开的什么车来着 保险要续了", "车"),
    ("which city am i living in rn", "moved"), ("我现在住哪个区", "搬"),
])
def test_slot_questions_get_their_words(query: str, must: str) -> None:
    assert must in slot_keywords(query).split()


@pytest.mark.parametrize("query", ["who do I play badminton with?", "我对什么过敏", "what did I eat in Lisbon", ""])
def test_other_questions_get_nothing(query: str) -> None:
    assert slot_keywords(query) == ""


def test_where_do_i_live_finds_the_move_by_keyword_too(make_engine) -> None:
    """The move shares no word with the question; with the expansion the keyword leg finds it,
    so the answer no longer rests on a near-tie of cosines with unrelated statements."""
    engine = make_engine(clock=FixedClock(NOW))
    moved = engine.add("u1", "I moved to Shanghai last month", at=NOW - timedelta(days=1)).memory_ids[0]
    for text in ("I don't eat spicy food", "I play badminton with Li Wei on Saturdays",
                 "I tried a new ramen place near the office"):
        engine.add("u1", text, at=NOW - timedelta(days=200))
    results = engine.search("u1", "where do I live?", top_k=4, options=RetrievalOptions(use_cache=False, record=False)).results
    by_id = {r.memory_id: r for r in results}
    assert by_id[moved].parts.keyword is not None  # found by the keyword leg
    assert results[0].memory_id == moved
    others = [r for r in results if r.memory_id != moved]
    assert all(r.parts.keyword is None for r in others)  # the expansion adds no stray matches here
