"""Newer wins, by rules: the same fact of the same person with a new value.

Four readings, each of the same subject (``memory_core.text.subject``: "我的上司在深圳上班" is
about the boss, "Vanessa: I like ..." about Vanessa):

- a **slot** (home, phone, e-mail, employer) with a new value: "I live in Lisbon" -> "I moved
  to Porto";
- an **attribute** "my X is Y" / "我的X是Y" with a new Y: "My favourite colour is green" ->
  "... is blue", "我的车是丰田" -> "我的车换成了特斯拉" (not for people: "my sister is a nurse"
  and "my sister is in Berlin" are two facts about her);
- a **preference** about the same thing with the other polarity: "我不吃辣" -> "我能吃一点辣",
  "I love steak" -> "I became vegetarian", "我每天抽烟" -> "我戒烟了";
- a **correction**: the same frame with one value changed ("locker code 4821" -> "4827",
  "A+" -> "A-", "allergic" -> "not allergic"), for lasting facts, or for any fact when the newer
  text says it corrects ("sorry, I meant ..."): two runs of different lengths on two days are
  two events, not a correction.

A question never states a value ("我的电话是多少？" replaced the phone number it asked about).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

from memory_core.llm.offline.importance import (
    _EPISODE_RE,
    _is_small_talk,
    _QUESTION_END,
    as_asked_of_me,
    asked_question,
)
from memory_core.text.expansion import slots_asked
from memory_core.llm.offline.updates import (changes, ends_a_state, flips, one_fact, restates, specific_words, tells_an_end,
                                             topics_of)
from memory_core.text.facts import corrects, negations, says_change, says_correction, signature, twin_values
from memory_core.text.intent import is_question
from memory_core.text.keywords import stem
from memory_core.text.lang import is_cjk
from memory_core.text.similarity import normalize_for_compare
from memory_core.text.speaker import speaker_label
from memory_core.text.subject import PERSON_NOUNS_EN, PERSON_NOUNS_ZH, subject_before, subject_of
from memory_core.text.timeparse import parse_time_range

_I = re.IGNORECASE
_STOP_VALUE = r"[，。,.;；!！?？\n]|\s(?:and|but|now|since|because)\b|(?:了|啦|呢)(?=[，。,.;；!！?？]|$)"


@dataclass(frozen=True)
class _Slot:
    name: str
    pattern: re.Pattern[str]


_SLOTS: tuple[_Slot, ...] = (
    _Slot("address", re.compile(
        r"(?:住在|住址是?|地址是?|搬到了?|搬家到|搬去了?|家在|\blive[sd]? (?:in|at)|\bliving (?:in|at)|\bmoved (?:to|into)|"
        r"\baddress is(?: now)?|\bhome is in|\brelocated to)\s*(?P<v>.+)", _I)),
    _Slot("phone", re.compile(
        r"(?:手机号码?|电话号码?|联系电话|手机|电话)\s*(?:是|为|改成了?|换成了?|改为|:|：)\s*(?P<v1>.+)|"
        r"\b(?:phone|mobile|cell)(?: number)?\s*(?:is now|is|changed to|:)\s*(?P<v2>.+)|"
        r"\b(?:call|reach|text) me (?:at|on)\s*(?P<v3>.+)", _I)),
    _Slot("email", re.compile(
        r"(?:邮箱|电子邮件)(?:地址)?\s*(?:是|为|改成了?|换成了?|改为|:|：)\s*(?P<v1>.+)|"
        r"\be-?mail(?: address)?\s*(?:is now|is|changed to|:)\s*(?P<v2>.+)", _I)),
    _Slot("employer", re.compile(
        r"(?:在(?P<v1>[^，。,.!?！？\s]{1,12}?)(?:工作|上班)|(?:就职于|入职了?|跳槽到了?|加入了)(?P<v2>[^，。,.!?！？\s]{1,12})|"
        r"\bwork(?:s|ing)? (?:at|for) (?P<v3>[^,.;!?]+)|\bjoined (?P<v4>[^,.;!?]+)|\bemployer is (?P<v5>[^,.;!?]+)|"
        r"\b(?:started|start|got) (?:a )?(?:new )?job (?:at|with) (?P<v6>[^,.;!?]+))", _I)),
    _Slot("age", re.compile(r"(?P<v1>\d{1,3}|[一二两三四五六七八九十]{1,3})\s*(?:周)?岁|\b(?P<v2>\d{1,3}) years? old\b|"
                            r"\bturn(?:ed|s)? (?P<v3>\d{1,3})\b|\b(?:is|am|'m) (?P<v4>\d{1,3})(?: now)?\s*(?:[.!,]|$)", _I)),
    _Slot("name", re.compile(r"\bmy name is\s+(?P<v1>[^,.;!?]+)|\bcall me\s+(?P<v2>[^,.;!?]+)|"
                             r"^我(?:的名字)?叫(?P<v3>[^，。,.!?！？\s]{1,8})", _I)),
)
# A statement that opens with someone's name ("Lisa因为…", "Bart got a new bike"): about them.
_NAMED_OPENING = re.compile(r"\s*(?!The\b|This\b|That\b|My\b|Our\b|It\b|We\b|I\b)[A-Z][a-z]+(?=[\u4e00-\u9fff]|\s+(?:is|was|has|had|got|"
                            r"went|felt|feels|loves|likes|hates|and|said|told)\b)")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|we|our|us)\b|我", _I)
_CHANGE_RE = re.compile(r"换了|改了|改成|换成|新的|新号|现在|\bnew\b|\bchanged\b|\bnow\b|\bupdated\b", _I)

# "my X is Y" / "我的X是Y": a single-valued attribute with a value.
_ATTRIBUTE_EN = re.compile(
    r"\b(?:my|our|the(?=\s+(?:[a-z]+\s+){0,2}(?:password|code|pin|number|combination|passcode)\b))\s+(?P<a>(?:[a-z][a-z'\-]*\s+){0,3}?[a-z][a-z'\-]*)\s+(?:is|are|was|'s|has been|got changed to|"
    r"changed to)\s+(?:now\s+|actually\s+|currently\s+|officially\s+)?(?P<v>[^,.;!?]+)", _I)
_ATTRIBUTE_ZH = re.compile(
    r"我(?:的|们的|家的?)(?P<a>[^\s，。,.!?！？是为叫]{1,10}?)\s*(?:是|叫|为|改成了?|换成了?|改为|变成了?)\s*(?P<v>[^，。,.!?！？]{1,30})|"
    # "房间号改成1302了": an attribute with no 我, only where it says it changed.
    r"^(?P<a2>[\u4e00-\u9fff]{1,8}?)\s*(?:改成了?|换成了?|改为|变成了?)\s*(?P<v2>[^，。,.!?！？]{1,30})")
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
_RECURRING = re.compile(r"birthday|anniversary|\bevery\b|\beach\b|\busually\b|\bturns? \d+|\b\d+ years old\b|生日|纪念日|"
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


def _same_object(a: str, b: str) -> bool:
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


def _attribute(text: str) -> tuple[str, str, int] | None:
    """(attribute key, normalised value, position) of a "my X is Y" / "我的X是Y" statement."""
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
    return None


@dataclass(frozen=True)
class _Facts:
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
def _facts(text: str) -> _Facts:
    body = text
    label = speaker_label(text)
    if label is not None:
        body = text.split(":", 1)[1] if ":" in text[:80] else text.split("：", 1)[1]
    if is_question(body):
        return _Facts((None,) * len(_SLOTS), None, None, False, True, False, False)
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
    return _Facts(tuple(slots), attribute, preference, _CHANGE_RE.search(text) is not None, False,
                  not episodic, bool(sig.values()) or negations(text) > 0)


def states_a_slot_or_preference(text: str) -> bool:
    """Whether ``supersedes_text`` can be True for ``text`` written now: a question or small talk
    never can; a passing event ("I had dinner in Chaoyang with Anna") can only if it marks a
    change or a correction or touches a single-valued topic, since the other rules need a lasting
    fact on both sides. (A back-dated event that a later correction corrects is the one pair this
    skip can miss.)"""
    facts = _facts(text)
    if facts.question or _is_small_talk(text):
        return False
    if (facts.preference is not None or facts.attribute is not None or any(slot is not None for slot in facts.slots)):
        return True
    if not specific_words(text):
        return False
    return (facts.lasting or says_change(text) or says_correction(text) or bool(topics_of(text))
            or tells_an_end(text))


# How an answer to a slot question states that slot (English, Chinese), for the slot rules above.
_SLOT_STATEMENTS: dict[str, tuple[str, str]] = {
    "address": ("I live in {}", "我住在{}"),
    "employer": ("I work at {}", "我就职于{}"),
    "phone": ("My phone number is {}", "我的手机号是{}"),
    "email": ("My email is {}", "我的邮箱是{}"),
}
# "What's your favourite colour?" -> "my favourite colour": an attribute question.
_ATTR_QUESTION_EN = re.compile(r"^\s*(?:and |so )?(?:what|which|who)(?:'s| is| are)\s+my\s+(?P<a>[a-z][a-z '\-]{1,40}?)"
                               r"(?:\s+(?:now|these days|again|nowadays|currently))?\s*\??\s*$", _I)
_ATTR_QUESTION_ZH = re.compile(r"我的(?P<a>[^\s，。是]{1,10}?)(?:现在)?(?:是什么|是多少|是哪个|是谁|叫什么|是啥)")
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
    the statement would; "Blue" after "What's your favourite colour?" reads "My favourite
    colour is Blue". ``text`` itself when it states a fact already, answers no single slot
    question, or gives no new value ("I'd rather not say", "the same as before", a
    counter-question)."""
    question = asked_question(context or "")
    if not question:
        return text
    mine = as_asked_of_me(question)
    answer = text.strip()
    facts = _facts(text)
    if (not answer or len(answer) > _SLOT_ANSWER_MAX_CHARS or _NO_VALUE_RE.search(answer)
            or _QUESTION_END.search(answer) or any(slot is not None for slot in facts.slots)
            or facts.attribute is not None):
        return text
    value = _ANSWER_LEAD_RE.sub("", answer, count=1) or answer  # "It's Porto" -> "Porto"
    slots = slots_asked(mine)
    if len(slots) == 1:
        english, chinese = _SLOT_STATEMENTS[slots[0]]
        return (chinese if any(is_cjk(ch) for ch in value) else english).format(value)
    asked = _ATTR_QUESTION_EN.search(mine)
    if asked:
        return f"My {asked.group('a').strip()} is {value}"
    asked = _ATTR_QUESTION_ZH.search(mine)
    if asked:
        return f"我的{asked.group('a')}是{value}"
    return text


def answers_a_slot(text: str, context: str | None) -> bool:
    """Whether ``text`` answers a question about home, work, phone or e-mail ("Lisbon, by the
    river" to "Where do you live?"): such an answer is kept like the statement it stands for."""
    statement = slot_statement(text, context)
    return statement != text and any(slot is not None for slot in _facts(statement).slots)


def supersedes_text(newer: str, older: str) -> bool:
    """True when ``newer`` gives a new value to a fact ``older`` states, or says it again with
    more, about the same person (see the module docstring and ``updates.py``)."""
    f_new, f_old = _facts(newer), _facts(older)
    if f_new.question or f_old.question:
        return False
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
        if re.fullmatch(r"(phone|email)", v_new) and f_new.says_changed:
            return True
        # The same street, another flat: the value as cut stops at the comma, the text does not.
        if corrects(newer, older):
            return True
        break  # the same value: maybe said again with more (below)
    a_new, a_old = f_new.attribute, f_old.attribute
    if a_new and a_old and a_new[0] == a_old[0] and a_new[2] == a_old[2]:
        # "A+" and "A-" normalise alike: their graded letters still differ.
        if a_new[1] != a_old[1] or corrects(newer, older):
            return True
    p_new, p_old = f_new.preference, f_old.preference
    if p_new and p_old and p_new[0] != p_old[0] and _same_object(p_new[1], p_old[1]):
        return p_new[2] == p_old[2]
    if not _same_owner(newer, older):
        # "My manager is Tom" / "My new boss is Rachel": two names for one role of the user; and
        # a slip corrected as such ("班主任名字是张莉，上次写错了") whoever it is about.
        two_speakers = speaker_label(newer) is not None and speaker_label(older) is not None \
            and speaker_label(newer) != speaker_label(older)
        return not two_speakers and ((changes(newer, older) and _same_role(newer, older)) or (
            says_correction(newer) and twin_values(newer, older) and corrects(newer, older, explicit=True)))
    if speaker_label(newer) is not None or speaker_label(older) is not None:
        # A line of an imported transcript ("Caroline: ...") records what was said then; later
        # lines of the same speaker retell, react and move on rather than correct it. Slots and
        # preferences above still apply to them; the readings below are for what the user says.
        # (Applied to transcripts they replaced 193 of LoCoMo's 5,882 turns, 61 of them evidence.)
        return False
    if not (_FIRST_PERSON.search(newer) or _FIRST_PERSON.search(older)) and (_NAMED_OPENING.match(newer)
                                                                               or _NAMED_OPENING.match(older)):
        # Notes about other people in the third person ("Lisa was upset after the contest",
        # "Bart got a new bike") are events of their lives, not the user's facts (nor those of
        # the user's son or boss): only the slot and preference readings above compare them.
        return False
    if not (one_fact(older, sentences=2, words=30) and one_fact(newer, sentences=3, words=45)):
        return False  # a long message tells a story: the readings below compare single statements
    lasting = f_new.lasting and f_old.lasting
    explicit = says_correction(newer)
    changed = says_change(newer)
    if (lasting or explicit or changed) and corrects(newer, older, explicit=explicit or changed):
        return True
    if flips(newer, older, marked=explicit or changed) and (lasting or explicit or changed):
        return True
    if changes(newer, older) or ends_a_state(newer, older):
        return True
    return f_old.lasting and f_new.lasting and restates(newer, older)


def _same_role(a: str, b: str) -> bool:
    """Both texts name the user's person in the same role ("my manager" / "my new boss",
    "我女儿" / "闺女"), or one names a role the other's topic is about."""
    sa, sb = subject_of(a).split("/")[-1], subject_of(b).split("/")[-1]
    roles = {s.split(":", 1)[1] for s in (sa, sb) if s.startswith("rel:")}
    return len(roles) == 1 or (bool(roles) and {sa, sb} & {"self"} != set())


# Kin said in one character or colloquially ("我妈", "我哥", "我老公"): not the speaker.
_KIN_ZH = ("妈", "爸", "哥", "姐", "弟", "妹", "老婆", "老公", "爷", "奶", "儿", "女")


def _same_owner(a: str, b: str) -> bool:
    """Whether two texts state facts of the same person. "My doctor raised my lisinopril to 15
    mg" is about the user's dose although the doctor is its subject: a first-person possessive
    after the subject makes a relative's or colleague's sentence compatible with the user's."""
    sa, sb = subject_of(a), subject_of(b)
    if sa == sb:
        return True
    # "My son Ethan plays the violin" / "Ethan has been playing violin": the name is the son.
    for subject, other_text in ((sa, b), (sb, a)):
        if subject.split("/")[-1].startswith("name:") and subject.split(":", 1)[1] in other_text.lower():
            return True
    # "endo appointment today, she confirmed I'm on 14 units": someone speaks of the user's fact.
    for subject, text, other in ((sa, a, sb), (sb, b, sa)):
        if subject.split("/")[-1] == "other" and other.endswith("self") and re.search(
                r"\b(?:he|she|they)\b.*\b(?:I'm|I am|my|me)\b|[他她].*我", text, _I):
            return True
    if sa.rsplit("/", 1)[0] != sb.rsplit("/", 1)[0] and ("/" in sa or "/" in sb):
        return False  # two speakers of a transcript
    for subject, text in ((sa, a), (sb, b)):
        other = sb if subject is sa else sa
        if other.endswith("self") and subject.split("/")[-1].startswith("rel:"):
            noun = subject.split(":", 1)[1]
            after = text[text.lower().find(noun) + len(noun):] if noun in text.lower() else ""
            # "My doctor raised my dose", "医生说我血压正常了": the relative or colleague speaks of
            # the user's own fact (a possessive, or reported speech about "me").
            if re.search(r"\bmy\b|我的|\b(?:says?|said|told me)\b.*\bI\b", after, _I):
                return True
            reported = re.search(r"(?:说|觉得|告诉)我", after)
            return reported is not None and not after[reported.end():].startswith((*PERSON_NOUNS_ZH, *_KIN_ZH))
    return False
