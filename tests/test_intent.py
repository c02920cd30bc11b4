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


@pytest.mark.parametrize("text", [
    "我牙医是男的还是女的来着", "番茄炒蛋先放蛋还是先放番茄", "周末去爬山还是去看电影", "年化2.8算高还是低",
    "狗狗打疫苗前能洗澡还是不能", "我是单身还是有对象了", "你是要去还是不去",
])
def test_either_or_questions_ask(text: str) -> None:
    """"A 还是 B" asks which, with no 吗 and no question mark."""
    assert is_question_or_request(text)


@pytest.mark.parametrize("text", [
    "我还是喜欢吃辣", "我今年还是要去北京", "我最后还是去了北京", "我选了北大还是觉得清华好", "我现在还是住在成都",
    "想来想去还是辞职了", "我还是不太喜欢香菜", "猫粮还是原来那个牌子", "纠结了很久 还是买了小米",
    "云南机票太贵了 改去成都了", "洗牙改到下周三了",  # 改 of a change made, not "edit this"
    # 还是 after a noun or a phrase is "still" (each was read as a question by a first version)
    "我吃的药还是二甲双胍，剂量没变", "血压药还是每天一片", "过敏源还是花生和虾", "我喝的还是燕麦奶，乳糖不耐受",
    "目前工作还是程序员", "房租还是每月三千", "体重还是75公斤", "我吃饭还是喜欢清淡的", "我喝咖啡还是习惯加燕麦奶",
])
def test_still_and_after_all_are_statements(text: str) -> None:
    """还是 as "still" or "after all", or a choice already made: a fact to remember."""
    assert not is_question_or_request(text)


@pytest.mark.parametrize("text, small", [
    ("好嘞 懂了", True), ("新年快乐呀", True), ("hey how's it going", True), ("lol ok thanks, that's all for today", True),
    ("talk later!", True), ("新年快乐 我今年升职了", False), ("that's all I have for rent this month", False),
    ("how are you? I just got back from Lisbon", False),
    ("新年快乐！升职了", False), ("周末快乐，怀孕了", False), ("懂了 乳糖不耐", False), ("merry christmas, laid off", False),
    ("have a good one, nut allergy", False), ("哈哈哈好的", True), ("Worked, thanks!", True),
    # a reaction's "me" is no fact about the user; news beside it still is
    ("哈哈哈笑死我了", True), ("乐死我了哈哈", True), ("lmao you're killing me", True), ("haha you made my day", True),
    ("笑死我了 我今天被老板表扬了", False), ("lol you're killing me, I just got engaged", False),
    # laughter at a joke; the same words about someone are not small talk
    ("lol that's hilarious", True), ("haha that's so funny", True), ("that's so cute", True),
    ("my son is so funny", False), ("that's hilarious, my boss said the same", False),
])
def test_greetings_and_sign_offs_are_small_talk(text: str, small: bool) -> None:
    from memory_core.text.intent import is_small_talk

    assert is_small_talk(text) is small
