"""Small talk and questions about the world recall nothing (probe set ``c-en`` / ``c-zh``, tenth session).

"good morning! how's your day going" brought in "I'm vegan", "why is the sky blue? explain it like
I'm five" the user's children's ages, "一光年到底有多远啊" where the user lives: greetings, remarks
on the weather and questions whose answer is the same for anyone ask with no memory
(``intent.is_small_talk``, ``intent.general_request``). The same words about the user still recall
("why is my knee swelling", "我家到公司有多远", "good morning, I start my new job today!").
Through the chat on SQLite and PostgreSQL; the rules alone beside it.
"""
from __future__ import annotations

import pytest

from memory_core.text.intent import general_request, is_small_talk
from tests.test_truth_over_time import START, User
from tests.conftest import backend_engine_fixture

NOTHING = ["good morning! how's your day going", "how are you doing today", "早上好呀 今天也要元气满满",
           "今天好冷啊 冻成狗了"]
WORLD = ["what's the actual difference between a crocodile and an alligator", "why is the sky blue? explain it like I'm five",
         "how does a heat pump work", "一光年到底有多远啊", "什么是通货膨胀"]
MINE = ["why is my knee swelling", "why do I get headaches", "我家到公司有多远", "我闺女学的那个东西是什么意思", "good morning, I start my new job today!",
        "今天好冷 我感冒了", "what's the difference between my two insurance plans", "how does my pension work"]


engine = backend_engine_fixture("world-questions", START)


@pytest.mark.parametrize("text", NOTHING)
def test_greetings_and_weather_are_small_talk(text: str) -> None:
    assert is_small_talk(text) and not general_request(text)


@pytest.mark.parametrize("text", WORLD)
def test_a_question_about_the_world_is_general(text: str) -> None:
    assert general_request(text) and not is_small_talk(text)


@pytest.mark.parametrize("text", MINE)
def test_the_same_words_about_the_user_are_neither(text: str) -> None:
    assert not general_request(text) and not is_small_talk(text)


@pytest.mark.parametrize("facts, query", [
    (["I'm vegan, have been since college", "two kids, Ada is 4 and Sol is 2"], "good morning! how's your day going"),
    (["two kids, Ada is 4 and Sol is 2", "we have an African grey parrot named Kiwi"],
     "why is the sky blue? explain it like I'm five"),
    (["我住在武汉光谷 离华科很近", "我是山东潍坊人"], "一光年到底有多远啊"),
    (["我是山东潍坊人", "我养了两只仓鼠"], "今天好冷啊 冻成狗了"),
])
def test_nothing_is_recalled_for_them(engine, facts: list[str], query: str) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    for fact in facts:
        user.says(fact)
    user.says(query, days=5)
    assert user.last_info.used == [] and user.last_info.constraints == []
