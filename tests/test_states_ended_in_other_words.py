"""A state ended, a plan called off, a diet lifted, told in other words.

Found on probe set g-zh (written apart from the rules; read in the twelfth session, its English
twin g-en held out): changes a person tells without the words the rules knew.

- "已经三个月没碰烟了" after "我烟瘾挺大的 一天一包": a span of time without the thing ends it
  (``states._STOPPED``), and in English the subject is left out of it ("haven't had a cigarette
  in six weeks", "3 months smoke-free": ``updates._EN_SPAN_DROPPED``).
- "我是旱鸭子" says one cannot swim without a negation word (``states._LACKS``: non-swimmer,
  teetotal).
- "我一点辣都吃不了" was no constraint at all: Chinese says "cannot eat" with the verb's
  complement (吃不了, 碰不得), and a reply could then suggest a spicy hot pot. It is a diet now,
  lifted by "现在中辣随便吃" / "I can handle spicy food now" (spicy food is a state).
- "新来的组长叫蒋晓雯": 新来的 / 新任 / 新家 say "new" as English "new" does.
- "三亚那趟退了" after "国庆打算带娃去三亚": a plan called off naming the same place ends it
  (``states.ends_a_plan``).
- From probe set e-zh (thirteenth session): "褪黑素早就停了" (sleep medicine is medication), "房贷
  提前还清了" / "paid off the mortgage" (a loan paid off has ended), "自学了半年Python 现在能写爬虫"
  after "我不会Python 平时就Excel" (a space after a Latin word typed onto Chinese ends a clause,
  and Chinese with a term in Latin letters is still Chinese that drops its "I"), "定投加到每月三千"
  (加到 moves an amount); in English the dropped "I" of "stopped the melatonin", "paid off the car".

And what must not happen: eating spicy food once, a friend's cancelled trip, another person's
span without smoking, "这么多我吃不了" or "吃不了苦" lift or set nothing.
Through the chat service on SQLite and PostgreSQL, in Chinese and English; the rules alone for the rest.
"""
from __future__ import annotations

import pytest

from bench.truth.runner import mentions, suggestions_part
from memory_core.llm.offline.slots import supersedes_text
from memory_core.text.constraints import constraint_kind
from tests.conftest import backend_engine_fixture
from tests.test_truth_over_time import START, User, assert_kept, assert_replaced

engine = backend_engine_fixture("states-other-words", START)


@pytest.mark.parametrize("text, kind", [
    ("我一点辣都吃不了 微辣都不行", "diet"), ("我吃不了辣", "diet"), ("海鲜我碰不得", "diet"), ("我喝不了牛奶", "diet"),
    ("这么多我吃不了", None), ("我这人吃不了苦", None), ("今天的饭我吃不了了 太饱", None),
])
def test_cannot_eat_said_by_the_complement_is_a_diet(text: str, kind: str | None) -> None:
    assert constraint_kind(text) == kind


@pytest.mark.parametrize("older, newer, ends", [
    ("我烟瘾挺大的 一天一包 戒过两次都没戒掉", "报告一下 已经三个月没碰烟了 口香糖嚼得腮帮子疼", True),
    ("I smoke about a pack a day", "3 months smoke-free as of today!", True),
    ("I smoke a pack a day", "haven't had a cigarette in six weeks, the gum helps", True),
    ("我是旱鸭子 一下水就慌", "报的成人游泳班结课了！现在能蛙泳五十米", True),
    ("I'm a non-swimmer, water scares me", "finished the adult swim course, I can do 50 metres of breaststroke now", True),
    ("我一点辣都吃不了 微辣都不行", "在成都待了半年 现在中辣随便吃", True),
    ("I can't eat spicy food at all", "lived in Sichuan for a year, I can handle spicy food now", True),
    ("驾照还没拿到 科二挂了两次", "拿证了！！科三一把过", True),
    ("我们组长叫王斌 人挺好 就是特别爱开会", "新来的组长叫蒋晓雯 雷厉风行那种", True),
    ("国庆打算带娃去三亚 酒店机票都订好了", "三亚那趟退了 娃月考考砸了 在家补课", True),
    ("we booked Lisbon for the May bank holiday", "ugh the Lisbon trip is cancelled, the airline went bust", True),
    # probe set e-zh (thirteenth session): sleep medicine stopped, a loan paid off, a skill learned,
    # an amount raised with 加到; with the "I" dropped in English
    ("这半年一直失眠 每晚都要吃褪黑素才能睡着", "最近睡得特别好 沾枕头就着 褪黑素早就停了", True),
    ("I take melatonin every night to fall asleep", "stopped the melatonin a month ago, sleeping fine now", True),
    ("每个月还房贷六千多 工资一到账就没了一半", "房贷提前还清了！！！无债一身轻", True),
    ("our mortgage is 1800 a month", "finally paid off the mortgage!!", True),
    ("我不会Python 平时就Excel和一点点SQL", "下班自学了半年Python 现在能写爬虫和自动化脚本了", True),
    ("每个月发工资就定投两千到沪深300 雷打不动", "年终奖到账啦 定投从下个月起加到每月三千", True),
    ("房贷还剩二十万没还完 每个月还四千多", "今年年终奖加上存款 房贷提前还清了！！", True),
    ("we still have 80k left on the mortgage, not paid off till 2030", "finally paid off the mortgage!!", True),
    # probe set h-en: a span since a named time, a second try, a car sold, a pet put down by name,
    # pills the doctor lets one stop, and "neither me nor my husband" (the user, with someone)
    ("i smoke about half a pack a day, i know i know",
     "haven't touched a cigarette since march 3rd, the patches are doing the heavy lifting", True),
    ("i don't have a driver's license, my partner drives us everywhere",
     "PASSED MY DRIVING TEST 🎉🎉 second try, parallel parking nearly killed me", True),
    ("i drive to work every day, 40 min each way on the ring road",
     "since selling the car i've been taking the metro in and reading like 3 books a month lol", True),
    ("we have a golden retriever, Biscuit, he's eleven and grey in the face",
     "it's been a month since we had to put biscuit down. the house is so quiet", True),
    ("i'm on metformin for prediabetes, 500 mg with dinner",
     "labs came back normal!! dr patel said i can stop the pills, just diet and walking now", True),
    ("neither me nor my husband can swim, kinda embarassing at our age",
     "adult swim lessons paid off, i did two full laps today without the noodle!!", True),
    ("I smoke a pack a day", "haven't seen my brother since march", False),
    ("we have a Honda Civic", "we bought a second car, a little Kia for me", False),
    ("i'm on metformin for prediabetes", "doctor says i can't stop the pills yet", False),
    ("neither me nor my husband can swim", "my husband still can't swim lol", False),
    ("i don't have a driver's license", "my sister passed her driving test!!", False),
    ("i drive to work every day", "since selling the car my dad takes the bus", False),
    ("we have a golden retriever, Biscuit", "my neighbour had to put her dog down, so sad", False),
    ("we have a dog named Max", "I put Max down as my emergency contact", False),
    # a move called off only by the user, and only called off (not put back)
    ("I'm moving to Berlin in May", "my sister is not moving to Berlin after all", False),
    ("I'm moving to Berlin in May", "not moving to Berlin till June now", False),
    ("下个月要搬去成都", "如果房子没找好就不搬了 成都太贵", False),
    # found in review: a trip or a weekend there is no move called off; a pet put down on a day is
    ("下个月要搬去成都", "周末成都不去了", False), ("我们准备搬到杭州", "杭州出差这周不去了", False),
    ("I'm moving to Austin in August", "my trip to Austin this weekend isn't happening", False),
    ("I'm moving to Berlin in May", "staying put in Berlin this weekend, too tired to go out", False),
    ("I'm moving to Berlin in May", "we decided not to move to Berlin after all", True), ("下个月要搬去成都", "搬成都的事黄了", True),
    ("we have a dog named Max", "we had to put Max down on Friday", True),
    # a pet's death told by its name alone, in either language; not a neighbour's, nor one lost
    ("We have a dog named Max", "Max died last night", True), ("我家狗叫旺财 三岁了", "旺财昨晚去世了", True),
    ("We have a dog named Max", "my neighbour's dog Max died", False), ("我家狗叫旺财", "旺财走丢了", False),
    ("我家狗叫旺财", "我奶奶走了", False),
    ("we have a dog named Max", "Max has been scratching a lot, the vet put it down to stress", False),
    # found in review: a visit, hours, a condition, a house sold, an end looked forward to, a test failed
    ("I drink 2 coffees a day", "Stopped at Starbucks for a latte on the way in", False),
    ("I take melatonin every night", "Stopped at the pharmacy for my melatonin", False),
    ("I drink 3 coffees a day", "haven't had a coffee since 7am, dying here", False),
    ("I take metformin every day", "I will stop the medication if the side effects get worse", False),
    ("I take blood pressure pills every day", "my doctor said i can stop the pills next month if my numbers hold", False),
    ("I drive a Honda Civic", "I've been driving a lot more since selling the house", False),
    ("我有房贷，每月还6000", "等房贷还清了我就辞职", False), ("our mortgage is 1800 a month", "once the mortgage is paid off we'll travel", False),
    ("I don't have a driver's license", "failed my driving test the second time", False),
    ("I don't have a driver's license", "second time failing my driving test ugh", False),
    ("每个月还房贷六千多", "房贷还没还清 还得熬", False), ("our mortgage is 1800 a month", "my sister paid off her mortgage", False),
    ("我每晚都要吃褪黑素", "我妈的褪黑素停了", False), ("我不会Python", "同事自学了Python 现在能写爬虫了", False),
    ("每个月发工资就定投两千到沪深300", "同事的定投加到每月三千了", False),
    # must not
    ("我不吃辣", "今天吃了顿火锅 微辣 还行", False),
    ("I can't eat spicy food", "this spicy food place was packed", False),
    ("I smoke a pack a day", "my dad has not smoked in 10 years", False),
    ("I smoke a pack a day", "haven't seen my brother in six weeks", False),
    ("国庆打算带娃去三亚", "老王的演唱会取消了", False),
    ("planning to visit Kyoto in April", "my friend cancelled her Kyoto trip", False),
    ("we booked Lisbon for May", "the Lisbon trip wasn't cancelled after all, phew", False),
])
def test_a_state_ended_in_other_words(older: str, newer: str, ends: bool) -> None:
    assert supersedes_text(newer, older) is ends


@pytest.mark.parametrize("older, newer, query, value, stale", [
    ("我烟瘾挺大的 一天一包 戒过两次都没戒掉", "报告一下 已经三个月没碰烟了 口香糖嚼得腮帮子疼 但是值",
     "我现在还抽烟吗 体检表要填", "没碰烟", "一天一包"),
    ("I smoke about a pack a day, for years now", "3 months smoke-free as of today! the patches actually worked",
     "do I smoke? filling in a health form", "smoke-free", "pack a day"),
    # "have for years" drops its "I": it was read as an inverted question, and the habit was never stored
    ("I smoke about a pack a day, have for years", "3 months smoke-free as of today! the patches actually worked",
     "do I smoke? filling in a health form", "smoke-free", "pack a day"),
    ("国庆打算带娃去三亚 酒店机票都订好了 就等放假", "三亚那趟退了 娃月考考砸了 他爸说国庆哪都别去在家补课 我服了",
     "国庆我们去三亚吗", "退了", "就等放假"),
    ("每个月还房贷六千多 工资一到账就没了一半", "房贷提前还清了！！！无债一身轻 今晚必须加个鸡腿",
     "我现在每个月还有房贷要还吗 想重新做个预算", "还清", "六千"),
    ("our mortgage is 1800 a month, half my pay", "finally paid off the mortgage!! celebrating tonight",
     "do I still have a mortgage to pay? redoing my budget", "paid off", "1800"),
    ("这半年一直失眠 每晚都要吃褪黑素才能睡着", "最近睡得特别好 沾枕头就着 褪黑素早就停了",
     "药箱里那瓶褪黑素我还需要吗", "停了", "每晚都要吃"),
    ("i'm on metformin for prediabetes, 500 mg with dinner",
     "labs came back normal!! dr patel said i can stop the pills, just diet and walking now",
     "what meds am i taking", "stop the pills", "500 mg"),
    ("we have a golden retriever, Biscuit, he's eleven and grey in the face",
     "it's been a month since we had to put biscuit down. the house is so quiet",
     "do i still have a dog? trying to decide whether to cancel biscuit's pet insurance", "put biscuit down",
     "grey in the face"),
    # a move called off: no trip word, the move itself said off
    ("I'm moving to Berlin in May, new job there", "just kidding about Berlin lol, the job fell through, staying put",
     "am I moving to Berlin?", "staying put", "new job there"),
    ("下个月要搬去成都 工作都找好了", "成都不搬了 那边工作没谈妥", "我要搬去成都吗", "不搬了", "工作都找好了"),
    ("We have a dog named Max, a scruffy terrier", "Max died last night, the vet couldn't save him",
     "do I still have a dog? the pet insurance wants to know", "Max died", "scruffy terrier"),
    ("我家狗叫旺财 三岁了 特别黏人", "旺财昨晚去世了 好难过", "旺财的宠物险要续费了 还续吗", "去世", "特别黏人"),
])
def test_the_ended_state_is_not_current(engine, older: str, newer: str, query: str,  # type: ignore[no-untyped-def]
                                        value: str, stale: str) -> None:
    assert_replaced(User(engine), older, newer, 90, query, value, stale)


@pytest.mark.parametrize("rule, request_, forbidden", [
    ("我一点辣都吃不了 微辣都不行 吃了就冒汗", "周末朋友约火锅 推荐个锅底", "麻辣"),
    ("海鲜我碰不得 一吃就难受", "推荐个晚饭吃的", "海鲜"),
])
def test_a_diet_said_by_the_complement_reaches_the_request(engine, rule: str, request_: str,  # type: ignore[no-untyped-def]
                                                           forbidden: str) -> None:
    user = User(engine)
    user.says(rule)
    user.says(request_, days=20)
    assert any(rule == c.content for c in user.last_info.constraints)
    assert not mentions(suggestions_part(user.last_reply), forbidden)


# What the review of these rules (a helper, ~300 probes) found them doing, and must not:
# "still can't" read as "can now", one lifted item lifting a whole diet, a day without coffee
# ending a habit, a ticket or a concert calling off a trip (or a call-off that is negated,
# conditional, moved or someone else's), a past "旱鸭子" read as today's, and "cannot eat" said of
# a topic, of being full or of hardship read as a diet.
@pytest.mark.parametrize("older, newer", [
    ("我吃不了辣", "现在还不能吃辣"), ("I don't drink alcohol", "I could have a beer now"),
    ("我不喝酒，也不吃辣", "现在能吃辣了"),
    ("我每天喝两杯咖啡", "今天没喝咖啡 头好疼"), ("我抽烟，一天一包", "昨天没抽烟"),
    ("我每天晨跑五公里", "这周没去跑步，太忙了"), ("我每周游泳三次", "感冒了，这两天没去游泳"),
    ("I drink 3 coffees a day", "haven't had coffee in 2 days, headache is brutal"),
    ("I run every day", "haven't been running in a week, knee's acting up"),
    ("国庆打算带娃去三亚", "三亚的机票退了，改坐高铁去"), ("打算五一去东京玩", "东京的演唱会取消了，还是去玩"),
    ("we booked a Lisbon trip for May", "Lisbon flight cancelled, we're taking the train instead"),
    ("国庆打算带娃去三亚", "三亚的票不退了，还是去"), ("国庆打算带娃去三亚", "如果下雨三亚那趟就不去了"),
    ("I'm flying to Boston for a conference, booked it", "my sister's wedding trip to Boston got called off"),
    ("我每周要去上海出差", "上海的会取消了"),
    ("we booked Lisbon for May", "the Lisbon trip isn't cancelled, just moved to June"),
    ("we booked Lisbon for May", "the Lisbon trip wasn't cancelled after all"),
])
def test_what_ends_no_state_or_plan(older: str, newer: str) -> None:
    assert not supersedes_text(newer, older)


@pytest.mark.parametrize("older, newer", [
    ("我不会游泳", "我以前是旱鸭子，现在能游一千米了"), ("I drink wine most nights", "I'm teetotal now"),
])
def test_what_was_lacked_before_is_no_lack_now(older: str, newer: str) -> None:
    assert supersedes_text(newer, older)


@pytest.mark.parametrize("text, kind", [
    ("现在还不能吃辣", "diet"), ("我现在不能吃海鲜", "diet"), ("海鲜我碰不得", "diet"),
    ("这个话题碰不得", None), ("他是老板亲戚 碰不得", None), ("太饱了，一口都吃不了", None), ("一点苦都吃不了", None),
    ("我这人一点亏都吃不了", None), ("年轻人吃不了生活的苦", None), ("晚上吃不了蛋糕了 太撑", None),
    ("今天吃不了鱼了，卖完了", None), ("一滴都喝不了了，喝太多了", None),
])
def test_cannot_eat_names_a_food(text: str, kind: str | None) -> None:
    assert constraint_kind(text) == kind


@pytest.mark.parametrize("pet, role, query, value", [
    ("we have a dog named Max, a scruffy terrier", "I put Max down as my emergency contact on the gym form",
     "do I have a dog?", "terrier"),
    ("我家狗叫乐乐 是只柯基", "我把乐乐填成紧急联系人了 她是我大学室友", "我家狗叫什么", "柯基"),
])
def test_a_name_given_a_role_ends_no_pet(engine, pet: str, role: str, query: str, value: str) -> None:  # type: ignore[no-untyped-def]
    assert_kept(User(engine), pet, role, 10, query, value)
