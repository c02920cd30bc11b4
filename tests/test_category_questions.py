"""A question that names a category finds the memory that names a member of it.

Found on probe set g-zh (read in the twelfth session): "填保险要写既往病史 我有啥基础病来着" found
nothing although "我有哮喘 从小就有" was stored, and "我忌口的是啥来着" found nothing although the
user had answered "有什么忌口吗？" with "海鲜 一点都不行": the question names the category
(基础病, 忌口, siblings), the memory a member (哮喘, 海鲜, only child), and neither the keyword leg
nor the relevance threshold's word coverage saw the link. Health, diet and siblings are now
slots of ``memory_core/text/expansion.py`` (keyword words only, no conflict slot), asked only in
the first person: "the most common chronic diseases in the world" is not about the user.
Through the chat service on SQLite and PostgreSQL, in Chinese and English.
"""
from __future__ import annotations

import pytest

from memory_core.text.expansion import slots_asked
from tests.conftest import backend_engine_fixture
from tests.test_truth_over_time import START, User

engine = backend_engine_fixture("category-questions", START)


@pytest.mark.parametrize("query, slots", [
    ("填保险要写既往病史 我有啥基础病来着", ["health"]), ("what medical conditions do I have", ["health"]),
    ("我忌口的是啥来着", ["diet"]), ("any food allergies I should mention? for my wedding menu", ["diet"]),
    ("我有没有兄弟姐妹", ["siblings"]), ("do I have any siblings?", ["siblings"]),
    # about the world, not the user
    ("what are the most common chronic diseases in the world?", []), ("兄弟姐妹之间怎么相处", []),
])
def test_category_slots_are_asked_in_the_first_person(query: str, slots: list[str]) -> None:
    assert slots_asked(query) == slots


@pytest.mark.parametrize("fact, assistant, query, value", [
    ("跟你说一下 我有哮喘 从小就有 包里常年揣着喷雾", None, "填保险要写既往病史 我有啥基础病来着", "哮喘"),
    ("fun fact I've had type 1 diabetes since I was nine, the pump is my best friend", None,
     "filling in the insurance form, what medical conditions do I have", "diabetes"),
    ("海鲜 一点都不行 吃了就起疹子", "有什么忌口吗？我帮你排一下菜单", "我忌口的是啥来着 要跟婚宴那边说", "海鲜"),
    ("being an only child means mum calls me every single day lol", None, "do I have any siblings?", "only child"),
])
def test_a_category_question_finds_its_member(engine, fact: str, assistant: str | None, query: str,  # type: ignore[no-untyped-def]
                                              value: str) -> None:
    user = User(engine)
    user.says(fact, assistant=assistant)
    user.says("推荐几本适合通勤看的书" if "\u4e00" <= query[0] <= "\u9fff" else "recommend a podcast for the commute",
              days=30)
    user.says(query, days=200)
    assert user.last_info.used and value in user.last_info.used[0].content


@pytest.mark.parametrize("query", ["what are the most common chronic diseases in the world?", "世界上最常见的慢性病有哪些"])
def test_a_world_question_about_a_category_recalls_nothing(engine, query: str) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says("I have had asthma since childhood")
    user.says("我有高血压 一直在吃药", days=3)
    user.says(query, days=20)
    assert not user.last_info.used


@pytest.mark.parametrize("query", ["on what conditions can I get a refund", "under what conditions do I qualify for a mortgage",
                                   "give me a list of dietary fiber foods"])
def test_conditions_of_a_contract_are_no_health_question(query: str) -> None:
    assert slots_asked(query) == []
