"""Changes people announce without the words the slot rules know: a first day in a new job,
switching carrier, trading a car in, cutting out coffee, 换手机了, 戒烟了, 改去成都了, 电动车被偷了.

From two probe sets helper sessions wrote without reading the rules (``bench/truth/probes``),
where most such changes left the old value current; the examples here are new. Each change
replaces the old memory through the chat service (Chinese and English, SQLite and PostgreSQL),
and the same words about someone else, or as a wish, replace nothing.
"""
from __future__ import annotations

import pytest

from memory_core.llm.offline.slots import supersedes_text
from tests.test_not_own_facts import first
from tests.test_truth_over_time import START, User
from tests.conftest import backend_engine_fixture

CHANGES = [
    ("I work as a paralegal at a small firm in Croydon",
     "today was my first day working as a junior solicitor at Hartley & Cole, nervous but thrilled",
     "where do I work now?", "solicitor", "paralegal"),
    ("I'm with Verizon, the bill is way too high", "switched to T-Mobile last week, same coverage for less",
     "which carrier am I on?", "T-Mobile", "Verizon"),
    ("I drink about five coffees a day, it's a problem", "I've cut out coffee completely, two weeks now",
     "how much coffee do I drink?", "cut out", "five coffees"),
    ("my car is a 2015 Ford Fiesta", "traded the fiesta in for a Kia Niro last weekend!", "what car do I have?",
     "Niro", "2015"),
    ("我用的手机是华为P30 用了四年了", "换手机了 入了台小米14 续航很顶", "我现在用什么手机", "小米14", "P30"),
    ("我每天都要抽一包烟", "我戒烟了 三个月没碰了 咳嗽也少多了", "我还抽烟吗", "戒烟", "一包烟"),
    ("国庆打算去云南 大理丽江", "云南机票太贵了 改去成都了 高铁票买好了", "我国庆去哪玩", "成都", "丽江"),
    ("我有辆电动车 每天骑去公司", "电动车被偷了 现在只能坐公交", "我还有电动车吗", "被偷", "每天骑"),
]


engine = backend_engine_fixture("plain-changes", START)


@pytest.mark.parametrize("old, new, query, new_value, old_value", CHANGES)
def test_a_change_said_plainly_replaces_the_old_value(engine, old: str, new: str, query: str,  # type: ignore[no-untyped-def]
                                                      new_value: str, old_value: str) -> None:
    user = User(engine)
    user.says(old)
    assert user.says(new, days=40).replaced_contents == [old]
    # ranked first (the order; "我国庆去哪玩" asks 国庆, which the new memory does not say: a change
    # is not keyed with the text it replaced, see conflict_rules.inherited_key)
    assert new_value in first(user, query)
    assert not [m for m in user.active() if old_value in m]


THROUGH_THE_CHAT = {
    ("I have a Honda Civic", "my sister sold her car last week"),
    ("我用的手机是华为P30 用了四年了", "好想换个手机啊 这个太卡了"),
    ("我有痛风 尿酸一直六百多 上个月还发作了一次", "换了个新工作 同事都挺能喝的"),
}


@pytest.mark.parametrize("old, new", [
    ("I have a Honda Civic", "my sister sold her car last week"),
    ("I drink about five coffees a day, it's a problem", "my flatmate cut out coffee completely"),
    ("我每天都要抽一包烟", "我同事戒烟了 说感觉好多了"),
    ("我用的手机是华为P30 用了四年了", "好想换个手机啊 这个太卡了"),
    ("I'm with Verizon, the bill is way too high", "my new phone plan has unlimited texts"),
    ("my phone is a Pixel 7", "I also got a new phone case, bright orange"),
    # a change word swaps no look-alike: 工作 is not 发作, and the gout stays a constraint
    ("我有痛风 尿酸一直六百多 上个月还发作了一次", "换了个新工作 同事都挺能喝的"),
    ("I tried a new oat milk latte at the café and loved it", "I tried a new variety of matcha cake at the tea party"),
])
def test_someone_elses_change_or_a_wish_replaces_nothing(engine, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    assert not supersedes_text(new, old)
    if (old, new) not in THROUGH_THE_CHAT:
        return  # the rule alone; the chat path is played for one of each kind (the suite's time)
    user = User(engine)
    user.says(old)
    assert user.says(new, days=10).replaced_contents == []
    assert old in user.active()


@pytest.mark.parametrize("old, new", [
    # from the review of a first version, which replaced each (a constraint is lifted only by its own words)
    ("I'm allergic to gluten", "I switched to gluten-free pasta"), ("I'm allergic to shrimp", "Switched to tofu instead of shrimp"),
    ("我对花生过敏", "我把花生酱换成葵花籽酱了"), ("我对麸质过敏", "换成无麸质面包了"),
    ("我每天吃降压药", "上周 我爸 停药了"), ("我在阿里上班", "前天 我姐 辞职了 去了腾讯"),
    ("I smoke a pack a day", "I found a smoke-free bar"), ("I drive a Honda Civic", "My scooter was stolen"),
    ("我开车上班", "我的驾照丢了"), ("I'm on giffgaff", "Vodafone raised the price to £25"),
    ("I'm with Vodafone, 20GB plan", "I got a new phone, still on Vodafone"),
    ("I work as an accountant at KPMG", "First day as a volunteer at the shelter"),
])
def test_reviewed_false_replacements(old: str, new: str) -> None:
    assert not supersedes_text(new, old)
