"""The offline rule-based LLM: analysis, query rewriting, replies, merges and supersedes."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory_core.llm.base import ChatMessage, LLMProvider, MemoryBrief
from memory_core.llm.offline import (
    SNACKS,
    OfflineLLM,
    bigram_jaccard,
    extract_avoidances,
    near_duplicate,
    parse_memory_context,
)
from memory_core.types import MemoryType

NOW = datetime(2024, 6, 1, 10, 0, tzinfo=timezone.utc)
LLM = OfflineLLM()


def brief(memory_id: str, content: str, days_ago: int = 0) -> MemoryBrief:
    return MemoryBrief(memory_id=memory_id, content=content, created_at=NOW - timedelta(days=days_ago))


def reply_text(question: str, context: str) -> tuple[list[str], str]:
    chunks = list(LLM.reply([ChatMessage("user", question)], context, NOW))
    return chunks, "".join(chunks)


def test_identity() -> None:
    assert isinstance(LLM, LLMProvider)
    assert LLM.name == "offline (rule-based)" and LLM.offline is True


# ---------------------------------------------------------------- analyze

IMPORTANCE = [
    ("我对芒果过敏", 5), ("我有哮喘，出门要带吸入器", 5), ("我爸爸有糖尿病", 5), ("I'm allergic to peanuts", 5),
    ("I have asthma", 5), ("always carry my EpiPen", 5), ("I am diabetic", 5),
    ("我住在北京市海淀区", 4), ("我的手机号是[PHONE]", 4), ("我的生日是3月5日", 4), ("我女儿今年5岁", 4),
    ("我在腾讯工作", 4), ("我不吃辣", 4), ("I never eat pork", 4), ("I hate olives", 4), ("I prefer aisle seats", 4),
    ("My wife is called Anna", 4), ("I work at Google as an engineer", 4), ("请用中文回答", 4),
    # The user's own lasting value of a kept topic (home, work, dentist, boss), however plainly said.
    ("We rent a one-bedroom flat in Leeds.", 4), ("My dentist is Dr. Varga on Mill Road.", 4),
    ("我的直属领导是李强，人挺好", 4), ("我月薪八千", 4), ("我在美团做运营", 4),
    # Where one stays for years of study or work is a home; a weekend there is not.
    ("I'm in Berlin for my master's, in Neukölln.", 4), ("我在柏林读研", 4), ("I'm based in Denver", 4),
    ("I'm in Berlin for the weekend, it's lovely", 3), ("我的手机号是[PHONE#3f2a9c]", 4),
    ("I'm in London for the job fair", 2), ("I'm in Madrid for my exchange semester", 4),
    ("I drove my car to the beach today", 3), ("My boss was grumpy today", 3),
    # Having none of a thing is a lasting fact too, until a later message says otherwise.
    ("我的胃病一直在华山医院消化科看", 4), ("我爸是退休的工程师", 4), ("我特别怕冷", 4), ("I get carsick on long drives", 4),
    ("We don't have any pets.", 4), ("我不会开车", 4), ("我没有房贷，一直租房", 4), ("My neighbour doesn't have a car", 2),
    ("我计划下个月去日本", 3), ("昨天我去了上海迪士尼", 3), ("我喜欢爬山", 3), ("I love coffee", 3),
    ("I went hiking last Sunday", 3), ("We are going to Paris next week", 3),
    ("我觉得这部电影还行", 2), ("I think the new design is pretty good", 2), ("今天天气不错", 2),
    ("你好", 1), ("谢谢！", 1), ("哈哈哈哈", 1), ("好的", 1), ("hi", 1), ("Thanks!", 1), ("lol", 1), ("ok", 1),
    ("thank you so much", 1), ("Good morning!", 1),
    # emotional salience: milestones and strongly felt experiences are kept, felt ones live a year
    ("Bart won first place in the 100 meters at the sports festival", 4), ("Lisa在作文比赛中获得了第一名", 4),
    ("I finally graduated last week", 4), ("我的狗去世了", 4), ("Lisa felt extremely anxious before her exam", 4),
    ("Bart在海边放风筝，感到非常开心", 4), ("Lisa felt happy in art class", 3), ("阿黄在公园追小朋友，让Bart感到害怕", 3),
    # dietary restrictions said in passing are kept; lasting self-disclosures live a year
    ("Unfortunately, I can't have dairy, so no ice cream for me", 4), ("我吃不了辣的", 4),
    ("I'm passionate about improving education in our community", 3), ("Just started doing aerial yoga, it's great", 3),
    ("I've had them for 3 years now and they bring me joy", 3), ("I'm doing kickboxing and it's giving me energy", 3),
    ("I've worked with Python and C++", 3), ("我养了两只猫", 4), ("我最近开始学吉他", 3),  # a pet of one's own: 4, like family
    ("I'm doing fine", 2), ("I'm doing well, how about you?", 2), ("I'm taking the bus", 2), ("I'm playing it safe", 2),
    ("I can't have been more wrong", 2), ("Thanks, James! I play drums too!", 3), ("This is my book collection so far", 3),
    ("I'm working on a script about a girl who finds home", 3), ("Trying to eat healthier these days", 3),
    ("I'm struggling to keep up with my assignments", 3), ("I play along", 2),
]


@pytest.mark.parametrize("text,importance", IMPORTANCE, ids=[t for t, _ in IMPORTANCE])
def test_importance_rules(text: str, importance: int) -> None:
    assert LLM.analyze(text, NOW).importance == importance


REACTIONS = ["I'm so happy for you!", "Glad you had fun!", "So sorry to hear that, it sounds awful",
             "Congrats on the new role, you must be thrilled", "真为你感到高兴", "听到这个消息我很难过"]


@pytest.mark.parametrize("text", REACTIONS)
def test_reactions_to_someone_elses_news_are_not_salient(text: str) -> None:
    """A reply to another person's news is not the user's own experience: no emotional boost."""
    assert LLM.analyze(text, NOW).importance <= 3


# The same experience told in English and in Chinese is kept as long (written for this test, not
# taken from a benchmark): English says "very happy" as often with an idiom ("had a great time")
# as with an adverb, "happy to see the pandas" is the user's own moment, not a reply, and
# Chinese 很 marks no strength.
PARALLEL = [
    ("We had a wonderful time at the beach with my cousins", "我和表哥表姐在海边玩得非常开心", 4),
    ("I had a blast at the concert", "我在演唱会上玩得特别开心", 4),
    ("We had so much fun at the water park", "我们在水上乐园玩得特别开心", 4),
    ("I was thrilled to get the concert tickets", "拿到演唱会的票让我非常激动", 4),
    ("I was so happy to see the pandas at the zoo", "在动物园看到熊猫，我非常开心", 4),
    ("Tom felt very discouraged after the teacher criticised his essay", "老师批评了Tom的作文，Tom感到非常沮丧", 4),
    ("I was really annoyed when he kept bragging about his new bike", "他一直炫耀他的新自行车，我感到非常恼火", 4),
    ("I felt happy painting in art class", "我在美术课上画画，感到开心", 3),
    ("I felt nervous before the piano recital", "钢琴演奏会之前我感到紧张", 3),
    ("She felt relieved when the exam was over", "考试结束后她感到如释重负", 3),
    ("Lisa felt uneasy at the crowded mall", "Lisa在拥挤的商场里感到不安", 3),
    # 很 is the default before a Chinese adjective, not "very": 很生气 is "angry", felt, not strong.
    ("I had a fight with my best friend and I'm still angry about it", "我和最好的朋友吵架了，到现在还很生气", 3),
    ("My boss criticized me at work today and I felt wronged", "今天在公司被老板批评了，很委屈", 3),
    ("I was home alone last night and suddenly felt scared", "昨晚一个人在家，突然很害怕", 3),
    ("I got scammed out of five thousand yuan and I really regret it", "我被骗了五千块钱，非常后悔", 4),
    ("I was extremely worried when my cat went missing", "我的猫走丢了，急死我了", 4),
    ("We went to the beach with my family on the weekend", "周末和家人去海边玩", 4),
    ("Last winter our whole family went to Harbin to see the ice sculptures", "去年冬天我们全家去哈尔滨看冰雕", 4),
    # Kin beyond the nuclear family count as family in both languages (the lists had "grandmother"
    # but not "grandparents", 爷爷 but not 祖父母 or 表姐)
    ("I had dinner with my grandparents on Sunday", "周日和祖父母一起吃了晚饭", 4),
    ("My parents gave me an old camera", "父母给了我一台旧相机", 4),
    ("My aunt taught me to knit", "姑妈教我织毛衣", 4),
    ("My cousin fixed my bike", "我堂弟帮我修好了自行车", 4),
    ("My grandson drew me a picture", "我外孙给我画了一幅画", 4),
]


@pytest.mark.parametrize("text", ["楼下的阿姨今天在跳广场舞", "隔壁的叔叔修好了门铃", "The parent company bought a new office"])
def test_neighbours_called_auntie_and_a_parent_company_are_no_family(text: str) -> None:
    """阿姨 / 叔叔 are what Chinese calls any older neighbour; only kin count as family."""
    assert LLM.analyze(text, NOW).importance < 4


@pytest.mark.parametrize("english,chinese,importance", PARALLEL, ids=[e for e, _, _ in PARALLEL])
def test_the_same_experience_rates_the_same_in_english_and_chinese(english: str, chinese: str,
                                                                      importance: int) -> None:
    assert (LLM.analyze(english, NOW).importance, LLM.analyze(chinese, NOW).importance) == (importance, importance)


@pytest.mark.parametrize("text", ["Sounds like you had a great time!", "You must have had so much fun!",
                                  "Looks like you guys had a blast", "Nice to see you again!", "很高兴再见到你！",
                                  "So happy to see you!"])
def test_replies_about_the_other_persons_time_are_not_strongly_felt(text: str) -> None:
    """The idioms count for the teller only."""
    assert LLM.analyze(text, NOW).importance <= 3


def test_unsafe_is_not_the_feeling_uneasy() -> None:
    from memory_core.llm.offline import _EMOTION_RE

    assert _EMOTION_RE.search("这条路晚上不安全") is None
    assert _EMOTION_RE.search("晚上走这条路我感到不安") is not None


MEMORY_TYPES = [
    ("请用中文回答", MemoryType.PROCEDURAL), ("以后回答简短一点", MemoryType.PROCEDURAL),
    ("always answer briefly", MemoryType.PROCEDURAL), ("Please reply in English from now on", MemoryType.PROCEDURAL),
    ("I prefer aisle seats", MemoryType.PROCEDURAL), ("叫我小张就行", MemoryType.PROCEDURAL),
    ("Call me Sam", MemoryType.PROCEDURAL),
    ("昨天我去了上海迪士尼", MemoryType.EPISODIC), ("I went hiking last Sunday", MemoryType.EPISODIC),
    ("上周和同事聚餐", MemoryType.EPISODIC), ("On 2024-05-20 we signed the contract", MemoryType.EPISODIC),
    ("我计划下个月去日本", MemoryType.EPISODIC),
    ("我对芒果过敏", MemoryType.DECLARATIVE), ("I was diagnosed with diabetes last year", MemoryType.DECLARATIVE),
    ("我上个月搬到了上海", MemoryType.DECLARATIVE), ("我喜欢爬山", MemoryType.DECLARATIVE),
    ("I love coffee", MemoryType.DECLARATIVE), ("我不吃辣", MemoryType.DECLARATIVE),
    ("My daughter is 5 years old", MemoryType.DECLARATIVE),
]


@pytest.mark.parametrize("text,memory_type", MEMORY_TYPES, ids=[t for t, _ in MEMORY_TYPES])
def test_memory_type_rules(text: str, memory_type: MemoryType) -> None:
    assert LLM.analyze(text, NOW).memory_type == memory_type


def test_analysis_entities_and_summary() -> None:
    a = LLM.analyze("用户张三对芒果过敏，不要推荐任何芒果相关的食品。他住在北京。", NOW)
    assert a.entities[:2] == ["张三", "芒果"] and "北京" in a.entities
    assert a.summary == "用户张三对芒果过敏，不要推荐任何芒果相关的食品。"
    long = "x" * 300
    assert len(LLM.analyze(long, NOW).summary) == 120


def test_analysis_is_deterministic() -> None:
    text = "I moved to Berlin last month and started working at SAP."
    assert LLM.analyze(text, NOW) == LLM.analyze(text, NOW)


# ---------------------------------------------------------------- rewrite_query

REWRITES = [
    ("请问我上周去了哪里？", "我上周（2024-05-20至2024-05-26）去了哪里"),
    ("帮我查一下昨天的会议记录", "2024-05-31的会议记录"),
    ("你还记得我对什么过敏吗？", "我对什么过敏"),
    ("Can you tell me what I did yesterday please?", "what I did 2024-05-31?"),
    ("please remind me where I parked", "where I parked"),
    ("Hey, do you remember my wife's birthday?", "my wife's birthday?"),
    ("what did I eat last month", "what did I eat last month (May 2024)"),
    ("我的地址", "我的地址"),
]


@pytest.mark.parametrize("query,expected", REWRITES, ids=[q for q, _ in REWRITES])
def test_rewrite_query(query: str, expected: str) -> None:
    assert LLM.rewrite_query(query, NOW) == expected


@pytest.mark.parametrize("query", ["请问", "please", "？", "Can you"])
def test_rewrite_never_empty(query: str) -> None:
    out = LLM.rewrite_query(query, NOW)
    assert out.strip() == query.strip()


# ---------------------------------------------------------------- reply

MANGO_CONTEXT = "[2024-01-01] 用户张三对芒果过敏，不要推荐任何芒果相关的食品"


def test_mango_allergy_scenario_zh() -> None:
    chunks, text = reply_text("给我推荐点好吃的零食", MANGO_CONTEXT)
    assert text.startswith("（离线模式）")
    assert len(chunks) > 5  # actually streamed
    assert "过敏" in text and "已避开芒果（你对芒果过敏，2024-01-01 记下）" in text
    recommended = text.split("给你推荐几样零食：", 1)[1].split("。", 1)[0].split("、")
    assert len(recommended) >= 3
    assert all("芒果" not in item for item in recommended)
    mango_items = [i.zh for i in SNACKS if "芒果" in i.zh]
    assert mango_items and not any(m in text for m in mango_items)


@pytest.mark.parametrize("question, context, said, not_said", [
    ("给儿子带什么零食去春游", "[2024-01-01] 我儿子对花生过敏", "已避开花生（你儿子对花生过敏，2024-01-01 记下）", "你对花生过敏"),
    ("what snacks should I pack for my son?", "[2024-01-01] my son is allergic to peanuts",
     "I left out peanuts (your son is allergic to peanuts, noted 2024-01-01)", "you're allergic"),
    # found in review: the person before a comma, the user's own allergy beside another's dislike, two people
    ("what snacks should I pack for my son?", "[2024-01-01] My son, who is 5, is allergic to peanuts",
     "your son, who is 5, is allergic to peanuts", "you're allergic"),
    ("给我推荐点零食", "[2024-01-01] 我儿子不爱吃芒果，我对芒果过敏", "已避开芒果（你对芒果过敏", "你儿子不爱吃芒果"),
    ("给我推荐点零食", "[2024-01-01] 我老公对花生过敏，我对芒果过敏", "已避开花生（你老公对花生过敏", "你对花生过敏"),
])
def test_the_reply_says_whose_allergy_it_left_out(question: str, context: str, said: str, not_said: str) -> None:
    _, text = reply_text(question, context)
    assert said in text and not_said not in text


def test_mango_allergy_scenario_cross_language() -> None:
    _, text = reply_text("Can you recommend some snacks?", MANGO_CONTEXT)
    assert text.startswith("(Offline mode)")
    assert "mango" not in text.split("you might like:", 1)[1].split(".", 1)[0]
    assert "I left out mango (you're allergic to mango, noted 2024-01-01)" in text


def test_english_allergies_and_dislikes_for_dinner() -> None:
    context = "[2024-01-01] I am allergic to peanuts and shellfish\n[2024-02-01] I don't eat spicy food"
    _, text = reply_text("What should I eat for dinner?", context)
    dishes = text.split("you might like:", 1)[1].split(".", 1)[0].lower()
    assert "kung pao" not in dishes and "mapo" not in dishes  # peanuts / spicy
    assert "peanuts" in text and "spicy food" in text
    assert "2024-01-01" in text and "2024-02-01" in text


def test_chinese_dislike_and_seafood_allergy() -> None:
    _, text = reply_text("晚饭吃什么好", "[2024-01-01] 我不吃辣\n[2024-03-01] 我对海鲜过敏")
    dishes = text.split("给你推荐几样菜：", 1)[1].split("。", 1)[0]
    for banned in ("清蒸鱼", "寿司", "麻婆豆腐", "宫保鸡丁"):
        assert banned not in dishes
    assert "你对海鲜过敏" in text and "你不吃辣" in text


def test_no_memories_says_so() -> None:
    _, zh = reply_text("你知道我喜欢什么吗", "")
    assert zh.startswith("（离线模式）") and "还没有记住" in zh
    _, en = reply_text("What do you know about me?", "")
    assert en.startswith("(Offline mode)") and "don't have anything remembered" in en


def test_reply_answers_with_the_memory_that_fits_the_question_in_the_second_person() -> None:
    context = "[2024-05-02] 我喜欢爬山\n[2024-05-01] 我住在北京海淀区"
    _, text = reply_text("我住在哪里？", context)
    assert text == "（离线模式）你住在北京海淀区（2024-05-01 记下）。"  # one answer, not a list
    _, text = reply_text("Where do I live?", "[2024-05-01] I'm living in Porto now, my flat is near the river.")
    assert text == "(Offline mode) You're living in Porto now (noted 2024-05-01)."


@pytest.mark.parametrize("question, context, expected", [
    # one sentence, cut after the clause that answers: never a list, never the whole memory
    ("我住在哪里？", "[2024-03-10] 我搬家了，现在住在杭州市西湖区文三路，离公司骑车十五分钟。\n[2024-01-02] 我周末去爬山",
     "（离线模式）你搬家了，现在住在杭州市西湖区文三路（2024-03-10 记下）。"),
    ("我女儿几岁？", "[2024-03-10] 我女儿今年五岁，下个月要上幼儿园大班了。", "（离线模式）你女儿今年五岁（2024-03-10 记下）。"),
    ("我对什么过敏？", "[2024-03-10] 我对芒果过敏，吃了会起疹子，所以任何含芒果的东西都不能吃。",
     "（离线模式）你对芒果过敏（2024-03-10 记下）。"),
    ("Where do I live now?", "[2024-03-10] I go hiking most weekends.\n[2024-03-12] I live in Seattle now.",
     "(Offline mode) You live in Seattle now (noted 2024-03-12)."),
    # retrieval's best stays first when it fits: a word shared with the question is no reason
    # to put the sister's city above the user's own address
    ("Where do I live now?", "[2024-03-12] My new address is 5 Pine Road in Denver\n[2024-03-11] My sister Maya lives in "
     "Toronto", "(Offline mode) Your new address is 5 Pine Road in Denver (noted 2024-03-12)."),
    # clauses end at ",;:" before a space only: "1,200" and "http://" stay whole
    ("How much is my laptop budget?", "[2024-03-10] My budget for the laptop is $1,200, and not a cent more",
     "(Offline mode) Your budget for the laptop is $1,200 (noted 2024-03-10)."),
    ("What is my website?", "[2024-03-10] My website is http://shop.example/x, I built it myself",
     "(Offline mode) Your website is http://shop.example/x (noted 2024-03-10)."),
    ("What was the highlight of the trip?",
     "[2024-03-10] Back from Lisbon! The trip was wonderful, the tram 28 ride was the highlight.",
     "(Offline mode) The trip was wonderful, the tram 28 ride was the highlight (noted 2024-03-10)."),
])
def test_reply_is_one_sentence_of_the_best_memory(question: str, context: str, expected: str) -> None:
    assert reply_text(question, context)[1] == expected


def test_a_question_about_the_users_own_habits_is_answered_not_met_with_suggestions() -> None:
    """A constraint that bears on a drink question used to turn "what do I drink?" into a list of
    drinks to try; the user asked what they drink."""
    vegetarian = "[2024-01-01] I'm vegetarian, so please never suggest meat or fish dishes."
    tea = "[2024-05-01] I drink green tea in the afternoon; coffee after 2pm keeps me awake."
    text = "".join(LLM.reply([ChatMessage("user", "What do I drink in the afternoon?")], tea, NOW, vegetarian))
    assert text == "(Offline mode) You drink green tea in the afternoon (noted 2024-05-01)."
    coffee = "[2024-05-01] 我每天早上喝一杯美式咖啡，不加糖不加奶。"
    text = "".join(LLM.reply([ChatMessage("user", "我早上喝什么？")], coffee, NOW, "[2024-01-01] 我对芒果过敏"))
    assert text == "（离线模式）你每天早上喝一杯美式咖啡（2024-05-01 记下）。"
    # ... while a request for ideas still gets suggestions that respect the constraint
    text = "".join(LLM.reply([ChatMessage("user", "What should I drink this afternoon?")], tea, NOW, vegetarian))
    assert "you might like" in text


def test_a_statement_is_acknowledged_and_never_answered_with_a_memory() -> None:
    """"我对芒果过敏" got "我还没有记住关于你的任何事情" (or the stored allergy said back) just before
    the Remembered notice: a statement asks nothing."""
    allergy = "[2024-01-01] 我对芒果过敏，吃了会起疹子。"
    assert reply_text("我对芒果过敏", allergy)[1] == "（离线模式）好的，知道了。"
    assert reply_text("I'm allergic to peanuts", "[2024-01-01] I'm allergic to peanuts.")[1] == "(Offline mode) Got it."
    # a standing rule that names suggestions is a statement too, not a request for them
    assert reply_text("Never recommend horror movies to me", "")[1] == "(Offline mode) Got it."


@pytest.mark.parametrize("text, memories", [
    ("The weather is lovely today!", "[2024-01-01] Back from Lisbon! The trip was wonderful.\n[2024-01-02] My phone is 555-0100"),
    ("Thanks!", "[2024-01-01] I'm allergic to peanuts."),
    ("今天天气真好", "[2024-01-01] 我女儿今年五岁\n[2024-01-02] 我对芒果过敏"),
    ("哈哈好的", "[2024-01-01] 我住在杭州"),
])
def test_small_talk_lists_no_memories(text: str, memories: str) -> None:
    reply = reply_text(text, memories)[1]
    for _date, memory in parse_memory_context(memories):
        for word in ("Lisbon", "555", "peanut", "女儿", "芒果", "杭州"):
            assert word not in reply, (word, reply)
    assert reply in ("(Offline mode) Nothing to look up there. Ask me about anything you've told me.",
                     "（离线模式）这句不需要查你的记忆。想知道我记得什么，随时问我。")


def test_small_talk_and_unanswered_questions_get_a_short_reply_and_no_memories() -> None:
    assert reply_text("The weather is lovely today!", "")[1].startswith("(Offline mode) Nothing to look up")
    assert reply_text("今天天气真好", "")[1].startswith("（离线模式）这句不需要查")
    assert reply_text("Where did I park?", "")[1] == "(Offline mode) I don't have anything remembered about that yet."
    assert reply_text("法国的首都是哪里？", "")[1] == "（离线模式）我还没有记住关于这方面的任何事情。"


def test_constraints_shape_suggestions_even_when_no_memory_ranked() -> None:
    vegetarian = "[2024-01-01] I'm vegetarian, so please never suggest meat or fish dishes."
    _, text = reply_text("Suggest a dinner recipe for tonight", "")
    assert "kung pao chicken" in text  # without the constraint, meat is on the menu
    chunks = list(LLM.reply([ChatMessage("user", "Suggest a dinner recipe for tonight")], "", NOW, vegetarian))
    offered = "".join(chunks).split("you might like:", 1)[1].split(".", 1)[0]
    assert offered and not any(w in offered for w in ("chicken", "beef", "fish", "sushi", "tofu"))
    assert "vegetarian" in "".join(chunks)
    # A request the catalogue cannot serve gets no invented suggestion, only the constraint.
    dogs = "[2024-01-01] I'm really allergic to dogs, even short-haired ones."
    text = "".join(LLM.reply([ChatMessage("user", "What pet should we get for the kids?")], "", NOW, dogs))
    assert "can't suggest anything specific" in text and "allergic to dogs" in text
    zh = "".join(LLM.reply([ChatMessage("user", "推荐一款饮料")], "", NOW, "[2024-01-01] 医生说我不能喝含咖啡因的东西"))
    offered = zh.split("给你推荐几样饮品：", 1)[1].split("。", 1)[0]
    assert "咖啡" not in offered and "绿茶" not in offered and "热巧克力" not in offered


def test_reply_is_deterministic() -> None:
    assert reply_text("推荐点零食", MANGO_CONTEXT) == reply_text("推荐点零食", MANGO_CONTEXT)


def test_parse_memory_context() -> None:
    ctx = "[2024-01-01] a\n\n- [2024-02-02] b\nheader line"
    assert parse_memory_context(ctx) == [("2024-01-01", "a"), ("2024-02-02", "b"), ("", "header line")]


def test_extract_avoidances() -> None:
    found = extract_avoidances([
        "用户张三对芒果过敏，不要推荐任何芒果相关的食品", "我青霉素过敏", "我对花生和海鲜过敏",
        "I hate mushrooms but love tea", "I have a peanut allergy", "我不吃香菜",
    ])
    assert [(a.term, a.kind) for a in found] == [
        ("芒果", "allergy"), ("青霉素", "allergy"), ("花生", "allergy"), ("海鲜", "allergy"),
        ("mushrooms", "dislike"), ("peanut", "allergy"), ("香菜", "no_eat"),
    ]


# ---------------------------------------------------------------- propose_merges


def test_propose_merges_groups_near_duplicates_only() -> None:
    memories = [
        brief("a", "我对芒果过敏", 9), brief("b", "我对芒果过敏。", 8), brief("c", "我对芒果过敏，吃了会起疹子", 7),
        brief("d", "我住在北京", 6), brief("e", "I like tea", 5), brief("f", "I like teaching kids", 4),
        brief("g", "I love hiking in the mountains on weekends.", 3),
        brief("h", "I love hiking in the mountains on the weekends", 2),
        brief("i", "我吃辣", 1), brief("j", "我不吃辣", 1), brief("k", "我住在3号楼", 1), brief("l", "我住在5号楼", 1),
    ]
    proposals = LLM.propose_merges(memories)
    groups = [sorted(p.memory_ids) for p in proposals]
    assert groups == [["a", "b", "c"], ["g", "h"]]
    assert proposals[0].merged_text == "我对芒果过敏，吃了会起疹子"
    assert proposals[1].merged_text == "I love hiking in the mountains on the weekends"
    assert all(p.reason for p in proposals)
    ids = {m.memory_id for m in memories}
    assert all(set(p.memory_ids) <= ids and len(p.memory_ids) >= 2 for p in proposals)


def test_propose_merges_union_of_distinct_sentences() -> None:
    # A short fact and two different elaborations of it: one group, no fact lost or repeated.
    memories = [
        brief("x", "I live in Berlin. I have two cats.", 3),
        brief("y", "I live in Berlin", 2),
        brief("z", "I live in Berlin. I work at SAP.", 1),
    ]
    proposals = LLM.propose_merges(memories)
    assert len(proposals) == 1 and sorted(proposals[0].memory_ids) == ["x", "y", "z"]
    merged = proposals[0].merged_text
    assert merged == "I live in Berlin. I have two cats. I work at SAP."


def test_propose_merges_reordered_sentences() -> None:
    proposals = LLM.propose_merges([
        brief("y", "I live in Berlin. I have two cats. I work at SAP.", 2),
        brief("z", "I work at SAP. I live in Berlin.", 1),
    ])
    assert [sorted(p.memory_ids) for p in proposals] == [["y", "z"]]
    assert proposals[0].merged_text == "I live in Berlin. I have two cats. I work at SAP."


def test_propose_merges_nothing_to_merge() -> None:
    assert LLM.propose_merges([brief("a", "我喜欢猫"), brief("b", "I live in Paris")]) == []
    assert LLM.propose_merges([]) == []


def test_similarity_helpers() -> None:
    assert bigram_jaccard("我对芒果过敏", "我对芒果过敏！") == 1.0
    assert near_duplicate("I don't eat spicy food", "I eat spicy food") == (False, "")
    assert near_duplicate("I like tea", "I like teaching kids") == (False, "")


# ---------------------------------------------------------------- supersedes

SUPERSEDE_TRUE = [
    ("我搬到上海了", "我住在北京"),
    ("我现在住在杭州西湖区", "我家在北京海淀区"),
    ("I moved to Shanghai", "I live in Beijing"),
    ("My address is 5 Main St", "My address is 12 Oak Road"),
    ("我的手机号是13900001111", "我的手机号是13800001111"),
    ("我的手机号换成了[PHONE]", "我的手机号是[PHONE]"),
    ("My email is now b@x.com", "My email is a@x.com"),
    ("我现在在阿里巴巴工作", "我在腾讯工作"),
    ("I work at Microsoft now", "I work at Google"),
    ("我可以吃一点辣了", "我不吃辣"),
    ("I can eat a little spicy food now", "I don't eat spicy food"),
    ("I quit coffee", "I love coffee"),
    ("我戒了咖啡", "我喜欢喝咖啡"),
    ("我不喜欢猫了", "我喜欢猫"),
]
SUPERSEDE_FALSE = [
    ("我住在北京", "我住在北京"),  # same value
    ("I live in Beijing", "I live in Beijing."),
    ("我妈妈住在上海", "我住在北京"),  # different subject
    ("I love tea", "I love coffee"),  # different object
    ("我不吃香菜", "我不吃辣"),
    ("我住在上海", "我在腾讯工作"),  # different slots
    ("I hate coffee", "I hate coffee"),
    ("I lost my phone yesterday", "My phone number is [PHONE]"),
    ("我的手机号是[PHONE]", "我的手机号是[PHONE]"),  # masked, no change word
    ("我喜欢爬山", "我对芒果过敏"),
]


@pytest.mark.parametrize("newer,older", SUPERSEDE_TRUE, ids=[n for n, _ in SUPERSEDE_TRUE])
def test_supersedes_true(newer: str, older: str) -> None:
    assert LLM.supersedes(brief("new", newer, 0), brief("old", older, 30)) is True


@pytest.mark.parametrize("newer,older", SUPERSEDE_FALSE, ids=[n for n, _ in SUPERSEDE_FALSE])
def test_supersedes_false(newer: str, older: str) -> None:
    assert LLM.supersedes(brief("new", newer, 0), brief("old", older, 30)) is False


def test_supersedes_same_memory_is_false() -> None:
    m = brief("same", "我住在北京")
    assert LLM.supersedes(m, m) is False


# ---------------------------------------------------------------- may_contradict (conflict-check skip)

CHATTER = ["lol ok", "Where do I live?", "我的电话是多少？", "Remind me what my locker code is", "好的谢谢",
           "haha thanks!", "I lost my phone yesterday"]


@pytest.mark.parametrize("newer,older", SUPERSEDE_TRUE, ids=[n for n, _ in SUPERSEDE_TRUE])
def test_both_sides_of_every_superseding_pair_may_contradict(newer: str, older: str) -> None:
    assert LLM.may_contradict(newer) and LLM.may_contradict(older)


def test_may_contradict_false_is_exact_for_every_pair_either_way() -> None:
    """The skip may only drop pairs the rules would reject: a text that 'cannot contradict' is
    superseded by nothing and supersedes nothing, against every text here, in both orders."""
    texts = list(dict.fromkeys([t for pair in SUPERSEDE_TRUE + SUPERSEDE_FALSE for t in pair] + CHATTER))
    skipped = [t for t in texts if not LLM.may_contradict(t)]
    assert set(CHATTER) - {"I lost my phone yesterday"} <= set(skipped)
    for text in skipped:
        for other in texts:
            assert not LLM.supersedes(brief("a", text, 0), brief("b", other, 30)), (text, other)
            assert not LLM.supersedes(brief("a", other, 0), brief("b", text, 30)), (other, text)


def test_a_model_provider_and_its_fallback_may_always_contradict() -> None:
    from memory_core.llm.fallback import FallbackLLM
    from memory_core.llm.openai_provider import OpenAICompatibleLLM

    model = OpenAICompatibleLLM("http://127.0.0.1:9/v1", "", "any-model")  # never called here
    assert model.may_contradict("lol that movie was boring") is True
    assert FallbackLLM(model, LLM).may_contradict("lol that movie was boring") is True


@pytest.mark.parametrize("context,text,importance", [
    ("Do you have any food allergies?", "Yes, peanuts.", 5),
    ("Do you have any pets?", "Yes, two cats", 3),  # kept a year, like "my cats"
    ("你家有宠物吗？", "有两只猫", 3),
    ("你有什么忌口吗？", "香菜", 4),
    ("Nice! What's your favorite pizza?", "Pepperoni of course!", 3),
    ("How are you?", "Good, thanks", 2),  # the question names nothing worth keeping
    ("Do you have any food allergies?", "Thanks!", 1),  # small talk stays small talk
    ("I'm allergic to cats.", "Oh no, that's tough", 2),  # not a question: the other's fact is not the user's
    ("", "Yes, peanuts.", 2),
])
def test_a_reply_is_rated_with_the_question_it_answered(context: str, text: str, importance: int) -> None:
    assert LLM.analyze(text, NOW, context).importance == importance
    assert LLM.analyze(text, NOW).importance <= importance


def test_asked_question_is_the_last_sentence_only_when_it_is_a_question() -> None:
    from memory_core.llm.offline import asked_question

    assert asked_question("That's great, Caroline! What did you research?") == "What did you research?"
    assert asked_question("真棒！你养了什么宠物？ ") == "你养了什么宠物？"
    assert asked_question("I went hiking.") == "" and asked_question("") == ""


@pytest.mark.parametrize("context,text", [
    ("Where do you live these days?", "Lisbon, near the river"),
    ("你现在住在哪里？", "杭州西湖边"),
    ("So where do you work now?", "A small startup in Berlin"),
    ("What do you do for a living?", "I teach math at a high school"),
    ("And what's your phone number?", "It's 415-555-0199"),
])
def test_an_answer_to_a_slot_question_is_kept_like_the_slot(context: str, text: str) -> None:
    """The assistant asks in the second person; read as the user's own question it names a slot
    (home, work, phone, e-mail), and the answer is kept like "I live in Lisbon"."""
    analysis = LLM.analyze(text, NOW, context)
    assert (analysis.importance, analysis.memory_type) == (4, MemoryType.DECLARATIVE)
    assert LLM.analyze(text, NOW).importance < 4


@pytest.mark.parametrize("context,text", [
    ("Where do you live these days?", "I'd rather not say"),
    ("Where do you work these days?", "Same place as before"),
    ("你现在住在哪里？", "不告诉你"),
    ("Where do you live these days?", "Why do you ask?"),
])
def test_an_answer_that_gives_no_new_value_is_not_kept_like_the_slot(context: str, text: str) -> None:
    assert LLM.analyze(text, NOW, context).importance < 4


@pytest.mark.parametrize("old,old_context,new,new_context,expected", [
    ("Lisbon, near the river", "Where do you live these days?", "Porto", "Cool! Where do you live now?", True),
    ("I live in Lisbon", None, "It's Porto now", "Where do you live now?", True),
    ("Lisbon, near the river", "Where do you live these days?", "I live in Porto", None, True),
    ("Lisbon, near the river", "Where do you live these days?", "Lisbon", "Where do you live now?", False),
    ("Lisbon", "Where do you live these days?", "Lisbon, near the river", "Where do you live now?", True),  # said with more
    ("Lisbon, near the river", "Where do you live these days?", "Still Lisbon!", "Where do you live now?", False),
    ("Lisbon, near the river", "Where do you live these days?", "I'd rather not say", "Where do you live now?",
     False),
    ("Lisbon, near the river", "Where do you live these days?", "Porto", "Where did you grow up?", False),
    ("Lisbon, near the river", None, "Porto", None, False),  # no question: no slot, nothing to replace
    ("杭州西湖边", "你现在住在哪里？", "上海浦东", "那你现在住在哪？", True),
    ("阿里巴巴", "你在哪家公司上班？", "腾讯", "你现在在哪上班？", True),
    ("A small startup in Berlin", "So where do you work now?", "I work at Google now", None, True),
    ("I work at Google", None, "Lisbon", "Where do you live now?", False),  # another slot
])
def test_an_answer_to_a_slot_question_supersedes_like_the_statement(
        old: str, old_context: str | None, new: str, new_context: str | None, expected: bool) -> None:
    """Newer wins also when the fact was given as an answer: "Porto" to "Where do you live now?"
    replaces "Lisbon" said to the same question, or "I live in Lisbon"; a refusal, "still
    Lisbon" or another slot's answer replaces nothing."""
    older = MemoryBrief("old", old, NOW - timedelta(days=30), context=old_context)
    newer = MemoryBrief("new", new, NOW, context=new_context)
    assert LLM.supersedes(newer, older) is expected
    if expected:  # the conflict check looks at it at all
        assert LLM.may_contradict(new, new_context) and LLM.may_contradict(old, old_context)


def test_as_asked_of_me_turns_the_assistants_question_around() -> None:
    from memory_core.llm.offline import as_asked_of_me

    assert as_asked_of_me("Where do you live? Are you happy there? Is it yours?") == \
        "Where do I live? Are I happy there? Is it my?"  # grammar aside, the rules see the user
    assert as_asked_of_me("你住在哪里？您在哪工作？") == "我住在哪里？我在哪工作？"
    assert as_asked_of_me("You're new here?") == "I am new here?"


@pytest.mark.parametrize("question, asks", [
    ("周末请朋友来家里 推荐点喝的", True), ("周末请朋友来家里，推荐点喝的吧", True),
    ("we have friends over this weekend, suggest some drinks", True),
    ("我今天好累 不想动", False), ("I went hiking, it was great", False), ("I'm vegetarian, never suggest meat", False),
    # an opener that asks nothing (found in review), unless it is all there is
    ("你知道吗，我升职了", False), ("对了你知道吗 我下个月搬家", False), ("guess what, I got the job", False), ("你知道吗", True),
])
def test_a_request_typed_after_a_remark_still_asks(question: str, asks: bool) -> None:
    from memory_core.llm.offline.reply import _asks
    assert _asks(question) is asks
