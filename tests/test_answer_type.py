"""Answer-type matching: "when" questions and memories that state a time (memory_core/text/answer_type.py)."""
from __future__ import annotations

import pytest

from memory_core.text.answer_type import asks_when, states_time


@pytest.mark.parametrize("query", [
    "When did Caroline go to the support group?",
    "when is my dentist appointment",
    "So when was the last time we spoke?",
    "What year did I move to Porto?",
    "On which day did we meet?",
    "How long ago did I start running?",
    "How long has Caroline had her current group of friends for?",
    "How many months passed between Andrew adopting Toby and Buddy?",
    "我们在一起多久了？",
    "我什么时候去的杭州？",
    "你还记得我们哪天见面的吗",
])
def test_questions_that_ask_for_a_time(query: str) -> None:
    assert asks_when(query)


@pytest.mark.parametrize("query", [
    "Where did I go last weekend?",  # names a time, asks for a place
    "How did you spend the weekend?",
    "I was happy when I saw it",  # 'when' as a conjunction
    "What is Caroline's favourite book?",
    "我去杭州做什么了",
    "",
])
def test_questions_that_do_not(query: str) -> None:
    assert not asks_when(query)


@pytest.mark.parametrize(("text", "expected"), [
    ("Caroline: I went to a support group yesterday.", True),
    ("We hiked in the Alps last May", True),
    ("We met on 2023-05-07 in Lisbon", True),
    ("上周六我去了杭州", True),
    ("The support group was so powerful", False),
    ("I have been painting for years", False),  # a duration is not a time
    ("我喜欢杭州", False),
    ("", False),
])
def test_memories_that_state_a_time(text: str, expected: bool) -> None:
    assert states_time(text) is expected


def test_the_memo_is_bounded_and_keeps_answers_right(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_core.text import answer_type

    monkeypatch.setattr(answer_type, "_MEMO_MAX", 4)
    monkeypatch.setattr(answer_type, "_memo", {})
    texts = [f"Note {i}: we met yesterday" if i % 2 else f"Note {i}: nothing dated" for i in range(10)]
    first = [states_time(t) for t in texts]
    assert first == [bool(i % 2) for i in range(10)]
    assert len(answer_type._memo) <= 4
    assert [states_time(t) for t in texts] == first  # recomputed after eviction, same answers
    assert states_time("odd \ud800 surrogate yesterday") is True  # lone surrogates do not break the digest
