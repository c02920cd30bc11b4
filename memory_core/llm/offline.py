"""The offline LLM: deterministic rules that do every LLM job without a model.

It is the default when no endpoint is configured and the fallback when one fails, so the
whole product (write pipeline, retrieval, chat, consolidation) works on a laptop with no
network. The rules are deliberately conservative: when unsure it keeps memories apart
(no merge, no supersede) and says less rather than inventing.

Memory-type rules (documented because the UI and the scorer rely on them):
- declarative: stable facts about the user, including health (always), address, contact,
  job, family, birthday, and likes/dislikes about things ("我不吃辣", "I love coffee");
- procedural: standing instructions about *how the assistant should respond or carry out
  tasks* — reply language/format/length/tone, how to address the user, and task settings
  such as seat choice when booking ("请用中文回答", "always answer briefly",
  "I prefer aisle seats");
- episodic: events anchored in time (a date or relative time word, or a past-event verb:
  "昨天去了…", "went hiking last Sunday"), including dated plans;
checked in that order after health: health > procedural > slot facts > episodic > declarative.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from datetime import datetime
from typing import Iterator, Sequence

from memory_core.llm.base import ChatMessage, LLMProvider, MemoryBrief, MergeProposal
from memory_core.text.chunking import split_sentences
from memory_core.text.entities import extract_entities
from memory_core.text.expansion import slots_asked
from memory_core.text.keywords import keyword_tokens, stem
from memory_core.text.lang import detect_language, is_cjk
from memory_core.text.timeparse import normalize_relative_dates, parse_time_range
from memory_core.types import Analysis, MemoryType
from memory_core.text.similarity import bigram_jaccard, normalize_for_compare

_I = re.IGNORECASE

# ---------------------------------------------------------------- importance rules

_SAFETY_RE = re.compile(
    r"过敏|哮喘|糖尿病|高血压|低血糖|心脏病|癫痫|抑郁症|癌症|胰岛素|青霉素|药物|吃药|服药|用药|处方|急救|肾上腺素|"
    r"怀孕|孕期|休克|乳糖不耐|紧急联系人|透析|心脏支架|"
    r"allerg|asthma|diabet|epi-?pen|anaphyla|epilep|insulin|penicillin|medication|prescri|blood pressure|"
    r"heart condition|seizure|pregnan|inhaler|celiac|coeliac|lactose intoleran|emergency contact|dialysis",
    _I,
)
_ADDRESS_RE = re.compile(
    r"住在|住址|地址|搬到|搬家|家在|\blive[sd]? in\b|\bliving in\b|\bmoved to\b|\baddress\b|\bhome is in\b", _I)
_CONTACT_RE = re.compile(
    r"\[(?:PHONE|EMAIL|ID_NUMBER|BANK_CARD)\]|电话|手机号|手机号码|邮箱|微信号|\bphone\b|\be-?mail\b|\bmobile number\b", _I)
_BIRTHDAY_RE = re.compile(r"生日|出生|\bbirthday\b|\bborn (?:on|in)\b", _I)
_FAMILY_RE = re.compile(
    r"妈妈|母亲|爸爸|父亲|老婆|妻子|老公|丈夫|女儿|儿子|孩子|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|家人|全家|一家人|女朋友|男朋友|"
    r"\b(?:wife|husband|son|daughter|mother|father|mom|mum|dad|kids?|children|sister|brother|grandma|grandpa|"
    r"grandmother|grandfather|girlfriend|boyfriend|fianc[ée]e?|partner|family)\b",
    _I,
)
_JOB_RE = re.compile(
    r"在[^，。,.!?！？\s]{1,12}(?:工作|上班|实习)|就职|任职|入职|跳槽|职业|我是(?:一名|一个)?[^，。]{0,6}"
    r"(?:工程师|医生|护士|老师|律师|设计师|经理|程序员|学生|会计|厨师)|"
    r"\bwork(?:s|ed|ing)? (?:at|for|as)\b|\bmy job\b|\bemployer\b|\bemployed\b|"
    r"\bI(?:'m| am) an? (?:\w+ )?(?:engineer|developer|doctor|nurse|teacher|student|lawyer|designer|manager|"
    r"programmer|scientist|accountant|writer|chef)\b",
    _I,
)
_FIRM_PREF_RE = re.compile(
    r"不吃|不喝|从不|从来不|绝不|绝对不|一定要|必须|讨厌|受不了|吃素|素食|戒了|不能吃|"
    r"\bnever\b|\balways\b|\bI hate\b|\bI prefer\b|\bcan'?t stand\b|\bI (?:don'?t|do not|can'?t|cannot) "
    r"(?:eat|drink|stand)\b|\bvegetarian\b|\bvegan\b|\bhalal\b|\bkosher\b|\bquit\b|\bgave up\b",
    _I,
)
_PLAN_RE = re.compile(
    r"计划|打算|准备|将要|要去|想去|下周|下个月|明天|明年|安排|约了|预约|"
    r"\bplan(?:s|ning|ned)?\b|\bgoing to\b|\bgonna\b|\bwill\b|\bnext (?:week|month|year)\b|\btomorrow\b|"
    r"\bschedule[d]?\b|\bappointment\b|\btrip\b",
    _I,
)
_HOBBY_RE = re.compile(
    r"喜欢|爱吃|爱喝|爱好|兴趣|热爱|最爱|迷上|常去|经常|"
    r"\blikes?\b|\bloved?\b|\bloves\b|\benjoy|\bhobby|\bhobbies\b|\bfavou?rite\b|\bfan of\b|\binto\b|\busually\b|\boften\b",
    _I,
)
# A dietary restriction stated in passing ("I can't have dairy") matters as much as "I don't eat
# pork": it is kept (4). Lasting self-disclosures (what the user is passionate about, has been
# doing for a while, has just taken up, keeps as pets, has worked with) live a year (3), like hobbies;
# without them such turns fell to 2 and expired after 180 days (LoCoMo: 95 gold turns, all 2).
_DIET_RE = re.compile(
    r"不能吃|不能喝|吃不了|喝不了|忌口|不耐受|"
    r"\bI (?:can'?t|cannot|can not) (?:have|eat|drink|tolerate)\b(?! been\b| to\b)|\bI(?:'m| am) (?:gluten|dairy|lactose)[- ]free\b",
    _I,
)
_INTEREST_RE = re.compile(
    r"热衷|着迷|养了|开始学|正在学|在学|学了[^，。]{0,6}(?:年|个月)|做志愿者|当志愿者|收藏|"
    r"\bpassionate\b|\bpassion\b|\bmy go-to\b|\bdrawn to\b|\bobsessed with\b|"
    r"\bI(?:'ve| have) (?:had|owned|kept) (?:them|it|him|her|my \w+) for\b|"
    r"\bI(?:'ve| have) been (?:\w+ )?(?:playing|learning|practi[cs]ing|doing|collecting|training|studying|"
    r"volunteering|working on|writing|painting|cooking|baking)\b|\bbeen (?:playing|learning|doing) (?:it|this|that) for\b|"
    r"\b(?:just )?(?:started|starting|took up|taking up|picked up) (?:doing |playing |learning |practi[cs]ing |taking )?"
    r"(?:a |an |my |some )?\w+(?:ing|yoga|classes|lessons|guitar|piano|drums)\b|"
    r"\bI(?:'m| am) (?:currently |now )?(?:learning|practi[cs]ing|training (?:in|for))\b|"
    r"\bI(?:'m| am) (?:currently |now )?(?:doing|playing) (?!fine|well|good|great|ok\b|okay|alright|better|worse|"
    r"nothing|something|anything|it\b|that\b|this\b|the dishes|my best)\w+|"
    r"\bI(?:'ve| have) worked with\b|\bmy (?:pets?|dogs?|cats?|snakes?|turtles?|hamsters?|rabbits?|parrots?|horses?)\b|"
    r"\b(?:I|we) (?:have|own|keep|got|adopted|rescued) (?:a |an |any |some |two |three |\d+ )?(?:\w+ )?"
    r"(?:pets?|dogs?|cats?|puppy|puppies|kittens?|snakes?|turtles?|hamsters?|rabbits?|parrots?|horses?)\b|"
    r"我(?:家)?(?:有|养)(?:[一二两三四五几\d](?:只|条|个))?(?:宠物|猫|狗|小猫|小狗)|"
    r"\bvolunteer(?:s|ed|ing)?\b|\bmy (?:\w+ )?collection\b|\bI collect\b|\bI play (?:the )?(?!with\b|along\b|around\b)[a-z]{3,}|"
    r"\bI(?:'m| am) (?:currently |still )?(?:working on|looking for|considering|trying to|participating in|"
    r"competing in)\b|\bthese days\b",
    _I,
)
_OPINION_RE = re.compile(
    r"觉得|感觉|认为|还行|还可以|一般般|不错|挺|有点|"
    r"\bthink\b|\bfeel\b|\bseems?\b|\bkind of\b|\bsort of\b|\bpretty\b|\bnot bad\b|\bmeh\b",
    _I,
)
_SMALL_TALK_RE = re.compile(
    r"(?:(?:你好|您好|嗨|哈+|呵+|嘿+|嘻+|谢谢(?:你|您|啦)?|多谢|感谢|好的|好吧|好|嗯+|哦+|噢+|收到|明白了?|知道了|"
    r"再见|拜拜|早上好|早安|晚安|午安|晚上好|没事|没关系|不客气|ok|okay|k|hi|hello|hey|yo|thanks|thank you|thx|ty|"
    r"lol|lmao|haha+|hehe+|bye|goodbye|see you|good (?:morning|night|evening|afternoon)|cool|nice|great|"
    r"got it|sure|yes|no|yep|yeah|nope|alright|you too|np|no problem|welcome|so much|very much|a lot|again|"
    r"all|everyone|guys|buddy|man|非常|真是|太|啦|呀|哦|了|你|您)\s*)+",
    _I,
)
_EPISODE_RE = re.compile(
    r"去了|去过|见了|见过|参加了|买了|看了|吃了|玩了|做了|完成了|回了|到了|办了|结婚了|毕业了|生了|发生了|旅行|出差|"
    r"\b(?:went|visited|met|attended|bought|saw|watched|ate|traveled|travelled|flew|finished|celebrated|"
    r"graduated|got married|had (?:a|an|dinner|lunch|breakfast))\b",
    _I,
)
# Emotional salience (MemoryBank, Generative Agents' "poignancy"): what moved the user is what a
# companion is expected to remember. Life milestones and strongly felt experiences are kept (4);
# an experience told with a feeling lives a year (3). Reactions to someone else's news ("so happy
# for you", "sorry to hear that") are not the user's experience and get no boost.
_MILESTONE_RE = re.compile(
    r"第一名|第二名|第三名|冠军|亚军|获奖|得奖|颁奖|奖学金|奖牌|奖状|获得了?[^，。,.]{0,10}(?:奖|名|称号)|赢得|考上|录取|"
    r"毕业|升职|晋升|加薪|结婚|订婚|婚礼|求婚|生了(?:宝宝|孩子|儿子|女儿)|出生了|去世|过世|葬礼|离婚|分手|住院|"
    r"手术|车祸|退休|失业|被裁|裁员|买了?房|领养|收养|第一次|"
    r"\bwon\b|\bwinning\b|\b(?:first|second|third) place\b|\bchampion(?:ship)?s?\b|\bawards?\b|\bawarded\b|"
    r"\bprize\b|\bscholarship\b|\bmedal\b|\bpromot(?:ed|ion)\b|\bgraduat(?:ed|ion)\b|\braise\b|"
    r"\bgot (?:accepted|admitted|engaged|married|hired|fired|divorced|adopted)\b|\bwedding\b|\bproposed\b|"
    r"\bpassed away\b|\bdied\b|\bfuneral\b|\bbroke up\b|\bdivorc|\bhospital(?:ised|ized)?\b|\bsurgery\b|"
    r"\baccident\b|\bretir(?:ed|ement)\b|\blaid off\b|\badopt(?:ed|ion)\b|\bnew job\b|"
    r"\bbought (?:a|our|my) (?:house|home|flat|apartment)\b|\bfirst time\b",
    _I,
)
_EMOTION_WORDS = (
    r"开心|高兴|快乐|喜悦|幸福|兴奋|激动|感动|自豪|骄傲|满足|欣慰|难过|伤心|悲伤|痛苦|失落|沮丧|孤独|害怕|恐惧|"
    r"紧张|焦虑|担心|生气|愤怒|委屈|崩溃|后悔|尴尬|失望|心碎|绝望|惊喜|感激|"
    r"happy|glad|joyful|thrilled|excited|proud|grateful|sad|upset|heartbroken|devastated|"
    r"lonely|scared|afraid|terrified|nervous|anxious|worried|angry|furious|frustrated|disappointed|"
    r"embarrassed|ashamed|overwhelmed|stressed|miserable|ecstatic|overjoyed|delighted|stoked|struggling|peaceful|motivated|motivating|inspired|"
    # Parity: the English and Chinese names of the same feelings (a zh/en parallel test set).
    r"恼火|烦躁|嫉妒|吃醋|如释重负|不安(?!全)|discouraged|annoyed|relieved|uneasy|jealous|elated|regret(?:ful)?|wronged"
)
_EMOTION_RE = re.compile(rf"(?:{_EMOTION_WORDS})", _I)
_INTENSE_EMOTION_RE = re.compile(
    # Not 很: a Chinese adjective takes it by default ("我很开心" is "I'm happy"), so it marks no
    # strength; "好开心" / "真开心" ("so happy") do.
    rf"(?:非常|特别|十分|极其|无比|超级|太|好|真)(?:的)?(?:{_EMOTION_WORDS})|"
    rf"(?:急|气|吓|烦|累|难受|伤心|开心|高兴)死(?:我|人)?了|"
    rf"\b(?:very|so|really|extremely|incredibly|deeply|truly|super|totally)\s+(?:{_EMOTION_WORDS})\b|"
    rf"(?:{_EMOTION_WORDS})(?:极了|得不得了|不已)|"
    r"心碎|崩溃|痛哭|狂喜|欣喜若狂|伤心欲绝|玩得(?:很|非常|特别|超级?)?(?:尽兴|嗨)|"
    r"\b(?:heartbroken|devastated|terrified|furious|ecstatic|overjoyed|thrilled|elated)\b|\bover the moon\b|"
    # English says "very happy" as often with an idiom as with an adverb: "had a great time" is
    # what "玩得非常开心" is translated to, so it counts like its Chinese twin.
    r"\bhad (?:a|an|such a|the most) (?:\w+ )?(?:great|wonderful|fantastic|amazing|brilliant|lovely|fabulous|"
    r"awesome|incredible|marvell?ous|terrific|fun) time\b|\bhad (?:a|an|such a) (?:\w+ )?blast\b|"
    r"\bhad (?:so much|such|a lot of|lots of|tons of|great|loads of) fun\b",
    _I,
)
_REACTION_RE = re.compile(
    rf"(?:为|替)(?:你|他|她|你们|他们)(?:感到)?(?:{_EMOTION_WORDS})|听到[^，。,.]{{0,12}}(?:{_EMOTION_WORDS})|"
    rf"(?:{_EMOTION_WORDS})[^，。,.！!]{{0,4}}(?:见到|看到|认识)(?:你|您)|(?:见到|看到|认识)(?:你|您)[^，。,.！!]{{0,4}}(?:{_EMOTION_WORDS})|"
    rf"\b(?:{_EMOTION_WORDS}) (?:for|of) (?:you|him|her|them|u|y'all)\b|\b(?:{_EMOTION_WORDS}) to (?:hear|know)\b|"
    # "happy to see you / that" answers someone; "happy to see the pandas" is the user's own moment.
    rf"\b(?:{_EMOTION_WORDS}) to see (?:you|u|that|this|it|how|your|him|her|them|everyone)\b|"
    rf"\b(?:{_EMOTION_WORDS}) (?:that )?(?:you|u)\b|\bsorry (?:to|for|about)\b|\bcongrat|"
    r"\b(?:you|u|y'all)(?: guys| all)?(?: must| probably| really| surely)?(?: have|'ve)? had (?:a|an|such|so|the|lots|loads|tons|great)\b",
    _I,
)


def _salience(text: str) -> int:
    """4 for a life milestone or a strongly felt experience, 3 for a felt one, 0 otherwise."""
    if _REACTION_RE.search(text):
        return 0
    if _MILESTONE_RE.search(text) or _INTENSE_EMOTION_RE.search(text):
        return 4
    return 3 if _EMOTION_RE.search(text) else 0


_PROCEDURAL_RES = (
    re.compile(
        r"(?:请|以后|今后|每次|总是|始终|一律|记得|不要|别)[^。！？!?]{0,12}"
        r"(?:回答|回复|答复|称呼我|叫我|提醒我|格式|语气|简短|简洁|详细|用中文|用英文|用英语|说话|翻译|预订|订票|订酒店)"
    ),
    re.compile(r"用(?:简体|繁体)?(?:中文|英文|英语|日语)(?:回答|回复|交流|说|和我|跟我)"),
    re.compile(r"(?:回答|回复)(?:时|的时候)?(?:请|要|尽量)?(?:简短|简洁|详细|用)"),
    re.compile(r"靠窗|靠过道|靠走道|叫我[^，。,.]{1,6}|称呼我"),
    re.compile(
        r"\b(?:please|always|never|from now on|in (?:the )?future|going forward|next time|when you)\b[^.!?]{0,40}"
        r"\b(?:answer|reply|replies|respond|responses?|write|call me|address me|format|summari[sz]e|explain|"
        r"remind me|book|translate|speak|talk to me|use (?:english|chinese|metric|bullet))\b",
        _I,
    ),
    re.compile(
        r"\b(?:answer|reply|respond|talk to me|write)\b[^.!?]{0,20}\b(?:in (?:english|chinese|mandarin)|briefly|"
        r"concisely|in detail|in bullet|short)\b",
        _I,
    ),
    re.compile(r"\bcall me\b|\b(?:aisle|window) seats?\b|\bwhen (?:booking|ordering|you book)\b|"
               r"\bI prefer (?:short|brief|concise|detailed|bullet|answers|replies|responses)\b", _I),
)


def _is_small_talk(text: str) -> bool:
    stripped = re.sub(r"[\s\W_]+", " ", text, flags=re.UNICODE).strip()
    if not stripped:
        return True
    return _SMALL_TALK_RE.fullmatch(stripped + " ") is not None or not keyword_tokens(text)


def _is_procedural(text: str) -> bool:
    return any(r.search(text) for r in _PROCEDURAL_RES)


def importance_of(text: str, now: datetime) -> int:
    """1-5 by rules: health/safety 5; slots, family, job, firm preferences, dietary restrictions,
    instructions, life milestones and strongly felt experiences 4; plans, dated events, hobbies,
    lasting interests, felt experiences 3;
    opinions and other content 2; small talk 1."""
    if _SAFETY_RE.search(text):
        return 5
    if _is_small_talk(text):
        return 1
    if any(r.search(text) for r in (_ADDRESS_RE, _CONTACT_RE, _BIRTHDAY_RE, _FAMILY_RE, _JOB_RE, _FIRM_PREF_RE,
                                    _DIET_RE)):
        return 4
    if _is_procedural(text):
        return 4
    salience = _salience(text)
    if salience:
        return salience
    if _PLAN_RE.search(text) or _HOBBY_RE.search(text) or _INTEREST_RE.search(text) or _EPISODE_RE.search(text):
        return 3
    if _OPINION_RE.search(text):
        return 2
    if parse_time_range(text, now) is not None:
        return 3
    return 2


_QUESTION_END = re.compile(r"[?？]\s*$")


_SECOND_PERSON = (
    (re.compile(r"\byou(?:'re| are)\b", re.IGNORECASE), "I am"),
    (re.compile(r"\byour(?:s)?\b", re.IGNORECASE), "my"),
    (re.compile(r"\byou\b", re.IGNORECASE), "I"),
    (re.compile(r"你们|您|你"), "我"),
)


def as_asked_of_me(question: str) -> str:
    """The question in the user's own words ("Where do you live?" -> "Where do I live?"), so the
    rules written for what users say about themselves can read what the assistant asked them."""
    for pattern, replacement in _SECOND_PERSON:
        question = pattern.sub(replacement, question)
    return question


def asked_question(context: str) -> str:
    """The question that ``context`` ends with ("Cool! What's your favourite pizza?" -> its last
    sentence), or "" when it ends with none: only a question makes a reply's few words a fact."""
    text = context.strip()
    if not text or not _QUESTION_END.search(text):
        return ""
    sentences = split_sentences(text)
    return sentences[-1].strip() if sentences else text


def memory_type_of(text: str, now: datetime) -> MemoryType:
    """Health > procedural > slot facts > episodic > declarative (see the module docstring)."""
    if _SAFETY_RE.search(text):
        return MemoryType.DECLARATIVE
    if _is_procedural(text):
        return MemoryType.PROCEDURAL
    if any(r.search(text) for r in (_ADDRESS_RE, _CONTACT_RE, _BIRTHDAY_RE, _FAMILY_RE, _JOB_RE)):
        return MemoryType.DECLARATIVE
    if parse_time_range(text, now) is not None or _EPISODE_RE.search(text):
        return MemoryType.EPISODIC
    return MemoryType.DECLARATIVE


def summarize(text: str, limit: int = 120) -> str:
    """The first sentence, cut to ``limit`` characters."""
    sentences = split_sentences(text)
    first = sentences[0] if sentences else text.strip()
    first = " ".join(first.split())
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


# ---------------------------------------------------------------- query rewriting

_ZH_FILLER_HEAD = re.compile(
    r"^(?:请问一下|请问|请你|麻烦你|麻烦|帮我|帮忙|你能不能|能不能|可不可以|你可以|可以|你知道|你还记得|还记得|记不记得|"
    r"告诉我|查一下|查查|找一下|找找|看一下|看看|想知道|我想知道|一下|请)+"
)
_ZH_FILLER_TAIL = re.compile(r"(?:吗|呢|吧|呀|啊|嘛)?[？?。！!～~\s]*$")
_EN_FILLER_HEAD = re.compile(
    r"^(?:(?:hey|hi|hello|ok|okay|so|um|well)[,!.\s]+)*"
    r"(?:(?:can|could|would|will) you (?:please )?(?:tell me|remind me|let me know|check|look up|find|help me (?:find|remember))?\s*"
    r"|do you (?:remember|know)\s*|i (?:want|would like|'d like) to know\s*|tell me\s*|remind me\s*)?",
    _I,
)
_EN_PLEASE = re.compile(r"[,\s]*\bplease\b[,\s]*", _I)


def rewrite_query_text(query: str, now: datetime) -> str:
    """Relative dates made absolute, polite filler removed; never empty."""
    original = query.strip()
    text = normalize_relative_dates(original, now)
    if detect_language(text) == "zh":
        text = _ZH_FILLER_HEAD.sub("", text)
        text = _ZH_FILLER_TAIL.sub("", text)
    text = _EN_PLEASE.sub(" ", text).strip()
    text = _EN_FILLER_HEAD.sub("", text)
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s+([?!.,;:])", r"\1", text).strip(" ,，")
    if not re.search(r"\w", text):
        return original or query
    return text


# ---------------------------------------------------------------- reply: avoid-list and catalog


@dataclass(frozen=True)
class Avoid:
    """Something the memories say to keep away from, and why (a key of ``_REASONS``)."""

    term: str
    kind: str

    def shown_term(self, lang: str) -> str:
        """The term in the reply's language when the glossary knows it."""
        if lang == "zh":
            return self.term if is_cjk(self.term[0]) else (_from_english(self.term) or self.term)
        return _GLOSSARY.get(self.term, self.term)

    def reason(self, lang: str) -> str:
        zh, en = _REASONS[self.kind]
        return (zh if lang == "zh" else en).format(t=self.shown_term(lang))


@dataclass(frozen=True)
class CatalogItem:
    zh: str
    en: str
    tags: frozenset[str]


def _item(zh: str, en: str, tags: str) -> CatalogItem:
    return CatalogItem(zh, en, frozenset(tags.split()))


SNACKS: tuple[CatalogItem, ...] = (
    _item("芒果干", "dried mango", "芒果 mango 水果 fruit 甜 sweet"),
    _item("原味混合坚果", "mixed nuts", "坚果 nut nuts 花生 peanut peanuts 杏仁 almond"),
    _item("无糖酸奶", "plain yogurt", "酸奶 yogurt 牛奶 milk 乳制品 dairy 乳糖 lactose"),
    _item("海苔片", "seaweed crisps", "海苔 seaweed"),
    _item("苹果脆片", "apple chips", "苹果 apple 水果 fruit"),
    _item("黑巧克力", "dark chocolate", "巧克力 chocolate 甜 sweet"),
    _item("盐水毛豆", "salted edamame", "毛豆 edamame 大豆 soy"),
    _item("芒果布丁", "mango pudding", "芒果 mango 牛奶 milk 乳制品 dairy 甜 sweet"),
    _item("香蕉", "bananas", "香蕉 banana 水果 fruit"),
    _item("全麦饼干", "whole-wheat crackers", "小麦 wheat 麸质 gluten 饼干 cracker"),
    _item("烤红薯", "roasted sweet potato", "红薯 sweet-potato"),
    _item("辣条", "spicy gluten strips", "辣 spicy chili 麸质 gluten"),
    _item("鱿鱼丝", "shredded squid", "鱿鱼 squid 海鲜 seafood"),
)
MEALS: tuple[CatalogItem, ...] = (
    _item("芒果糯米饭", "mango sticky rice", "芒果 mango 甜 sweet"),
    _item("番茄炒蛋", "tomato and egg stir-fry", "鸡蛋 egg eggs 番茄 tomato"),
    _item("清蒸鱼", "steamed fish", "鱼 fish 海鲜 seafood"),
    _item("宫保鸡丁", "kung pao chicken", "花生 peanut peanuts 坚果 nut nuts 辣 spicy chili 鸡肉 chicken"),
    _item("蔬菜沙拉", "garden salad", "蔬菜 vegetable 沙拉 salad"),
    _item("牛肉面", "beef noodle soup", "牛肉 beef 面 noodle noodles 小麦 wheat 麸质 gluten"),
    _item("麻婆豆腐", "mapo tofu", "豆腐 tofu 大豆 soy 辣 spicy chili"),
    _item("寿司", "sushi", "鱼 fish 海鲜 seafood 米饭 rice"),
    _item("香菇青菜", "bok choy with mushrooms", "蔬菜 vegetable 香菇 mushroom"),
)
DRINKS: tuple[CatalogItem, ...] = (
    _item("芒果奶昔", "mango smoothie", "芒果 mango 牛奶 milk 乳制品 dairy"),
    _item("绿茶", "green tea", "茶 tea 咖啡因 caffeine"),
    _item("咖啡", "coffee", "咖啡 coffee 咖啡因 caffeine"),
    _item("柠檬水", "lemonade", "柠檬 lemon"),
    _item("豆浆", "soy milk", "豆浆 大豆 soy"),
    _item("热巧克力", "hot chocolate", "巧克力 chocolate 牛奶 milk 乳制品 dairy"),
)
ACTIVITIES: tuple[CatalogItem, ...] = (
    _item("去公园散步", "a walk in the park", "散步 walking walk 户外 outdoor"),
    _item("爬山", "hiking", "爬山 hiking hike 户外 outdoor"),
    _item("看一场电影", "watching a movie", "电影 movie film"),
    _item("读一本好书", "reading a good book", "读书 阅读 reading book"),
    _item("游泳", "swimming", "游泳 swimming swim"),
    _item("做瑜伽", "yoga", "瑜伽 yoga"),
    _item("逛博物馆", "visiting a museum", "博物馆 museum"),
    _item("骑自行车", "cycling", "骑车 自行车 cycling bike"),
)

# Enough of a glossary to explain an avoidance in the other language.
_GLOSSARY = {
    "芒果": "mango", "花生": "peanuts", "坚果": "nuts", "海鲜": "seafood", "鱼": "fish", "虾": "shrimp",
    "牛奶": "milk", "乳制品": "dairy", "鸡蛋": "eggs", "辣": "spicy food", "香菜": "cilantro", "咖啡": "coffee",
    "酒": "alcohol", "小麦": "wheat", "麸质": "gluten", "大豆": "soy", "巧克力": "chocolate", "猪肉": "pork",
    "牛肉": "beef", "羊肉": "lamb", "甜食": "sweets", "爬山": "hiking", "游泳": "swimming",
}
_GLOSSARY_EN = {v: k for k, v in _GLOSSARY.items()}
_GLOSSARY_EN.update({" ".join(stem(w) for w in v.split()): k for k, v in _GLOSSARY.items()})


def _from_english(term: str) -> str | None:
    low = term.lower()
    return _GLOSSARY_EN.get(low) or _GLOSSARY_EN.get(" ".join(stem(w) for w in low.split()))

_TERM_STOP = re.compile(r"[，。,.;；!！?？、\n]")
_ZH_TERM_SPLIT = re.compile(r"和|与|及|以及|或者|或|跟|、|/")
_ZH_TERM_TRIM_HEAD = re.compile(r"^(?:任何|所有|一切|吃|喝|的|太|很|那么|这么|一点)+")
_ZH_TERM_TRIM_TAIL = re.compile(r"(?:相关的食品|相关的东西|相关食品|相关的|相关|的食品|的食物|的东西|食品|食物|东西|类|了|的|啦|呢|哦)+$")
_EN_TERM_SPLIT = re.compile(r"\s*(?:,|\band\b|\bor\b|/)\s*", _I)
_EN_TERM_TRIM = re.compile(r"^(?:any|all|the|a|an|some|eating|drinking|to eat|to drink)\s+|\s+(?:anymore|at all|now|either|too|any more)$", _I)

_ZH_AVOID_RES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"对([^，。,.;；!！?？\s]{1,12}?)过敏"), "allergy"),
    (re.compile(r"([一-龥]{1,8})过敏"), "allergy_bare"),
    (re.compile(r"不(?:能|敢|可以)吃([^，。,.;；!！?？\s]{1,10})"), "cannot"),
    (re.compile(r"不(?:爱)?吃([^，。,.;；!！?？\s]{1,10})"), "no_eat"),
    (re.compile(r"不(?:爱)?喝([^，。,.;；!！?？\s]{1,10})"), "no_drink"),
    (re.compile(r"(?:不喜欢|讨厌|受不了|忌口)(?:吃|喝)?([^，。,.;；!！?？\s]{1,10})"), "dislike"),
    (re.compile(r"戒(?:了|掉了?)([^，。,.;；!！?？\s]{1,8})"), "quit"),
    (re.compile(r"不要(?:给我|再)?推荐(?:任何)?([^，。,.;；!！?？\s]{1,12})"), "no_recommend"),
)
_EN_AVOID_RES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\ballergic to ([a-z][a-z \-,]*)", _I), "allergy"),
    (re.compile(r"\b(?:allergy|allergies|intolerance) to ([a-z][a-z \-,]*)", _I), "allergy"),
    (re.compile(r"\b([a-z]+) (?:allergy|allergies)\b", _I), "allergy"),
    (re.compile(r"\b(?:don'?t|do not|never|can'?t|cannot|won'?t) (?:eat|have)\s+([a-z][a-z \-,]*)", _I), "no_eat"),
    (re.compile(r"\b(?:don'?t|do not|never|can'?t|cannot|won'?t) drink\s+([a-z][a-z \-,]*)", _I), "no_drink"),
    (re.compile(r"\b(?:hate|dislike|avoid|can'?t stand|don'?t like|do not like)\s+([a-z][a-z \-,]*)", _I), "dislike"),
    (re.compile(r"\b(?:quit|gave up|stopped (?:eating|drinking))\s+([a-z][a-z \-,]*)", _I), "quit"),
    (re.compile(r"\b(?:don'?t|do not|never) recommend (?:me )?(?:any )?([a-z][a-z \-,]*)", _I), "no_recommend"),
)
_REASONS = {
    "allergy": ("你对{t}过敏", "you're allergic to {t}"),
    "cannot": ("你不能吃{t}", "you can't eat {t}"),
    "no_eat": ("你不吃{t}", "you don't eat {t}"),
    "no_drink": ("你不喝{t}", "you don't drink {t}"),
    "dislike": ("你不喜欢{t}", "you don't like {t}"),
    "quit": ("你戒了{t}", "you quit {t}"),
    "no_recommend": ("你说过不要推荐{t}", "you asked me not to recommend {t}"),
}
_EN_STOP_TERMS = frozenset("it that this them food foods stuff things anything something much".split())
_ZH_STOP_TERMS = frozenset("我 你 他 她 它 东西 什么 用户 有 是 也 都 很 对".split())


def _zh_terms(raw: str) -> list[str]:
    terms: list[str] = []
    for part in _ZH_TERM_SPLIT.split(raw):
        part = _ZH_TERM_TRIM_TAIL.sub("", _ZH_TERM_TRIM_HEAD.sub("", part.strip()))
        part = part.lstrip("我你他她对有是也都很")
        if part and part not in _ZH_STOP_TERMS and len(part) <= 6:
            terms.append(part)
    return terms


def _en_terms(raw: str) -> list[str]:
    raw = re.split(r"\b(?:but|because|so|since|which|when|if|though|although|as)\b|[.;!?]", raw, maxsplit=1, flags=_I)[0]
    terms: list[str] = []
    for part in _EN_TERM_SPLIT.split(raw):
        part = part.strip().lower()
        for _ in range(3):
            part = _EN_TERM_TRIM.sub("", part).strip()
        words = part.split()
        if not words or len(words) > 3 or part in _EN_STOP_TERMS:
            continue
        terms.append(part)
    return terms


def extract_avoidances(texts: Sequence[str]) -> list[Avoid]:
    """Allergies, dislikes and "don't recommend X" found in memory texts, first mention first."""
    found: list[Avoid] = []
    seen: set[str] = set()

    def add(term: str, kind: str) -> None:
        key = term.lower()
        if key in seen:
            return
        seen.add(key)
        found.append(Avoid(term, kind))

    for text in texts:
        for regex, kind in _ZH_AVOID_RES:
            for m in regex.finditer(text):
                raw = m.group(1)
                if kind == "allergy_bare":  # "我芒果过敏"; "…对X过敏" is the rule above
                    raw = raw.split("对")[-1].lstrip("我你他她有是也都很")
                    if not 1 <= len(raw) <= 4:
                        continue
                    kind = "allergy"
                for term in _zh_terms(raw):
                    add(term, kind)
        for regex, kind in _EN_AVOID_RES:
            for m in regex.finditer(text):
                for term in _en_terms(m.group(1)):
                    add(term, kind)
    return found


def _term_keys(term: str) -> set[str]:
    """Forms of an avoided term to look for: itself, its stems, its glossary translation."""
    low = term.lower()
    keys = {low}
    if low in _GLOSSARY:
        keys.add(_GLOSSARY[low])
    if _from_english(low):
        keys.add(_from_english(low) or "")
    for word in re.findall(r"[a-z]+", low):
        if word not in ("food", "foods", "products", "stuff"):
            keys.add(stem(word))
    return {k for k in keys if k}


def item_conflicts(item: CatalogItem, avoid: Avoid) -> bool:
    """True when ``item`` contains or belongs to the avoided thing (in either language)."""
    keys = _term_keys(avoid.term)
    names = {item.zh.lower(), item.en.lower()} | {t.lower() for t in item.tags}
    en_words = {stem(w) for name in names for w in re.findall(r"[a-z]+", name)}
    for key in keys:
        if re.search(r"[a-z]", key):
            key_words = [stem(w) for w in re.findall(r"[a-z]+", key)]
            if key_words and all(w in en_words for w in key_words):
                return True
        elif any(key in name or (name and is_cjk(name[0]) and name in key) for name in names):
            return True
    return False


def choose_items(catalog: Sequence[CatalogItem], avoids: Sequence[Avoid], count: int = 4) -> tuple[list[CatalogItem], list[Avoid]]:
    """The first ``count`` catalog items that conflict with no avoidance, and the avoidances that removed something."""
    chosen: list[CatalogItem] = []
    used: list[Avoid] = []
    for item in catalog:
        blockers = [a for a in avoids if item_conflicts(item, a)]
        for a in blockers:
            if a not in used:
                used.append(a)
        if not blockers and len(chosen) < count:
            chosen.append(item)
    return chosen, used


_RECOMMEND_RE = re.compile(
    r"推荐|吃什么|喝什么|零食|小吃|建议|有什么好|玩什么|做什么|去哪|"
    r"\brecommend|\bsuggest|\bsnacks?\b|what should i (?:eat|drink|do|have)|\bideas?\b|what to (?:eat|drink|do)",
    _I,
)
_SNACK_RE = re.compile(r"零食|小吃|点心|\bsnacks?\b", _I)
_DRINK_RE = re.compile(r"喝|饮料|饮品|\bdrinks?\b|\bbeverages?\b", _I)
_ACTIVITY_RE = re.compile(r"玩|做什么|活动|去哪|周末干|\bactivit|\bthings to do\b|\bwhat (?:should|can) i do\b|\bfun\b|\bweekend\b", _I)
_MEAL_RE = re.compile(r"吃|饭|餐|菜|好吃|美食|\beat\b|\bfood\b|\bdinner\b|\blunch\b|\bbreakfast\b|\bmeals?\b|\brestaurant|\bdish", _I)

_CONTEXT_LINE_RE = re.compile(r"^\s*(?:[-*•]\s*)?\[(\d{4}-\d{2}-\d{2})\]\s*(.+?)\s*$")


def parse_memory_context(memory_context: str) -> list[tuple[str, str]]:
    """(date, text) pairs from ``[YYYY-MM-DD] text`` lines; undated non-empty lines get date ""."""
    out: list[tuple[str, str]] = []
    for line in (memory_context or "").splitlines():
        m = _CONTEXT_LINE_RE.match(line)
        if m:
            out.append((m.group(1), m.group(2)))
        elif line.strip():
            out.append(("", line.strip()))
    return out


def _rank_memories(memories: list[tuple[str, str]], question: str) -> list[tuple[str, str]]:
    """Memories by keyword overlap with the question (stable: ties keep the given order)."""
    q = set(keyword_tokens(question))
    scored = [(-len(q & set(keyword_tokens(text))), i, (d, text)) for i, (d, text) in enumerate(memories)]
    return [m for _, _, m in sorted(scored)]


def _stream_chunks(text: str, lang: str) -> Iterator[str]:
    """A few words (English) or a few characters (Chinese) at a time; chunks concatenate to ``text``."""
    pieces = re.findall(r"[A-Za-z0-9'’\-.:/\[\]]+\s*|\s+|.", text, flags=re.DOTALL)
    size = 3 if lang == "en" else 6
    for i in range(0, len(pieces), size):
        yield "".join(pieces[i : i + size])


def compose_reply(question: str, memory_context: str) -> str:
    """The full offline reply text (``OfflineLLM.reply`` streams it)."""
    lang = detect_language(question) if question.strip() else detect_language(memory_context)
    zh = lang == "zh"
    memories = parse_memory_context(memory_context)
    parts: list[str] = ["（离线模式）" if zh else "(Offline mode) "]
    if not memories:
        parts.append("我还没有记住关于你的任何事情。" if zh else "I don't have anything remembered about you yet. ")
    else:
        parts.append("我记得：\n" if zh else "Here is what I remember:\n")
        for date_str, text in _rank_memories(memories, question)[:5]:
            prefix = f"{date_str}：" if zh and date_str else (f"{date_str}: " if date_str else "")
            parts.append(f"- {prefix}{text}\n")

    if _RECOMMEND_RE.search(question):
        avoids = extract_avoidances([t for _, t in memories])
        if _SNACK_RE.search(question):
            catalog, what_zh, what_en = SNACKS, "零食", "snacks"
        elif _DRINK_RE.search(question):
            catalog, what_zh, what_en = DRINKS, "饮品", "drinks"
        elif _ACTIVITY_RE.search(question):
            catalog, what_zh, what_en = ACTIVITIES, "活动", "activities"
        elif _MEAL_RE.search(question):
            catalog, what_zh, what_en = MEALS, "菜", "dishes"
        else:
            catalog, what_zh, what_en = ACTIVITIES, "活动", "activities"
        items, used = choose_items(catalog, avoids)
        if zh:
            parts.append(f"给你推荐几样{what_zh}：" + "、".join(i.zh for i in items) + "。")
            for a in used:
                parts.append(f"已避开{a.shown_term('zh')}（{a.reason('zh')}）。")
        else:
            parts.append(f"Some {what_en} you might like: " + ", ".join(i.en for i in items) + ". ")
            for a in used:
                parts.append(f"I left out {a.shown_term('en')} ({a.reason('en')}). ")
    elif memories:
        parts.append("没有连接语言模型，我只能列出相关的记忆。" if zh
                     else "No language model is connected, so I can only list the relevant memories.")
    return "".join(parts).rstrip()


# ---------------------------------------------------------------- merges


def _contains(outer: str, inner: str) -> bool:
    """``inner`` occurs in ``outer`` without cutting a Latin word in half."""
    if len(inner.replace(" ", "")) < 4:
        return False
    start = outer.find(inner)
    while start >= 0:
        end = start + len(inner)
        left_ok = start == 0 or not (outer[start - 1].isascii() and outer[start - 1].isalnum() and inner[0].isascii())
        right_ok = end == len(outer) or not (outer[end].isascii() and outer[end].isalnum() and inner[-1].isascii())
        if left_ok and right_ok:
            return True
        start = outer.find(inner, start + 1)
    return False


_NEGATION_RE = re.compile(r"不|没|别|未|无|非|\bnot\b|n't|\bnever\b|\bno\b|\bnone\b|\bquit\b|\bstopped\b", _I)


def _polarity(norm: str) -> int:
    return len(_NEGATION_RE.findall(norm)) % 2


def _numbers(norm: str) -> set[str]:
    return set(re.findall(r"\d+", norm))


def near_duplicate(a: str, b: str, threshold: float = 0.8) -> tuple[bool, str]:
    """Whether two memory texts say the same thing, and how we know."""
    na, nb = normalize_for_compare(a), normalize_for_compare(b)
    if not na or not nb:
        return False, ""
    if na == nb:
        return True, "identical after normalisation"
    if _polarity(na) != _polarity(nb):
        return False, ""
    short, long_ = (na, nb) if len(na) <= len(nb) else (nb, na)
    if _contains(long_, short):
        return True, "one text contains the other"
    short_text, long_text = (a, b) if len(na) <= len(nb) else (b, a)
    short_sentences = [normalize_for_compare(x) for x in split_sentences(short_text)]
    if len(short_sentences) > 1 and all(x and _contains(long_, x) for x in short_sentences):
        return True, "every sentence of one text is in the other"
    if _numbers(na) != _numbers(nb):
        return False, ""
    score = bigram_jaccard(a, b)
    if score >= threshold:
        return True, f"character-bigram Jaccard {score:.2f}"
    return False, ""


def _merged_text(members: Sequence[MemoryBrief]) -> str:
    """The longest member if it covers the rest, else the union of distinct sentences."""
    ordered = sorted(members, key=lambda m: (m.created_at, m.memory_id))
    longest = max(ordered, key=lambda m: (len(normalize_for_compare(m.content)), m.created_at))
    kept: list[str] = []
    for m in ordered:
        for sentence in split_sentences(m.content) or [m.content.strip()]:
            ns = normalize_for_compare(sentence)
            if not ns:
                continue
            if any(near_duplicate(sentence, k)[0] and len(normalize_for_compare(k)) >= len(ns) for k in kept):
                continue
            kept = [k for k in kept if not (near_duplicate(sentence, k)[0] and len(normalize_for_compare(k)) < len(ns))]
            kept.append(sentence)
    longest_sentences = {normalize_for_compare(s) for s in split_sentences(longest.content)}
    if all(normalize_for_compare(k) in longest_sentences for k in kept):
        return longest.content.strip()
    joined = ""
    for k in kept:
        if joined and not re.search(r"[。！？!?.;；]$", joined):
            joined += "。" if is_cjk(joined[-1]) else "."
        joined += ("" if not joined or is_cjk(k[0]) else " ") + k
    return joined


# ---------------------------------------------------------------- supersede

_STOP_VALUE = r"[，。,.;；!！?？\n]|\s(?:and|but|now|since|because)\b|(?:了|啦|呢)(?=[，。,.;；!！?？]|$)"


@dataclass(frozen=True)
class _Slot:
    name: str
    pattern: re.Pattern[str]


_SLOTS: tuple[_Slot, ...] = (
    _Slot("address", re.compile(
        r"(?:住在|住址是?|地址是?|搬到了?|搬家到|家在|\blive[sd]? in|\bliving in|\bmoved to|\baddress is|\bhome is in)\s*(?P<v>.+)", _I)),
    _Slot("phone", re.compile(
        r"(?:手机号码?|电话号码?|联系电话|手机|电话)\s*(?:是|为|改成了?|换成了?|改为|:|：)\s*(?P<v1>.+)|"
        r"\b(?:phone|mobile|cell)(?: number)?\s*(?:is now|is|changed to|:)\s*(?P<v2>.+)|"
        r"\b(?:call|reach|text) me (?:at|on)\s*(?P<v3>.+)", _I)),
    _Slot("email", re.compile(
        r"(?:邮箱|电子邮件)(?:地址)?\s*(?:是|为|改成了?|换成了?|改为|:|：)\s*(?P<v1>.+)|"
        r"\be-?mail(?: address)?\s*(?:is now|is|changed to|:)\s*(?P<v2>.+)", _I)),
    _Slot("employer", re.compile(
        r"(?:在(?P<v1>[^，。,.!?！？\s]{1,12}?)(?:工作|上班)|(?:就职于|入职了?|跳槽到了?|加入了)(?P<v2>[^，。,.!?！？\s]{1,12})|"
        r"\bwork(?:s|ing)? (?:at|for) (?P<v3>[^,.;!?]+)|\bjoined (?P<v4>[^,.;!?]+)|\bemployer is (?P<v5>[^,.;!?]+))", _I)),
)
_RELATION_RE = re.compile(
    r"(妈妈|母亲|爸爸|父亲|老婆|妻子|老公|丈夫|女儿|儿子|哥哥|姐姐|弟弟|妹妹|朋友|同事|他|她|"
    r"\b(?:wife|husband|son|daughter|mother|father|mom|mum|dad|sister|brother|friend|colleague|he|she)\b)", _I)
_CHANGE_RE = re.compile(r"换了|改了|改成|换成|新的|新号|现在|\bnew\b|\bchanged\b|\bnow\b|\bupdated\b", _I)

# Preference statements: (polarity, object). Negative patterns first so "不吃" is not read as "吃".
_PREF_NEG = (
    re.compile(r"(?:不(?:再)?(?:能|敢|爱|想|喜欢)?(?:吃|喝)|不喜欢|讨厌|戒了|戒掉了?|受不了)(?P<o>[^，。,.;；!！?？]{1,10})"),
    re.compile(r"\bI (?:don'?t|do not|no longer|never|can'?t|cannot|won'?t) (?:eat|drink|like|have|enjoy|love)\s+(?P<o>[^,.;!?]+)", _I),
    re.compile(r"\bI (?:hate|dislike|quit|gave up|stopped (?:eating|drinking)|avoid)\s+(?P<o>[^,.;!?]+)", _I),
)
_PREF_POS = (
    re.compile(r"(?:喜欢(?:吃|喝)?|爱吃|爱喝|可以吃|能吃|开始吃|开始喝|又吃|又喝|重新吃|吃得了)(?P<o>[^，。,.;；!！?？]{1,10})"),
    re.compile(r"\bI (?:love|like|enjoy|eat|drink|can (?:now )?eat|can (?:now )?drink|started (?:eating|drinking)|am into)\s+(?P<o>[^,.;!?]+)", _I),
)
_OBJ_TRIM_ZH = re.compile(r"^(?:一点点?|一些|点|些|点儿|一点儿)|(?:一点点?|一些|点儿|了|啦|的东西|的食物|的|呢|哦)+$")
_OBJ_TRIM_EN = re.compile(r"\b(?:a little|a bit of|a bit|some|any|more|now|anymore|again|at all|too|the|a|an|of)\b", _I)


def _slot_value(text: str, slot: _Slot) -> str | None:
    m = slot.pattern.search(text)
    if not m:
        return None
    groups = {k: v for k, v in m.groupdict().items() if v}
    raw = next(iter(groups.values()), "")
    raw = re.split(_STOP_VALUE, raw, maxsplit=1, flags=_I)[0]
    return normalize_for_compare(raw)


def _subject(text: str, start: int) -> str:
    m = _RELATION_RE.search(text[:start])
    return m.group(1).lower() if m else "self"


def _preference(text: str) -> tuple[int, str, int] | None:
    """(polarity, object, position) of the first preference statement in ``text``.

    Negative forms win where they overlap a positive one ("不能吃辣" also contains "能吃辣").
    """
    negatives: list[tuple[int, int, str]] = []
    positives: list[tuple[int, int, str]] = []
    for bucket, patterns in ((negatives, _PREF_NEG), (positives, _PREF_POS)):
        for p in patterns:
            for m in p.finditer(text):
                bucket.append((m.start(), m.end(), m.group("o")))
    candidates = [(start, 0, obj) for start, _end, obj in negatives]
    candidates += [(start, 1, obj) for start, end, obj in positives
                   if not any(start < n_end and n_start < end for n_start, n_end, _ in negatives)]
    for start, polarity, raw in sorted(candidates):
        obj = _OBJ_TRIM_ZH.sub("", raw.strip())
        obj = _OBJ_TRIM_EN.sub(" ", obj)
        obj = re.split(r"\b(?:but|because|since|so)\b", obj, maxsplit=1, flags=_I)[0]
        obj = " ".join(obj.split())
        if obj:
            return polarity, obj, start
    return None


def _same_object(a: str, b: str) -> bool:
    if not a or not b:
        return False
    if any(is_cjk(ch) for ch in a + b):
        na, nb = normalize_for_compare(a), normalize_for_compare(b)
        return na in nb or nb in na
    sa = {stem(w) for w in re.findall(r"[a-z]+", a.lower())} - {"food", "thing", "stuff"}
    sb = {stem(w) for w in re.findall(r"[a-z]+", b.lower())} - {"food", "thing", "stuff"}
    return bool(sa & sb)


@dataclass(frozen=True)
class _Facts:
    """What ``supersedes_text`` reads off one text, computed once per text: the conflict check
    compares each new memory with up to six older ones, and re-parsing both sides of every pair
    was most of its rule time."""

    slots: tuple[tuple[str, str | None] | None, ...]  # per slot: (subject, normalised value) or None
    preference: tuple[int, str, str] | None  # (polarity, object, subject)
    says_changed: bool


@lru_cache(maxsize=4096)
def _facts(text: str) -> _Facts:
    slots: list[tuple[str, str | None] | None] = []
    for slot in _SLOTS:
        m = slot.pattern.search(text)
        slots.append(None if m is None else (_subject(text, m.start()), _slot_value(text, slot)))
    pref = _preference(text)
    preference = None if pref is None else (pref[0], pref[1], _subject(text, pref[2]))
    return _Facts(tuple(slots), preference, _CHANGE_RE.search(text) is not None)


def states_a_slot_or_preference(text: str) -> bool:
    """Whether ``supersedes_text`` can be True with ``text`` on either side: it needs a slot
    (address, phone, e-mail, employer) or a preference in both texts of a pair."""
    facts = _facts(text)
    return facts.preference is not None or any(slot is not None for slot in facts.slots)


# How an answer to a slot question states that slot (English, Chinese), for the slot rules above.
_SLOT_STATEMENTS: dict[str, tuple[str, str]] = {
    "address": ("I live in {}", "我住在{}"),
    "employer": ("I work at {}", "我就职于{}"),
    "phone": ("My phone number is {}", "我的手机号是{}"),
    "email": ("My email is {}", "我的邮箱是{}"),
}
# Answers that give no new value: a refusal, a negation, "the same as before", a counter-question.
_NO_VALUE_RE = re.compile(
    r"^\W*(?:no\b|nope\b|not\b|never\b|none\b|n/a\b|i'?d rather|rather not|i don'?t|i do not|i can'?t|"
    r"i won'?t|why\b|guess\b|不|没|别|保密|算了|为什么|你猜)|"
    r"\b(?:same|still|unchanged|as before)\b|没变|没换|还是|一样", re.IGNORECASE)
_ANSWER_LEAD_RE = re.compile(r"^\s*(?:(?:it'?s|it is|that'?s|that is|at|in)\s+|(?:就是|是|在)\s*)", re.IGNORECASE)
_SLOT_ANSWER_MAX_CHARS = 120


def slot_statement(text: str, context: str | None) -> str:
    """``text`` as a statement of the slot it answers, for the conflict rules: "Porto" after
    "Where do you live now?" reads "I live in Porto", so it supersedes "I live in Lisbon" like
    the statement would. ``text`` itself when it states a slot already, answers no single slot
    question, or gives no new value ("I'd rather not say", "the same as before", a
    counter-question)."""
    question = asked_question(context or "")
    if not question:
        return text
    slots = slots_asked(as_asked_of_me(question))
    answer = text.strip()
    if (len(slots) != 1 or not answer or len(answer) > _SLOT_ANSWER_MAX_CHARS or _NO_VALUE_RE.search(answer)
            or _QUESTION_END.search(answer) or any(slot is not None for slot in _facts(text).slots)):
        return text
    english, chinese = _SLOT_STATEMENTS[slots[0]]
    value = _ANSWER_LEAD_RE.sub("", answer, count=1) or answer  # "It's Porto" -> "Porto"
    return (chinese if any(is_cjk(ch) for ch in value) else english).format(value)


def supersedes_text(newer: str, older: str) -> bool:
    """Same slot (address, phone, email, employer, or a preference about the same thing),
    same subject, different value -> True."""
    f_new, f_old = _facts(newer), _facts(older)
    for s_new, s_old in zip(f_new.slots, f_old.slots):
        if s_new is None or s_old is None:
            continue
        if s_new[0] != s_old[0]:
            return False
        v_new, v_old = s_new[1], s_old[1]
        if not v_new or not v_old:
            return False
        if v_new != v_old:
            return True
        # Masked values ("[PHONE]") look equal; an explicit change word still signals a new value.
        return bool(re.fullmatch(r"(phone|email)", v_new)) and f_new.says_changed
    p_new, p_old = f_new.preference, f_old.preference
    if p_new and p_old and p_new[0] != p_old[0] and _same_object(p_new[1], p_old[1]):
        return p_new[2] == p_old[2]
    return False


# ---------------------------------------------------------------- the provider


class OfflineLLM(LLMProvider):
    """Rule-based stand-in for every LLM job; deterministic, instant, no network."""

    name = "offline (rule-based)"
    offline = True

    def analyze(self, text: str, now: datetime, context: str | None = None) -> Analysis:
        clean = text.strip()
        importance, memory_type = importance_of(clean, now), memory_type_of(clean, now)
        question = asked_question(context or "")
        if question and importance > 1:  # "Thanks!" stays small talk whatever it answered
            answered = f"{as_asked_of_me(question)} {clean}"  # the user's question: "Do I have pets?"
            if (with_question := importance_of(answered, now)) > importance:
                importance, memory_type = with_question, memory_type_of(answered, now)
            if importance < 4 and slot_statement(clean, context) != clean:
                # "Where do you live?" -> "Lisbon, by the river": the answer states a slot (home,
                # work, phone, e-mail), which is kept like "I live in Lisbon" ("I'd rather not
                # say" states none).
                importance, memory_type = 4, MemoryType.DECLARATIVE
        return Analysis(
            importance=importance,
            memory_type=memory_type,
            entities=extract_entities(clean),
            summary=summarize(clean),
        )

    def rewrite_query(self, query: str, now: datetime) -> str:
        return rewrite_query_text(query, now)

    def reply(self, messages: Sequence[ChatMessage], memory_context: str, now: datetime) -> Iterator[str]:
        question = next((m.content for m in reversed(messages) if m.role == "user"), "")
        text = compose_reply(question, memory_context)
        lang = detect_language(question) if question.strip() else "zh"
        return _stream_chunks(text, lang)

    def propose_merges(self, memories: Sequence[MemoryBrief]) -> list[MergeProposal]:
        items = list(memories)
        parent = list(range(len(items)))
        reasons: dict[int, str] = {}

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                if items[i].memory_id == items[j].memory_id:
                    continue
                same, why = near_duplicate(items[i].content, items[j].content)
                if same:
                    ri, rj = find(i), find(j)
                    if ri != rj:
                        parent[rj] = ri
                        reasons.setdefault(ri, why)
        groups: dict[int, list[int]] = {}
        for i in range(len(items)):
            groups.setdefault(find(i), []).append(i)
        proposals: list[MergeProposal] = []
        for root, idx in sorted(groups.items(), key=lambda kv: kv[1][0]):
            members = [items[i] for i in idx]
            ids = list(dict.fromkeys(m.memory_id for m in members))
            if len(ids) < 2:
                continue
            proposals.append(MergeProposal(memory_ids=ids, merged_text=_merged_text(members),
                                           reason=f"near-duplicates ({reasons.get(root, 'similar text')})"))
        return proposals

    def supersedes(self, newer: MemoryBrief, older: MemoryBrief) -> bool:
        if newer.memory_id == older.memory_id:
            return False
        return supersedes_text(slot_statement(newer.content, newer.context),
                               slot_statement(older.content, older.context))

    def may_contradict(self, text: str, context: str | None = None) -> bool:
        return states_a_slot_or_preference(slot_statement(text, context))
