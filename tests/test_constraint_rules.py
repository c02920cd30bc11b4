"""Which requests a constraint bears on (memory_core/text/constraints.py), and the query-only test
a search uses to skip reading constraints: when ``may_bear_on`` says no, ``bears_on`` says no for
every constraint."""
from __future__ import annotations

import pytest

from memory_core.text.constraints import bears_on, constraint_kind, may_bear_on

CONSTRAINTS = [
    "我对芒果过敏", "I'm allergic to peanuts.", "我吃素", "I'm vegetarian now.", "我有糖尿病",
    "Never call me before 9am.", "我怕狗", "I can't stand cilantro.", "我对青霉素过敏",
    "I really hate mushrooms, the texture makes me gag.", "我真的受不了茄子的口感",
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


@pytest.mark.parametrize("text", ["I hate Mondays", "I hate my commute", "我讨厌周一", "I really hate traffic"])
def test_a_dislike_of_no_food_thing_or_activity_is_no_constraint(text: str) -> None:
    assert constraint_kind(text) is None


@pytest.mark.parametrize("query", ["Is a trek to Everest Base Camp a good idea for me?", "去西藏徒步适合我吗",
                                   "公司组织爬四千米的雪山，我去合适吗", "Should I try scuba diving?"])
def test_a_question_about_what_suits_the_user_gets_a_medical_condition(query: str) -> None:
    assert may_bear_on(query)
    assert bears_on("I have asthma, I always carry an inhaler.", query) and bears_on("我有哮喘", query)
    assert not bears_on("I can't stand cilantro.", query)  # a food dislike stays off a trek


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


@pytest.mark.parametrize("fear", ["I'm scared of heights.", "Heights terrify me, I can't even stand on a ladder.",
                                  "I'm terrified of flying", "我恐高", "我怕坐飞机",
                                  # a phobia named with "phobia of" (probe set h-en)
                                  "real phobia of heights here, even glass elevators make me sweat",
                                  "I have a bit of a heights phobia"])
def test_a_named_fear_is_a_constraint_on_activities_only(fear: str) -> None:
    """A fear rules out what it names ("Should I book the glass-floor skywalk?"), not a recipe."""
    assert constraint_kind(fear) == "dislike"
    assert bears_on(fear, "Should I book the glass-floor skywalk for our trip?")
    assert bears_on(fear, "周末想去玻璃栈道玩，帮我安排一下")
    assert not bears_on(fear, "Suggest a dinner recipe for tonight")
    assert not bears_on(fear, "给我推荐个菜谱")


@pytest.mark.parametrize("fear, request_", [
    ("i've been terrified of dogs since one bit me when i was 6", "how can i meet people and make friends in a new city"),
    ("我特别怕狗 小时候被咬过", "刚搬来杭州 一个人都不认识 怎么交朋友"),
    ("real phobia of heights here", "plan a fun saturday in chicago for me and my sister"),
])
def test_a_fear_bears_on_what_to_do_and_where_to_go(fear: str, request_: str) -> None:
    """A fear of dogs bears on making friends in a new city (dog parks, dog walking), as a fear of
    heights bears on a day out; it was kept to pet questions (the animals topic) and reached neither."""
    assert bears_on(fear, request_)
    assert not bears_on(fear, "Suggest a dinner recipe for tonight") and not bears_on(fear, "tell me a joke")
    # a book, a gift or a film is no outing (found in review)
    assert not bears_on("I'm scared of dogs", "recommend a good book") and not bears_on("I'm scared of dogs",
                                                                                        "suggest a birthday gift for my mom")


@pytest.mark.parametrize("text, kind", [
    ("我不想放弃吃素", "diet"), ("我老公恢复吃肉了，我还是吃素", "diet"),
    ("my husband is back to eating meat but I'm still vegetarian", "diet"), ("我又开始吃肉了", None),
    ("I overcame my phobia of flying", None), ("I got over my phobia of flying last year", None),
])
def test_a_diet_lifted_is_the_users_own_and_a_phobia_overcome_is_none(text: str, kind: str | None) -> None:
    assert constraint_kind(text) == kind


@pytest.mark.parametrize("text", ["I'm afraid I can't come tonight", "I'm scared of losing my job",
                                  "我怕来不及", "I was scared of the exam results",
                                  # a fear denied or over, and 怕 that is no fear
                                  "I'm not afraid of heights anymore", "I overcame my fear of flying", "我不怕水",
                                  "我以前恐高，现在不怕了", "哪怕狗叫也不管", "我不怕辣"])
def test_fear_words_that_name_no_phobia_are_no_constraint(text: str) -> None:
    assert constraint_kind(text) is None


# ---- lasting traits: they bear on requests of their own topic only ------------------------------
TRAITS = [
    ("I'm 6'4\", so regular airline seats are torture.", "What size road bike frame should I get?"),
    ("我身高一米九，普通座位坐着很挤", "帮我挑一款自行车，车架选多大的？"),
    ("I've been a Mac user forever, never owned a Windows PC.", "I need a new laptop for work, what would you recommend?"),
    ("我一直用苹果电脑，没用过Windows", "推荐一款适合办公的笔记本电脑"),
    ("I'm colour-blind, red and green look the same to me.", "Help me pick colours for my wedding outfit"),
    ("我有点色弱，红绿分不太清", "帮我搭配一下参加婚礼的衣服颜色"),
    ("I'm a night owl, my brain works best after midnight.", "Plan my coding hours for next week"),
    ("我是个夜猫子，一般凌晨两点才睡", "帮我安排下周写代码的时间段"),
]


@pytest.mark.parametrize("trait,request_", TRAITS)
def test_a_lasting_trait_bears_on_a_request_of_its_topic(trait: str, request_: str) -> None:
    assert constraint_kind(trait) == "trait"
    assert bears_on(trait, request_)


@pytest.mark.parametrize("trait", [t for t, _ in TRAITS])
@pytest.mark.parametrize("request_", ["Suggest a dinner recipe", "给我推荐点好吃的零食", "What size pizza should I order?",
                                      "推荐一部电影", "What should I take for my sore throat?"])
def test_a_lasting_trait_stays_out_of_requests_of_other_topics(trait: str, request_: str) -> None:
    """A height says nothing about a recipe, a pizza or a cold: a trait is no allergy."""
    assert not bears_on(trait, request_)


@pytest.mark.parametrize("text", [
    "I'm not colour-blind", "我不是色盲", "我不色盲", "我没有色弱", "I'm not a night owl at all", "I'm short on time today",
    "My wife is a night owl", "My son is very tall", "我老公是果粉", "I love tall buildings",
    # idioms, one day, other senses of "short", distances: a wrong trait would be kept for good
    "The early bird gets the worm", "早睡早起身体好", "我今天早睡早起，感觉不错", "I bought early bird tickets for the conference.",
    "I'm short-staffed this week, so many shifts.", "I'm short-tempered", "I'm short 20 bucks for rent",
    "I'm 2 feet away from the finish line of this project haha", "I am 3 ft from the wall", "I'm 100cm from the TV",
    "我跳了1.80米", "我离屏幕一米五", "身高一米九的篮球运动员真厉害", "身高不是问题",
    # past, negated, asked, or of something else
    "I used to be a night owl", "I was a night owl in college", "我以前是夜猫子", "I'm no longer a Mac user", "我不是果粉",
    "Are you a Mac user?", "I designed a colour-blind palette", "The dress looks colour-blind friendly",
])
def test_what_is_no_trait_of_the_user_is_none(text: str) -> None:
    assert constraint_kind(text) != "trait"


@pytest.mark.parametrize("request_", [
    "Find me a bed and breakfast in Paris", "Order 3 pcs of fried chicken", "Plan a dinner party for Saturday night",
    "我想养只宠物，推荐一下品种", "Suggest a good cat food", "What's the best OS for a Raspberry Pi", "帮我搭配一下今天的午餐",
    "What time frame works for my thesis?", "Recommend a desk lamp", "早上吃什么好？", "Book a meeting room",
    "推荐座位多的餐厅",
])
def test_no_trait_reaches_a_request_that_only_shares_a_word_with_its_topic(request_: str) -> None:
    """夜猫子 holds 猫, "bed" and "frame" are not sizes, "pcs" is no computer."""
    assert not [t for t, _ in TRAITS if bears_on(t, request_)]


@pytest.mark.parametrize("text, kind", [
    # an allergy told as over states none ...
    ("I was allergic to cats as a kid but outgrew it", None), ("I used to be allergic to shellfish, not anymore", None),
    ("我以前对猫毛过敏 长大就好了", None), ("我小时候对牛奶过敏 现在没事了", None), ("我以前芒果过敏，后来好了", None),
    # ... but one that still holds, or someone outgrowing something else, still does
    ("以前我对花生过敏，现在还是过敏", "allergy"), ("小时候就对花生过敏 一直没好", "allergy"),
    ("I was allergic to penicillin as a kid and still am", "allergy"),
    ("my son outgrew his shoes and he is allergic to nuts", "allergy"),
    # found in review: one allergy over beside one that holds, someone else's, an illness outgrown, "a bit better"
    ("I was allergic to eggs as a baby but outgrew it, still allergic to peanuts though", "allergy"),
    ("小时候对牛奶过敏，现在没事了，但是对花生还是过敏", "allergy"), ("I'm allergic to cats, my sister outgrew hers", "allergy"),
    ("I'm allergic to penicillin, grew out of the eczema though", "allergy"), ("以前对花生过敏 现在好了点", "allergy"),
])
def test_an_allergy_told_as_over_is_no_constraint(text: str, kind: str | None) -> None:
    assert constraint_kind(text) == kind
