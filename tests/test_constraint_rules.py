"""Which requests a constraint bears on (memory_core/text/constraints.py), and the query-only test
a search uses to skip reading constraints: when ``may_bear_on`` says no, ``bears_on`` says no for
every constraint."""
from __future__ import annotations

import pytest

from memory_core.text.constraints import bears_on, constraint_kind, may_bear_on

CONSTRAINTS = [
    "我对芒果过敏", "I'm allergic to peanuts.", "我吃素", "I'm vegetarian now.", "我有糖尿病",
    "Never call me before 9am.", "我怕狗", "I can't stand cilantro.", "我对青霉素过敏",
]
REQUESTS = [
    "给我推荐点好吃的零食", "Suggest a snack for the office party", "我感冒了吃什么药好？",
    "What should I take for my sore throat?", "推荐个周末活动", "Can you book me a table for dinner?",
]
NOT_REQUESTS = [
    "你好", "hello there", "我住在哪里？", "讲个笑话", "What's 17 times 23?", "What is the capital of France?",
    "谢谢，晚安", "Tell me a joke",
]


def test_the_constraints_used_here_are_constraints() -> None:
    assert all(constraint_kind(c) is not None for c in CONSTRAINTS)


@pytest.mark.parametrize("query", REQUESTS)
def test_a_request_with_a_topic_may_bear_and_some_constraint_does(query: str) -> None:
    assert may_bear_on(query)
    assert any(bears_on(c, query) for c in CONSTRAINTS)


@pytest.mark.parametrize("query", NOT_REQUESTS)
def test_small_talk_and_topicless_questions_bear_on_no_constraint(query: str) -> None:
    """Chinese and English: the search skips its constraint read exactly where no constraint could pass."""
    assert not may_bear_on(query)
    assert not any(bears_on(c, query) for c in CONSTRAINTS)


@pytest.mark.parametrize("query", REQUESTS + NOT_REQUESTS)
def test_may_bear_on_is_implied_by_every_constraint_that_bears(query: str) -> None:
    for constraint in CONSTRAINTS:
        assert not bears_on(constraint, query) or may_bear_on(query)
