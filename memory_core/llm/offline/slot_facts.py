"""What one text states, for the newer-wins rules (``slots.supersedes_text``): the slots (home,
phone, e-mail, employer) and their values, an attribute "my X is Y", a preference and its
polarity, whether it says something changed, and whether it is a lasting fact or an event.

Read once per text and cached (``facts``): the conflict check compares each new memory with up
to six older ones, and re-parsing both sides of every pair was most of its rule time. Apart from
the rules that compare two texts, since these are the word lists and patterns, and those the
judgement.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

from memory_core.llm.offline.importance import (
    _EPISODE_RE,
    STAY_EN,
    STAY_ZH_PLACE,
)
from memory_core.text.facts import negations, signature
from memory_core.text.intent import is_question
from memory_core.text.keywords import stem
from memory_core.text.lang import is_cjk, jieba_pos_tokenizer
from memory_core.text.mood import is_irrealis
from memory_core.text.pii import placeholder_pattern
from memory_core.text.similarity import normalize_for_compare
from memory_core.text.speaker import speaker_label
from memory_core.text.subject import KIN_ZH_ONE_CHAR, PERSON_NOUNS_EN, PERSON_NOUNS_ZH, subject_before
from memory_core.text.timeparse import parse_time_range

_I = re.IGNORECASE
_STOP_VALUE = r"[，。,.;；!！?？\n]|\s(?:and|but|now|since|because)\b|(?:了|啦|呢)(?=[，。,.;；!！?？]|$)"


@dataclass(frozen=True)
class _Slot:
    name: str
    pattern: re.Pattern[str]


# Which line a number is: a mobile unless said to be the office's or the home's. "Call me on the
# office line [PHONE] tomorrow" had replaced "my phone number is [PHONE]"; they are two numbers.
_OFFICE_LINE = re.compile(r"\b(?:office|work|desk|direct)\s+(?:line|number|phone|landline|extension)\b|\bat the office on\b|"
                          r"座机|办公室电话|公司电话|单位电话|分机", _I)
_HOME_LINE = re.compile(r"\b(?:home|house)\s+(?:line|number|phone|landline)\b|\blandline\b|家里(?:的)?(?:座机|电话)|家庭电话", _I)


_MOBILE = re.compile(r"\b(?:mobile|cell|cellphone)\b|手机", _I)
_LINE_CLAUSE = re.compile(r"[,，;；.。!！?？]\s*|\s+[—–-]+\s+|\s+but\s+", _I)


def phone_line(text: str) -> str:
    """Which of the user's lines the number in ``text`` is: "office", "home" or "mobile". Read in
    the clause that holds the number: "no landline anymore, call me on [PHONE]" gives a mobile,
    "办公室电话打不通的话，我手机是[PHONE]" too."""
    clauses = [c for c in _LINE_CLAUSE.split(text) if re.search(r"\[PHONE|\d{3}", c)] or [text]
    said = " ".join(clauses)
    if _MOBILE.search(said):
        return "mobile"
    if _OFFICE_LINE.search(said):
        return "office"
    return "home" if _HOME_LINE.search(said) else "mobile"


_SLOTS: tuple[_Slot, ...] = (
    _Slot("address", re.compile(
        r"(?:住在|住址是?|地址是?|搬到了?|搬家到|搬去了?|家在|\blive[sd]? (?:in|at)|\bliving (?:in|at)|\bmoved (?:to|into)|"
        r"\baddress is(?: now)?|\bhome is in|\brelocated to)\s*(?P<v>.+)|"
        # Where one is based, or stays for years of study or work ("I'm in Berlin for my
        # master's", "我在柏林读研"), not for a weekend.
        r"(?:" + STAY_EN + r")\s*(?P<v2>.+)|" + STAY_ZH_PLACE, _I)),
    _Slot("phone", re.compile(
        r"(?:手机号码?|电话号码?|联系电话|手机|电话)\s*(?:是|为|改成了?|换成了?|改为|:|：)\s*(?P<v1>.+)|"
        r"\b(?:phone|mobile|cell)(?: number)?\s*(?:is now|is|changed to|:)\s*(?P<v2>.+)|"
        r"\b(?:call|reach|text) me (?:at|on)\s*(?P<v3>.+)|"
        # A number said further on in the sentence ("电话号码最后两位是23，完整的是[PHONE#..]",
        # "new number: [PHONE#..]"): the placeholder is the value.
        r"(?:手机|电话|号码|\bphone\b|\bnumber\b|\bmobile\b|\bcell\b)[^。.!?！？\n]{0,16}?"
        r"(?P<v4>" + placeholder_pattern("phone") + ")", _I)),
    _Slot("email", re.compile(
        r"(?:邮箱|电子邮件)(?:地址)?\s*(?:是|为|改成了?|换成了?|改为|:|：)\s*(?P<v1>.+)|"
        r"\be-?mail(?: address)?\s*(?:is now|is|changed to|:)\s*(?P<v2>.+)|"
        r"(?:邮箱|\be-?mail\b)[^。.!?！？\n]{0,16}?(?P<v3>" + placeholder_pattern("email") + ")", _I)),
    _Slot("employer", re.compile(
        r"(?:在(?P<v1>[^，。,.!?！？\s]{1,12}?)(?:工作|上班)|(?:就职于|入职了?|跳槽到了?|加入了)(?P<v2>[^，。,.!?！？\s]{1,12})|"
        r"\bwork(?:s|ing)? (?:at|for) (?P<v3>[^,.;!?]+)|\bjoined (?P<v4>[^,.;!?]+)|\bemployer is (?P<v5>[^,.;!?]+)|"
        r"\b(?:started|start|got) (?:a )?(?:new )?job (?:at|with) (?P<v6>[^,.;!?]+)|"
        # "我在阿里做产品经理": a role at a place is where one works
        r"在(?P<v7>[^，。,.!?！？\s]{1,8}?)做(?:产品|运营|设计|开发|销售|财务|会计|老师|医生|护士|律师|工程师|程序员|客服|市场|"
        r"人事|行政|测试|算法|前端|后端))", _I)),
    _Slot("age", re.compile(r"(?P<v1>\d{1,3}|[一二两三四五六七八九十]{1,3})\s*(?:周)?岁|\b(?P<v2>\d{1,3}) years? old\b|"
                            r"\bturn(?:ed|s)? (?P<v3>\d{1,3})\b|\b(?:is|am|'m) (?P<v4>\d{1,3})(?: now)?\s*(?:[.!,]|$)", _I)),
    _Slot("name", re.compile(r"\bmy name is\s+(?P<v1>[^,.;!?]+)|\bcall me\s+(?P<v2>[^,.;!?]+)|"
                             r"^我(?:的名字)?叫(?P<v3>[^，。,.!?！？\s]{1,8})", _I)),
)
SLOT_NAMES: tuple[str, ...] = tuple(slot.name for slot in _SLOTS)  # in the order of ``Facts.slots``

# A statement that opens with someone's name ("Lisa因为…", "Bart got a new bike"): about them.
# A note that opens with a person's name: "Lisa was upset", "Bart participated in a hike", "Bart’s pet
# dog had a fever" (a past-tense verb or a possessive after the name, not only the common verbs).
NAMED_OPENING = re.compile(r"\s*(?!The\b|This\b|That\b|My\b|Our\b|It\b|We\b|I\b)[A-Z][a-z]+(?=[\u4e00-\u9fff]|['’]s\b|"
                            r"\s+(?:is|was|has|had|got|went|felt|feels|loves|likes|hates|and|said|told|[a-z]{2,}ed)\b)")
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|im|ive|me|my|mine|we|our|us)\b|我", _I)  # "im allergic to latex"
_CHANGE_RE = re.compile(r"换了|改了|改成|换成|新的|新号|现在|\bnew\b|\bchanged\b|\bnow\b|\bupdated\b", _I)

# "my X is Y" / "我的X是Y": a single-valued attribute with a value.
_ATTRIBUTE_EN = re.compile(
    r"\b(?:my|our|the(?=\s+(?:[a-z]+\s+){0,2}(?:password|code|pin|number|combination|passcode)\b))\s+(?P<a>(?:[a-z][a-z'\-]*\s+){0,3}?[a-z][a-z'\-]*)\s+(?:is|are|was|'s|has been|got changed to|"
    r"changed to)\s+(?:now\s+|actually\s+|currently\s+|officially\s+)?(?P<v>[^,.;!?]+)", _I)
_ATTRIBUTE_ZH = re.compile(
    r"我(?:的|们的|家的?)(?P<a>[^\s，。,.!?！？是为叫]{1,10}?)\s*(?:是|叫|为|改成了?|换成了?|改为|变成了?)\s*(?P<v>[^，。,.!?！？]{1,30})|"
    # "房间号改成1302了": an attribute with no 我, only where it says it changed.
    r"^(?P<a2>[\u4e00-\u9fff]{1,8}?)\s*(?:改成了?|换成了?|改为|变成了?)\s*(?P<v2>[^，。,.!?！？]{1,30})")
# "我驾照是C2的", "我鞋码是43": the same attribute said without 的, as people type it. Only where
# jieba reads X as one word that can name a thing (not "我觉得是", "我今天是", "我也是"), and not a
# person ("我妈是老师" is the mother's fact).
_ATTRIBUTE_ZH_BARE = re.compile(
    r"(?<![\u4e00-\u9fff])我(?P<a>[\u4e00-\u9fff]{2,4}?)(?:是|叫)\s*(?P<v>[^，。,.!?！？\s]{1,30})")
_BARE_NOT_THINGS = frozenset("d r t p c u m q f y e o ad ud uj ul uz ug uv nr".split())
_BARE_VERBS = frozenset("""觉得 认为 以为 发现 知道 记得 感觉 估计 相信 承认 确定 怀疑 可能 应该 肯定 其实 本来 原来
    一直 已经 主要 只是 就是 真的 确实 突然 好像 似乎 也许 大概 平时 一般 最近 以前 现在 当时 总是 还是 不是 都是""".split())
_KIN_CHARS = KIN_ZH_ONE_CHAR | {"儿", "女"}  # "我妈是", "我哥叫", "我儿子叫": a relative, not an attribute
_ATTR_SKIP = frozenset("""favorite favourite life day job week weekend plan plans goal dream problem question point
    idea fault pleasure turn guess bad mistake""".split())
_ATTR_SKIP_ZH = frozenset("意思 问题 想法 打算 计划 目标 梦想 感觉 错 爱好".split())

# Preference statements: (polarity, object). Negative patterns first so "不吃" is not read as "吃".
_PREF_NEG = (
    re.compile(r"(?:不(?:再)?(?:能|敢|爱|想|喜欢)?(?:吃|喝|抽)|不喜欢|讨厌|戒了|戒掉了?|受不了)(?P<o>[^，。,.;；!！?？]{1,10})"),
    re.compile(r"戒(?P<o>烟|酒)"),
    re.compile(r"\bI (?:don'?t|do not|no longer|never|can'?t|cannot|won'?t) (?:eat|drink|like|have|enjoy|love|smoke)"
               r"\s+(?P<o>[^,.;!?]+)", _I),
    re.compile(r"\bI (?:hate|dislike|quit|gave up|stopped (?:eating|drinking)|avoid)\s+(?P<o>[^,.;!?]+)", _I),
    re.compile(r"\bI (?:don'?t|do not|no longer|never) (?P<o>smoke|drink)\b", _I),
)
_PREF_POS = (
    re.compile(r"(?:喜欢(?:吃|喝)?|爱吃|爱喝|可以吃|能吃|开始吃|开始喝|又吃|又喝|重新吃|吃得了|又开始抽|开始抽|每天抽|抽)"
               r"(?P<o>[^，。,.;；!！?？]{1,10})"),
    re.compile(r"\bI (?:love|like|enjoy|eat|drink|can (?:now )?eat|can (?:now )?drink|started (?:eating|drinking)|"
               r"am into|smoke)\s+(?P<o>[^,.;!?]+)", _I),
    re.compile(r"\bI (?P<o>smoke)\b", _I),
    re.compile(r"\bI(?:'ll| will)? (?:have|drink|enjoy|order) (?:a |an |the )?(?:glass|cup|bottle|pint|shot) of (?P<o>[^,.;!?]+)",
               _I),
)
# A diet is a preference about a category: "I'm vegetarian" says "no meat".
_DIET_NEG = re.compile(r"\b(?:I(?:'m| am)|I became|I went|I've (?:been|become)|I have (?:been|become)|I'm now)\s+"
                       r"(?:a\s+)?(?:strict\s+|full\s+)?(?P<o>vegetarian|vegan|pescatarian)\b|"
                       r"(?:我|我现在|我已经)(?:开始)?(?:吃素|是素食者|只吃素|改吃素)", _I)
_DIET_POS = re.compile(r"\b(?:no longer|not|stopped being|quit being)\s+(?:a\s+)?(?:vegetarian|vegan)\b|"
                       r"\bI (?:eat|started eating|eat) meat\b|不(?:再)?吃素了?|开始吃肉|又吃肉", _I)
_MEAT = frozenset("""meat steak beef pork chicken bacon ham lamb mutton turkey duck sausage burger burgers 肉 牛排 牛肉
    猪肉 鸡肉 羊肉 培根 火腿 鸭肉 香肠 汉堡 荤""".split())
_FISH = frozenset("fish seafood salmon tuna shrimp prawn crab 鱼 海鲜 三文鱼 虾 蟹".split())
_SMOKE = frozenset("smoke smoking smokes cigarette cigarettes cigarett pack 烟 抽烟 香烟".split())
_ALCOHOL = frozenset("alcohol wine beer vodka whisky whiskey gin rum sake cocktail cocktails booze champagne 酒 啤酒 红酒 白酒 "
                     "喝酒".split())
_OBJ_TRIM_ZH = re.compile(r"^(?:一点点?|一些|点|些|点儿|一点儿)|(?:一点点?|一些|点儿|了|啦|的东西|的食物|的|呢|哦)+$")
_OBJ_TRIM_EN = re.compile(r"\b(?:a little|a bit of|a bit|some|any|more|now|anymore|again|at all|too|the|a|an|of)\b", _I)
_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
_STOP_VALUE_RE = re.compile(_STOP_VALUE, _I)
# A date that comes back every year (a birthday, an anniversary) or a habit ("every Tuesday")
# is part of a lasting fact, not the time of an event.
_RECURRING = re.compile(r"birthday|\bb-?days?\b|anniversary|\bevery\b|\beach\b|\busually\b|\bturns? \d+|\b\d+ years old\b|生日|纪念日|"
                        r"每(?:天|周|年|个|月)|平时|一般|今年[一二两三四五六七八九十\d]+(?:岁|了)", _I)


def _slot_value(match: re.Match[str]) -> str | None:
    groups = {k: v for k, v in match.groupdict().items() if v}
    raw = next(iter(groups.values()), "")
    raw = _STOP_VALUE_RE.split(raw, maxsplit=1)[0]
    return normalize_for_compare(raw)


def _preference(text: str) -> tuple[int, str, int] | None:
    """(polarity, object, position) of the first preference statement in ``text``.

    Negative forms win where they overlap a positive one ("不能吃辣" also contains "能吃辣")."""
    diet = _DIET_POS.search(text)
    if diet:
        return 1, "meat", diet.start()
    diet = _DIET_NEG.search(text)
    if diet:
        return 0, "meat", diet.start()
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
        if re.match(r"I (?:smoke|quit smoking|don'?t smoke)|抽烟|抽", text[start:start + 20], _I):
            return polarity, "smoke", start  # "I smoke about a pack a day": what is smoked is not the object
        obj = _OBJ_TRIM_ZH.sub("", raw.strip())
        obj = _OBJ_TRIM_EN.sub(" ", obj)
        obj = re.split(r"\b(?:but|because|since|so)\b", obj, maxsplit=1, flags=_I)[0]
        obj = " ".join(obj.split())
        if obj:
            return polarity, obj, start
    return None


def _category(obj: str) -> set[str]:
    words = {stem(w) for w in re.findall(r"[a-z]+", obj.lower())} | {obj}
    cats = set()
    if words & _MEAT or any(w in obj for w in _MEAT if not w.isascii()):
        cats.add("meat")
    if words & _FISH or any(w in obj for w in _FISH if not w.isascii()):
        cats.add("fish")
    if words & _SMOKE or any(w in obj for w in _SMOKE if not w.isascii()):
        cats.add("smoke")
    if words & _ALCOHOL or any(w in obj for w in _ALCOHOL if not w.isascii()):
        cats.add("alcohol")
    return cats


def same_object(a: str, b: str) -> bool:
    if not a or not b:
        return False
    if _category(a) & _category(b):
        return True
    if any(is_cjk(ch) for ch in a + b):
        na, nb = normalize_for_compare(a), normalize_for_compare(b)
        return na in nb or nb in na
    sa = {stem(w) for w in re.findall(r"[a-z]+", a.lower())} - {"food", "thing", "stuff"}
    sb = {stem(w) for w in re.findall(r"[a-z]+", b.lower())} - {"food", "thing", "stuff"}
    return bool(sa & sb)


def _bare_attribute(text: str) -> tuple[str, str, int] | None:
    """(key, value, position) of "我X是Y" without 的, where X is one word for a thing."""
    for m in _ATTRIBUTE_ZH_BARE.finditer(text):
        attr = m.group("a")
        words = list(jieba_pos_tokenizer().cut(attr))
        if len(words) != 1 or words[0].flag in _BARE_NOT_THINGS or attr in _BARE_VERBS or attr in _ATTR_SKIP_ZH \
                or attr[0] in _KIN_CHARS or any(k in attr for k in PERSON_NOUNS_ZH):
            continue
        value = normalize_for_compare(_STOP_VALUE_RE.split(m.group("v"), maxsplit=1)[0])
        if value:
            return attr, value, m.start()
    return None


def _attribute(text: str) -> tuple[str, str, int] | None:
    """(attribute key, normalised value, position) of a "my X is Y" / "我的X是Y" statement (also
    "我X是Y", ``_bare_attribute``)."""
    for pattern, skip in ((_ATTRIBUTE_EN, _ATTR_SKIP), (_ATTRIBUTE_ZH, _ATTR_SKIP_ZH)):
        for m in pattern.finditer(text):
            groups = m.groupdict()
            attr = (groups.get("a") or groups.get("a2") or "").strip().lower().lstrip("的")
            raw_value = groups.get("v") or groups.get("v2") or ""
            head = attr.split()[-1] if attr.isascii() else attr
            if not attr or attr in skip or head in PERSON_NOUNS_EN or any(n in attr for n in PERSON_NOUNS_ZH):
                continue
            value = normalize_for_compare(_STOP_VALUE_RE.split(raw_value, maxsplit=1)[0])
            if value:
                key = " ".join(stem(w) for w in attr.split()) if attr.isascii() else attr
                return key, value, m.start()
    return _bare_attribute(text)


@dataclass(frozen=True)
class Facts:
    """What ``supersedes_text`` reads off one text, computed once per text: the conflict check
    compares each new memory with up to six older ones, and re-parsing both sides of every pair
    was most of its rule time."""

    slots: tuple[tuple[str, str | None] | None, ...]  # per slot: (subject, normalised value) or None
    attribute: tuple[str, str, str] | None  # (key, value, subject)
    preference: tuple[int, str, str] | None  # (polarity, object, subject)
    says_changed: bool
    question: bool
    lasting: bool  # no event in time: a correction of its value replaces it
    has_values: bool  # numbers, codes, graded letters, days or a negation: a correction can apply


@lru_cache(maxsize=4096)
def facts_of(text: str) -> Facts:
    """The readings of ``text`` (a question states none); cached, since texts recur across pairs."""
    body = text
    label = speaker_label(text)
    if label is not None:
        body = text.split(":", 1)[1] if ":" in text[:80] else text.split("：", 1)[1]
    if is_question(body):
        return Facts((None,) * len(_SLOTS), None, None, False, True, False, False)
    slots: list[tuple[str, str | None] | None] = []
    for slot in _SLOTS:
        m = slot.pattern.search(text)
        slots.append(None if m is None else (subject_before(text, m.start()), _slot_value(m)))
    pref = _preference(text)
    preference = None if pref is None else (pref[0], pref[1], subject_before(text, pref[2]))
    attr = _attribute(text)
    attribute = None if attr is None else (attr[0], attr[1], subject_before(text, attr[2]))
    recurring = _RECURRING.search(text)
    episodic = bool(_EPISODE_RE.search(text)) or (parse_time_range(text, _EPOCH) is not None and not recurring)
    sig = signature(text)
    return Facts(tuple(slots), attribute, preference, _CHANGE_RE.search(text) is not None, False,
                 not episodic, bool(sig.values()) or negations(text) > 0)


def states_own_attribute(text: str) -> bool:
    """The text states one of the user's own lasting attributes ("my X is Y", "我(的)X是Y"), not
    as a wish, a question or an event of a day."""
    facts = facts_of(text)
    return (facts.attribute is not None and facts.attribute[2] == "self" and facts.lasting
            and not is_irrealis(text))
