"""A lasting fact told in passing is kept, not rated a passing remark that expires.

Found on probe set e-en (held out until read): "I'm O negative, so the blood bank keeps texting
me", "I wear a US 11 wide" and "wifi password at the bach is ..., writing it here so I don't lose
it" were rated 2 and had expired when the user asked, most of a year on; "I've just started at
Deloitte in Manchester, any tips for surviving the first month?" was rated a passing state said
only as the reason for a question, and never stored. A blood group said as what one is, a size
one wears, a new job told as news, a code the user keeps here and anything the user asks to be
kept ("save this", 帮我记一下) are lasting (importance 4), in both languages.

Through the chat service on SQLite and PostgreSQL, in Chinese and English; the rater alone for the rest.
"""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memory_core.llm.offline.importance import importance_of
from tests.conftest import backend_engine_fixture
from tests.test_truth_over_time import START, User

NOW = datetime(2025, 3, 1, tzinfo=timezone.utc)
engine = backend_engine_fixture("lasting-facts", START)


@pytest.mark.parametrize("text", [
    "I'm A negative, the blood bank loves me", "I wear a UK 9, wide fit", "my ring size is N",
    "garage door code is 5521, writing it here so I don't lose it", "save this: the locker is 114",
    "just started at Accenture in Leeds", "我穿39码的鞋 脚背高", "鞋子一直穿四十一码",
    "帮我记一下 家里wifi密码是xiaomao2024", "我是B型血",
])
def test_a_lasting_fact_told_in_passing_is_kept(text: str) -> None:
    assert importance_of(text, NOW) >= 4


@pytest.mark.parametrize("text", [
    "I started at 9am today, long shift", "I don't remember this at all", "I'm a bit negative about it",
    "remember that time we went to Rome", "今天穿了双新鞋 有点磨脚",
    # found in review: chatter that looked like a blood group, a size, a code or a request to keep
    "I'm a positive person", "I'm A+ at procrastinating", "I wear 3 layers in winter",
    "the door code on the Airbnb was annoying", "这双鞋尺码偏大", "今天穿了双39码的鞋 有点挤", "老师让我们记住这首诗",
])
def test_a_passing_remark_stays_passing(text: str) -> None:
    assert importance_of(text, NOW) <= 3


@pytest.mark.parametrize("fact, query, value", [
    ("I'm A negative, so the blood bank keeps texting me", "the donor form wants my blood group, what is it", "A negative"),
    ("I wear a UK 9 wide, shoe shopping is a nightmare", "buying trail shoes online, what size should I get?", "UK 9"),
    ("我穿39码的鞋 脚背高 买鞋很难", "网上买运动鞋 我该买多大码", "39码"),
    ("帮我记一下 家里wifi密码是xiaomao2024", "家里wifi密码多少来着", "xiaomao2024"),
    # a habit lasts too (it was rated a passing remark, gone in 180 days)
    ("I smoke about a pack a day, have for years", "do I smoke? filling in a health form", "pack a day"),
    ("我烟瘾挺大的 一天一包 戒过两次都没戒掉", "体检表问我抽不抽烟 我抽吗", "一天一包"),
])
def test_a_lasting_fact_is_still_recalled_most_of_a_year_on(engine, fact: str, query: str, value: str) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says(fact)
    user.says("ugh it's been raining all week" if fact.isascii() else "这周一直下雨 烦死了", days=30)
    user.says("watched a film last night, pretty good" if fact.isascii() else "昨晚看了个电影 还行", days=270)
    assert value in user.top(query)


@pytest.mark.parametrize("text, least", [
    # tobacco and drink last and a doctor or a form asks about them; a routine lasts like a hobby
    ("I smoke about a pack a day", 4), ("I vape, trying to cut down", 4), ("I'm a social smoker", 4),
    ("我烟瘾挺大的 一天一包", 4), ("我不抽烟", 4),
    # a loan runs for years (c-zh rz-negation-006: rated 2, it had expired before it was paid off)
    ("房贷还剩二十万没还完 每个月还四千多", 4), ("our mortgage is 1800 a month", 4),
    ("I run every morning before work", 3), ("I drink 3 coffees a day", 3), ("我每周游泳三次", 3), ("我每天晨跑五公里", 3),
])
def test_a_habit_is_no_passing_remark(text: str, least: int) -> None:
    assert importance_of(text, NOW) >= least


@pytest.mark.parametrize("text", ["I took a day off", "a day at the beach was nice", "等了一天快递", "一周的工作总算做完了", "what a week, honestly",
                                  # found in review: another's routine, a shop's hours, meat smoked
                                  "The pharmacy is open daily", "she texts me 5 times a day lol", "the bus comes twice a day here",
                                  "每天都有新闻说房价跌了", "I smoke brisket every summer for the neighbours",
                                  "mortgage rates are crazy right now", "房贷利率又降了"])
def test_a_day_named_is_no_habit(text: str) -> None:
    assert importance_of(text, NOW) <= 2


def test_a_new_job_said_with_a_question_is_stored(engine) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    remembered = user.says("I've just started at Accenture in Leeds, any tips for surviving the first month?")
    assert any("Accenture" in text for text in remembered.contents)
    remembered = user.says("刚入职字节跳动 第一个月有什么要注意的吗", days=3)
    assert any("字节跳动" in text for text in remembered.contents)


@pytest.mark.parametrize("text, kept", [
    ("帮我记一下 家里wifi密码是xiaomao2024", "xiaomao2024"), ("帮我存一下 储物柜114号", "114"),
    ("can you remember that my locker code is 114", "114"), ("记住 我对青霉素过敏", "青霉素"),
])
def test_what_the_user_asks_to_keep_is_stored(text: str, kept: str) -> None:
    from memory_core.text.intent import statement_part

    assert kept in statement_part(text)


@pytest.mark.parametrize("text", ["帮我记一下", "can you remember what my locker code is?", "帮我查一下 我的快递到哪了",
                                  "帮我记一下 车停哪了", "can you remember that restaurant from last week"])
def test_a_request_with_nothing_to_keep_stores_nothing(text: str) -> None:
    from memory_core.text.intent import statement_part

    assert statement_part(text) == ""
