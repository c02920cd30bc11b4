"""A fact told again in other words leaves one memory, and that memory keeps both tellings.

Found on probe set e (``bench/truth/probes/e-*.jsonl``, held out until read): nine of its sixteen
"repeat" scenarios ended with two active memories holding one fact, because the newer telling
added or left out a detail ("Chloe's still in Edinburgh, she loves it up there" after "my sister
Chloe lives in Edinburgh, in Leith"; "再介绍下自己吧 我是UI设计 在游戏公司上班" after "我在一家游
戏公司做UI设计 快五年了"), and a restatement could only replace the older memory when it dropped
nothing, or the older one's detail would have left what the assistant is shown.

Now the replacing memory keeps the older one's words (``conflict_rules.inherited_detail``) when
the newer one tells the fact again rather than changing it (``text/restating.told_again``), and
the offline reading of a restatement may then leave a detail out (``restatements.says_again``).
What must not happen: a change, a correction or a flip joined to the value it replaced (a stale
value kept alive inside the current memory). Also: a change word that is denied ("never change a
winning team", 没换过) is no change, and 不断 ("continuously") is no negation.

Through the chat service on SQLite and PostgreSQL, in Chinese and English; the rules alone for the rest.
"""
from __future__ import annotations

import pytest

from memory_core.llm.offline.restatements import says_again
from memory_core.llm.offline.slots import supersedes_text
from memory_core.text.facts import negations, says_change
from memory_core.text.restating import MAX_JOINED_CHARS, joined_text, told_again
from tests.conftest import backend_engine_fixture
from tests.test_truth_over_time import START, User

engine = backend_engine_fixture("told-again", START)


@pytest.mark.parametrize("older, newer", [
    ("my brother Tom lives in Leeds, in Headingley", "Tom's still in Leeds, he loves it there"),
    ("my go-to at Golden Lotus is the green curry, extra spicy", "at Golden Lotus I always get the green curry"),
    ("我在一家外贸公司做会计 快三年了", "再说下我自己吧 我是会计 在外贸公司上班"),
    ("我对尘螨过敏 一换季就鼻炎不断", "又到换季了 我这尘螨过敏真是受罪"),
    ("my birthday is august 4", "august 4 is my bday, cake all week"),  # a word typed short
])
def test_a_fact_told_again_is_told_again(older: str, newer: str) -> None:
    assert told_again(newer, older)


@pytest.mark.parametrize("older, newer", [
    ("I live in Lisbon, near the river", "I moved to Porto last week"),  # a change said
    ("my locker code is 4821", "sorry, I meant 4827"),  # a correction said
    ("Aarav is in Year 2, his teacher is Mrs Pemberton", "Aarav's in Year 3 and his teacher is Mr Daley"),
    ("my dentist is Dr Obi at Smile Clinic", "my dentist is Dr Lee at Smile Clinic"),  # one name for another
    ("I'm allergic to penicillin", "I'm not allergic to penicillin after all"),  # a flip
    ("公司在人民路150号", "公司地址：人民路105号，150号是隔壁的商场"),  # a new value beside the old one
    ("我现在不吃晚饭 减肥", "恢复吃晚饭了 不吃晚饭胃受不了"),  # a flip said with a negation kept
    ("我在京东做运营", "我在美团做运营"),
    # a word of the frame swapped, a stance turned, "again", "used to", "gave up" (found in review)
    ("I'm vegetarian, have been for years", "I eat meat again, vegetarian for years was enough"),
    ("我喜欢吃辣", "我讨厌吃辣"), ("I take metformin every morning", "I take metformin every evening"),
    ("my manager is Sarah, she is great", "my manager is Sarah, she is awful"),
    ("My favourite food is sushi", "My favourite food is pizza, sushi is overrated"),
    ("I love running, I run 5k every day", "I hate running, I used to run 5k every day"),
    ("I'm learning Spanish on Duolingo", "I gave up Spanish on Duolingo"), ("我是素食者 不吃肉", "我以前是素食者 不吃肉"),
    ("我每天早上喝咖啡", "我每天早上喝茶"), ("my best friend is Jake", "my best friend was Jake"),
    ("i'm 175 cm, for the size charts", "height is 178cm now, grew a bit"), ("my birthday is august 4", "my bday is august 14"),
    ("im allergic to latex fyi", "im allergic to penicillin fyi"),
    # news that ends the fact, sharing a word or two with it
    ("I'm allergic to cats, I sneeze nonstop whenever I visit Jen",
     "allergist retested me and the cat result was a false positive! it's dust mites. so cats are totally fine"),
    ("we're not planning to have kids, we're happy as we are with the dogs",
     "ok so... huge news. I'm pregnant!! due in November. we're still in shock, it was NOT planned"),
    ("我一直对猫毛过敏 去朋友家撸猫就打喷嚏", "复查结果出来了 原来是尘螨 猫完全没问题"),
])
def test_a_change_a_correction_or_a_flip_is_not_told_again(older: str, newer: str) -> None:
    assert not told_again(newer, older)


def test_the_joined_text_keeps_what_only_the_older_telling_said() -> None:
    older, newer = "My brother Tom lives in Leeds, in Headingley. He teaches maths.", "Tom's still in Leeds, he loves it"
    assert joined_text(older, newer) == "My brother Tom lives in Leeds, in Headingley. He teaches maths. " + newer
    assert joined_text("我是会计", "再说下我自己吧 我是会计 在外贸公司上班") is None  # the newer one holds it all
    assert joined_text("我在外贸公司做会计。快三年了", "我是会计") == "我在外贸公司做会计。快三年了。我是会计"
    assert joined_text("x" * MAX_JOINED_CHARS, "y") is None  # too long to stay one memory


@pytest.mark.parametrize("text, change", [
    ("at Golden Lotus I always get the green curry, never change a winning team", False),
    ("haven't moved, still in the same flat", False), ("手机号一直没换过", False),
    ("I changed my number last week", True), ("手机号换了", True), ("moved to Porto", True),
])
def test_a_denied_change_is_no_change(text: str, change: bool) -> None:
    assert says_change(text) is change


def test_budebu_is_a_change_not_its_denial() -> None:
    assert says_change("房东卖房 不得不搬家")
    assert says_change("信号太差 不得不换成联通了")


def test_buduan_is_no_negation() -> None:
    assert negations("一到春天就喷嚏不断") == 0
    assert negations("我不吃辣") == 1


def test_a_restatement_may_leave_a_detail_out_only_when_it_is_kept() -> None:
    assert says_again("Tom's still in Leeds, he loves it there", "my brother Tom lives in Leeds, in Headingley")
    # a sealed value is kept by its own memory only: no detail may be left out of a sealed telling
    assert not says_again("Tom's in Leeds", "my brother Tom lives in Leeds, call him on [PHONE]")
    # one name for another is no restatement, whatever it leaves out
    assert not says_again("Tom's in York, he loves it there", "my brother Tom lives in Leeds, in Headingley")


@pytest.mark.parametrize("older, between, newer, value, kept, query", [
    ("my brother Tom lives in Leeds, in Headingley", "work drinks tonight, not keen",
     "Tom's still in Leeds, he loves it there", "Leeds", "Headingley", "which city does my brother live in?"),
    ("我在一家外贸公司做会计 快三年了", "今天对账对到九点",
     "再说下我自己吧 我是会计 在外贸公司上班", "会计", "三年", "我是做什么工作的"),

])
def test_told_again_through_the_chat_one_memory_keeps_both(engine, older: str, between: str, newer: str,  # type: ignore[no-untyped-def]
                                                           value: str, kept: str, query: str) -> None:
    user = User(engine)
    user.says(older)
    user.says(between, days=5)
    user.says(newer, days=60)
    holding = [m for m in user.active() if value in m]
    assert len(holding) == 1
    assert kept in holding[0] and newer in holding[0]
    assert value in user.top(query)


@pytest.mark.parametrize("older, newer, stale", [
    ("I live in Lisbon, in a tiny flat near the river", "I moved to Porto last week, still unpacking", "Lisbon"),
    ("我住在杭州 西湖边上", "我搬到苏州了 还在收拾", "杭州"),
    ("我的车是白色的卡罗拉", "老车卖了 现在开的是比亚迪海豹", "卡罗拉"),
])
def test_a_change_through_the_chat_keeps_no_stale_value(engine, older: str, newer: str, stale: str) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says(older)
    remembered = user.says(newer, days=30)
    assert remembered.replaced_contents, "the change replaced the older memory"
    assert not [m for m in user.active() if stale in m]


# As people type (probe set h-en): "im" for "I'm", "bday", a unit typed onto its number ("175cm").
# Each was read as no statement, no birthday or another value, and a repeat stayed two memories.
TYPED = [
    ("im allergic to latex fyi", "latex allergy, just so you have it. gloves at the dentist = hives", "latex"),
    ("my birthday is august 4", "august 4 is my bday btw, my brother's is the 9th so it's a whole week of cake",
     "august 4"),
    ("i'm 175 cm, for the size charts", "height is 175cm if that matters for the bike frame", "175"),
]


@pytest.mark.parametrize("older, newer, value", TYPED)
def test_a_fact_typed_short_is_said_again(older: str, newer: str, value: str) -> None:
    assert supersedes_text(newer, older)


@pytest.mark.parametrize("older, newer", [
    ("i'm 175 cm, for the size charts", "my brother is 182cm, i'm the short one"),
    ("my birthday is august 4", "my wife's bday is august 14"), ("im allergic to latex fyi", "my son is allergic to latex"),
])
def test_someone_elses_value_typed_short_says_nothing_again(older: str, newer: str) -> None:
    assert not supersedes_text(newer, older)


@pytest.mark.parametrize("older, newer, value", TYPED)
def test_a_fact_typed_short_stays_one_memory(engine, older: str, newer: str, value: str) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says(older)
    user.says("work drinks tonight, not keen", days=5)
    user.says(newer, days=40)
    assert len([m for m in user.active() if value in m]) == 1
