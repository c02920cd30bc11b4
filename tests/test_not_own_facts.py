"""What is not the user's own fact stays below it, and what adds nothing is not a second memory.

Written from two probe sets that helper sessions wrote without reading the engine's rules
(``bench/truth/probes``): a sister's new job answered "what's my job?", a father's diabetes
filled the user's medical form, "要是我老家在海边就好了" answered "我老家哪里的", "A 还是 B"
questions and "新年快乐呀" were stored, "hey how's it going" recalled the user's loft plans, and
"fyi I'm left-handed" became a second memory. Through the chat service, in Chinese and English,
on SQLite and PostgreSQL; the examples here are new, not the probes' own.
"""
from __future__ import annotations

import pytest

from memory_core.llm.offline.slots import supersedes_text
from memory_core.text.intent import statement_part
from memory_core.text.subject import subject_of

from tests.test_truth_over_time import START, User
from tests.conftest import backend_engine_fixture


def first(user: User, query: str) -> str:
    """What ranks first for ``query`` (the order under test, whatever the chat's threshold keeps)."""
    found = user.engine.search(user.id, query, top_k=3, min_relevance=0.0).results
    return found[0].content if found else ""


engine = backend_engine_fixture("own-facts", START)


# ---- another person's fact does not answer a question about the user ----------------------------
@pytest.mark.parametrize("mine, theirs, asked, own_value, their_value, about_them", [
    ("I teach maths at a secondary school in Leeds", "my brother just started as a nurse at St James's hospital",
     "what's my job these days?", "maths", "nurse", "what does my brother do for work?"),
    ("我在一家银行做柜员 每天数钱", "我表姐刚去了字节跳动当产品经理 工资翻倍",
     "我现在是做什么工作的", "柜员", "产品经理", "我表姐在哪上班"),
])
def test_another_persons_fact_ranks_below_the_users_own(engine, mine: str, theirs: str, asked: str,  # type: ignore[no-untyped-def]
                                                        own_value: str, their_value: str, about_them: str) -> None:
    user = User(engine)
    user.says(mine)
    user.says(theirs, days=30)
    assert own_value in first(user, asked)
    assert their_value in first(user, about_them)  # asked about them, their fact is the answer
    assert any(their_value in m for m in user.active()) and any(own_value in m for m in user.active())


@pytest.mark.parametrize("condition, relative, asked, own_value", [
    ("I have type 1 diabetes, diagnosed when I was twelve", "my dad's asthma is acting up again this winter",
     "the clinic form asks about chronic conditions, what should I put?", "diabetes"),
    ("我有偏头痛 一累就犯", "我爸高血压又犯了 愁人", "体检表上问有什么慢性病 我该写什么", "偏头痛"),
])
def test_a_relatives_condition_does_not_fill_the_users_form(engine, condition: str, relative: str,  # type: ignore[no-untyped-def]
                                                            asked: str, own_value: str) -> None:
    user = User(engine)
    user.says(condition)
    user.says(relative, days=40)
    assert own_value in first(user, asked)


# ---- a wish or a what-if is not how things are -------------------------------------------------
@pytest.mark.parametrize("fact, wish, asked, value", [
    ("I live in Bristol, near the harbour", "honestly I wish I lived by the sea in Cornwall", "where do I live?",
     "Bristol"),
    ("我老家是山西大同的", "要是我老家在厦门就好了 天天看海", "我老家是哪里的", "大同"),
    ("I drive a 2016 Toyota Yaris", "if someone gave me a Tesla I'd drive it every day", "what car do I drive?",
     "Yaris"),
    ("我有一个弟弟 在读大学", "好想要个姐姐啊 能带我逛街", "我有兄弟姐妹吗", "弟弟"),
    # a target is the amount wanted, not the amount there is
    ("我现在体重65公斤", "我想减到60公斤 夏天前", "我现在体重多少", "65"),
    ("我血压140 在吃药", "希望血压能降到120", "我血压多少", "140"),
    ("I weigh 80kg right now", "I want to get down to 75kg by summer", "how much do I weigh?", "80"),
    ("my blood pressure is 140 over 90", "hoping to get my blood pressure down to 120 with the new diet",
     "what's my blood pressure?", "140"),
])
def test_a_wish_neither_replaces_nor_outranks_the_fact(engine, fact: str, wish: str, asked: str,  # type: ignore[no-untyped-def]
                                                       value: str) -> None:
    user = User(engine)
    user.says(fact)
    remembered = user.says(wish, days=20)
    assert remembered.replaced_contents == []
    assert value in first(user, asked)
    assert fact in user.active()


@pytest.mark.parametrize("fact, asked_if, asked, value, supposed", [
    ("我在北京朝阳租房 双井那边", "要是搬去天津住 每天坐高铁来北京上班 现实吗", "我现在住哪个区", "朝阳", "天津"),
    ("I rent a flat in Leeds, near the station", "if I moved to York, commuting to Leeds every day, would that be crazy?",
     "where do I live?", "Leeds", "York"),
    # found on probe set i-en: a supposition asked without its question mark was stored, and outranked the fact
    ("I rent a flat in Bristol, near the harbour", "if I moved to Bath would rent be any lower", "where do I live?",
     "Bristol", "Bath"),
    ("my salary is 48k before tax", "if I got the raise to 55k how much would I actually take home", "what's my salary?",
     "48k", "55k"),
    ("我月薪一万二 税前", "要是涨到一万五 到手能有多少", "我月薪多少", "一万二", "一万五"),
])
def test_a_question_about_a_what_if_stores_none_of_it(engine, fact: str, asked_if: str, asked: str,  # type: ignore[no-untyped-def]
                                                      value: str, supposed: str) -> None:
    # every clause between the condition and the question is supposed: "每天坐高铁来北京上班" (a
    # routine, rated to last) was kept from it as a fact once
    assert statement_part(asked_if) == ""
    user = User(engine)
    user.says(fact)
    remembered = user.says(asked_if, days=30)
    assert remembered.created == [] and user.active() == [fact]
    assert value in first(user, asked) and supposed not in first(user, asked)


@pytest.mark.parametrize("text, fact", [
    ("If it matters, I'm allergic to shellfish, what can I order?", "I'm allergic to shellfish"),
    ("If I remember right, my flight is at 9, when should I leave?", "my flight is at 9"),
    ("如果没记错，我是O型血，能给我爸献血吗？", "我是O型血"), ("如果方便的话，我下周要去北京出差，有什么推荐的吗", "我下周要去北京出差"),
    ("要是你不介意，我是素食者，晚饭吃什么好", "我是素食者"),
])
def test_a_hedge_before_a_fact_is_no_what_if(text: str, fact: str) -> None:
    # found in review: "if it matters" conditions the telling, not the fact
    assert statement_part(text) == fact


# ---- questions and small talk are not facts, and small talk recalls nothing ----------------------
@pytest.mark.parametrize("text", ["我的医保卡是蓝色的还是绿色的来着", "新年快乐呀", "lol ok thanks, that's all for today",
                                  "why every deadline on a friday lol", "为啥每次截止日期都在周五",
                                  "happy friday!", "周末愉快呀"])  # probe set i-en: "happy friday!" was stored
def test_either_or_questions_and_greetings_are_not_stored(engine, text: str) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says("我在杭州租房 月租四千" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else
              "we're saving up to convert the loft into a studio")
    before = user.active()
    remembered = user.says(text)
    assert remembered.created == [] and user.active() == before
    if text in ("lol ok thanks, that's all for today", "新年快乐呀", "happy friday!", "周末愉快呀"):
        assert user.last_info.used == []  # nothing recalled for small talk


def test_a_statement_with_still_is_not_an_either_or_question(engine) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    remembered = user.says("我还是喜欢吃辣 一顿不吃就难受")
    assert remembered.created and any("吃辣" in m for m in user.active())


# ---- a repeat that adds nothing is one memory; a changed value is not a repeat -------------------
@pytest.mark.parametrize("first, again, word", [
    ("I'm left-handed, so most scissors are useless to me", "fyi I'm left-handed", "left-handed"),
    ("I'm allergic to penicillin", "just so you remember: allergic to penicillin!!", "penicillin"),
    ("我是左撇子 写字吃饭都用左手", "顺便说一下 我是左撇子", "左撇子"),
])
def test_a_repeat_with_nothing_new_is_one_memory(engine, first: str, again: str, word: str) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says(first)
    user.says(again, days=25)
    holding = [m for m in user.active() if word in m]
    assert len(holding) == 1 and holding[0] != again, holding  # the stored memory, refreshed


@pytest.mark.parametrize("first, again, old_value, new_value", [
    ("my locker code at the gym is 4471", "fyi my locker code at the gym is 4417", "4471", "4417"),
    ("我的车位号是B2-118", "顺便说一下 我的车位号是B2-181", "118", "181"),
])
def test_a_changed_value_with_filler_is_not_a_repeat(engine, first: str, again: str, old_value: str,  # type: ignore[no-untyped-def]
                                                     new_value: str) -> None:
    user = User(engine)
    user.says(first)
    user.says(again, days=3)
    active = user.active()
    assert [m for m in active if new_value in m] == [again]  # stored, not folded into the old value
    assert not [m for m in active if old_value in m and new_value not in m], active  # and it replaced it



# ---- an allergy told as over, or someone else's, is said as what it is ------------------------
@pytest.mark.parametrize("said, ask, suggested", [
    ("我小时候对牛奶过敏 现在没事了", "推荐点零食", "酸奶"),
    ("I was allergic to milk as a kid but outgrew it", "can you suggest a snack for me", "yogurt"),
])
def test_an_allergy_told_as_over_rules_nothing_out(engine, said: str, ask: str, suggested: str) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says(said)
    user.says(ask, days=20)
    assert user.last_info.constraints == []
    assert suggested in user.last_reply


@pytest.mark.parametrize("said, ask, whose, not_mine", [
    ("我儿子对花生过敏 幼儿园也知道", "给儿子带什么零食去春游", "你儿子对花生过敏", "你对花生过敏"),
    ("my son is allergic to peanuts, the school knows", "what snacks should I pack for my son's school trip?",
     "your son is allergic to peanuts", "you're allergic"),
])
def test_the_reply_says_whose_allergy_rules_a_snack_out(engine, said: str, ask: str, whose: str,  # type: ignore[no-untyped-def]
                                                        not_mine: str) -> None:
    user = User(engine)
    user.says(said)
    user.says(ask, days=20)
    assert user.last_info.constraints  # the son's allergy bears on his snacks
    assert whose in user.last_reply and not_mine not in user.last_reply



@pytest.mark.parametrize("newer, older, replaces", [
    # the amount there is, said beside a goal, still replaces; a goal alone does not
    ("down to 78kg now, want to hit 75", "I weigh 82kg", True), ("体重降到63了 想减到60", "我现在体重65公斤", True),
    ("I want to get down to 75kg by summer", "I weigh 82kg", False), ("我想减到60公斤", "我现在体重65公斤", False),
    # the line is read where the number is
    ("no landline anymore, call me on [PHONE#cc22dd]", "My phone number is [PHONE#aa11bb]", True),
    ("办公室电话打不通的话，我手机是[PHONE#cc22dd]", "我的手机号是[PHONE#aa11bb]", True),
    ("call me on the office line [PHONE#cc22dd] tomorrow", "My phone number is [PHONE#aa11bb]", False),
    # a kid is the son; a nephew is not; one person's son is not another's
    ("my kid Leo started 3rd grade", "my son Leo is in 2nd grade", True),
    ("my nephew Leo started 5th grade", "my son Leo is in 2nd grade", False),
    ("老李的儿子在上海工作", "老王的儿子在北京工作", False),
    # 目前任职 holds no 前任; a restatement that signs up "as a" member is still one
    ("目前任职于字节，年薪50万", "我年薪40万", True),
    ("I signed up as a member at Planet Fitness again", "I'm a member at Planet Fitness", True),
])
def test_whose_and_which_value_a_message_gives(newer: str, older: str, replaces: bool) -> None:
    assert supersedes_text(newer, older) is replaces


@pytest.mark.parametrize("text, subject", [
    ("我目前任职于字节跳动", "self"), ("my ex job paid 50k", "self"), ("my ex moved to Boston", "rel:ex"),
    ("我前任搬去北京了", "rel:ex"), ("尤其他最近老加班", "other"), ("阿托伐他汀每晚10毫克", "self"),
    ("Tom's manager is Sarah", "of:tom:boss"), ("老王的领导是张总", "of:老王:领导"), ("张总的助理是小刘", "of:张总:助理"),
])
def test_who_a_message_is_about(text: str, subject: str) -> None:
    assert subject_of(text) == subject
