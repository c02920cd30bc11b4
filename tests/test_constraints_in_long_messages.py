"""A rule said in the middle of a long message still constrains every reply it bears on.

From the probe set ``bench/truth/probes/a-en.jsonl`` (pe-constraint-007): "ok so a few things
about me: I'm training for a half marathon, I work nights at a hotel, and please never recommend
Starbucks, I boycott them" was stored as a constraint, but its topics were read off the whole
message (running, nights), so a coffee request did not get it. The Chinese twin was not even
stored as one: "别给我推荐星巴克" is a request by its form and was dropped with the questions of a
mixed message. Through the chat service, on SQLite and PostgreSQL; the rules alone beside it.
"""
from __future__ import annotations

import pytest

from bench.truth.runner import mentions, suggestions_part
from memory_core.text.constraints import bears_on, constraint_kind
from memory_core.text.intent import is_question, statement_part
from tests.test_truth_over_time import START, User
from tests.conftest import backend_engine_fixture

LONG = {
    "en": ("ok so a few things about me: I'm training for a half marathon, I work nights at a hotel, and please "
           "never recommend Starbucks, I boycott them", "where can I grab a coffee near kings cross before my shift"),
    "zh": ("跟你说几件事 我在练半马 上夜班 还有以后别给我推荐星巴克 我抵制它", "附近哪里能买杯咖啡 推荐一下"),
}


engine = backend_engine_fixture("long-rules", START)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_rule_inside_a_long_message_reaches_the_request_it_bears_on(engine, lang: str) -> None:  # type: ignore[no-untyped-def]
    message, request = LONG[lang]
    assert constraint_kind(message) == "instruction" and bears_on(message, request)
    user = User(engine)
    user.says(message)
    user.says(request, days=30)
    assert [c.content for c in user.last_info.constraints] == [message]
    assert "Starbucks" in user.last_info.constraint_block or "星巴克" in user.last_info.constraint_block
    # the reply may name the rule it keeps, never offer the place (judged as bench.truth judges it)
    assert not mentions(suggestions_part(user.last_reply), "starbucks" if lang == "en" else "星巴克")


@pytest.mark.parametrize("text, asks", [("跟你说几件事 我下个月搬家", False), ("我想跟你聊几句", False), ("你说几点出发好", True),
                                         ("这周你问几次了", True)])
def test_a_few_things_to_tell_is_no_question(text: str, asks: bool) -> None:
    """"跟你说几件事" had made the whole unpunctuated message a question, and nothing of it was stored."""
    assert is_question(text) is asks
    assert (statement_part(text) == "") is asks


@pytest.mark.parametrize("text", ["why do you never recommend Starbucks?", "你为什么从来不推荐星巴克"])
def test_a_question_about_a_rule_states_none(text: str) -> None:
    assert constraint_kind(text) is None


def test_the_rest_of_a_message_never_narrows_a_rule_it_names_a_topic_for() -> None:
    # the allergy names its topic (food): a hike is not what it bears on, however long the message
    allergy = "I'm training for a marathon, I work nights, and I'm allergic to peanuts"
    assert constraint_kind(allergy) == "allergy"
    assert bears_on(allergy, "suggest a snack for my long run") and not bears_on(allergy, "suggest a hike near Leeds")


@pytest.mark.parametrize("text, terms", [
    ("痛风又犯了 脚趾头肿得跟馒头一样 医生让我戒海鲜戒啤酒 动物内脏也别碰", ["海鲜", "啤酒", "动物内脏"]),
    ("医生不让我吃海鲜", ["海鲜"]), ("不能喝啤酒", ["啤酒"]), ("我戒烟三年了", ["烟"]),
    ("my doctor told me to cut out beer and shellfish", ["beer", "shellfish"]), ("no more beer for me", ["beer"]),
    # no rule in these
    ("我的戒指丢了", []), ("少吃点甜的", []), ("I cut my finger", []),
])
def test_what_a_doctor_rules_out_is_left_out_of_offline_suggestions(text: str, terms: list[str]) -> None:
    """From c-zh (rz-constraint-007): "医生让我戒海鲜戒啤酒" named nothing the offline reply's
    catalogue left out; only "戒了X" and "不吃X" did."""
    from memory_core.llm.offline import extract_avoidances

    assert [a.term for a in extract_avoidances([text])] == terms


def test_the_offline_reply_leaves_out_what_the_doctor_ruled_out(engine) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says("my doctor told me to cut out beer and shellfish, gout again")
    user.says("suggest some food and drinks for a bbq on friday", days=20)
    assert "cut out beer" in user.last_info.constraint_block
    assert not mentions(suggestions_part(user.last_reply), "beer")


def test_the_judge_reads_a_repeated_rule_as_no_suggestion() -> None:
    """bench.truth's judge: a reply sentence that repeats the rule names the thing to keep it out."""
    reply = "（离线模式）痛风又犯了 医生让你戒海鲜戒啤酒 动物内脏也别碰（2025-01-06 记下）。可以试试烤玉米、烤蘑菇。"
    assert not mentions(suggestions_part(reply), "啤酒") and mentions(suggestions_part(reply), "烤玉米")
    assert mentions(suggestions_part("周五烧烤可以来点啤酒和烤生蚝。"), "啤酒")


@pytest.mark.parametrize("text, kept", [
    ("查出来痛风了 尿酸五百多 医生让管住嘴", True), ("查出了甲状腺结节", True), ("查了下 是轻度脂肪肝", True),
    ("查一下明天北京天气", False), ("帮我查下航班", False),
])
def test_a_diagnosis_found_is_no_request_to_look_something_up(text: str, kept: bool) -> None:
    """From d-zh (sz-constraint-004): "查出来痛风了 ..." opened with 查 ("look up") and was dropped
    as a request, so the gout never reached a late-night snack request."""
    from memory_core.text.intent import statement_part

    assert (statement_part(text) == text) is kept


def test_a_diagnosis_reaches_the_request_it_bears_on(engine) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says("查出来痛风了 尿酸五百多 医生让管住嘴")
    user.says("脚踝这两天好多了", days=40)
    user.says("今晚加完班想吃点夜宵 推荐点啥", days=15)
    assert any("痛风" in c.content for c in user.last_info.constraints)


@pytest.mark.parametrize("fear, later, request_", [
    ("i've been terrified of dogs since one bit me when i was 6, like crossing-the-street terrified",
     "just moved to portland for work, dont know anyone here yet", "how can i meet people and make friends in a new city"),
    ("我特别怕狗 小时候被咬过 现在见到都绕道走", "刚搬来杭州 一个人都不认识", "怎么在新城市交朋友 有啥建议"),
])
def test_a_fear_reaches_a_request_about_what_to_do(engine, fear: str, later: str, request_: str) -> None:  # type: ignore[no-untyped-def]
    # probe set h-en: a fear of dogs was kept to pet questions, so "make friends" (dog parks, dog
    # walking groups) got no word of it
    user = User(engine)
    user.says(fear)
    user.says(later, days=10)
    user.says(request_, days=5)
    assert fear in [c.content for c in user.last_info.constraints]


def test_the_judge_reads_a_quoted_cannot_as_no_suggestion() -> None:
    # the offline reply quotes the rule ("Keep in mind: i can't eat mushrooms ..."): it names the thing to keep it out
    reply = ('(Offline mode) No language model is connected. Keep in mind: "i can\'t eat mushrooms, they make you '
             'throw up." Try a margherita with basil.')
    assert not mentions(suggestions_part(reply), "mushroom")
    assert mentions(suggestions_part("Try a mushroom and olive pizza tonight."), "mushroom")
