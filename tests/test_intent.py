from __future__ import annotations

import pytest

from memory_core.text.intent import is_question_or_request


@pytest.mark.parametrize("text", [
    "给我推荐点好吃的零食", "推荐几本书吧", "今天天气怎么样？", "你能帮我订机票吗", "请问现在几点了",
    "What should I eat tonight?", "Can you recommend a good movie", "Where do I live?", "What is my phone number",
    "please suggest a restaurant", "tell me a joke",
])
def test_questions_and_requests(text: str) -> None:
    assert is_question_or_request(text)


@pytest.mark.parametrize("text", [
    "我对芒果过敏", "我对芒果过敏，给我推荐点零食", "我住在北京朝阳区", "我明天要去上海出差",
    "I am allergic to peanuts", "I moved to Lisbon last month", "My sister lives in Berlin",
    "I don't eat spicy food, can you suggest something mild?", "最近在学吉他", "周末去了颐和园",
])
def test_statements_are_remembered(text: str) -> None:
    assert not is_question_or_request(text)
