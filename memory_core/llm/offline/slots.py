"""Newer wins, by rules: the same slot or preference of the same person with a new value."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memory_core.llm.offline.importance import (
    _QUESTION_END,
    as_asked_of_me,
    asked_question,
)
from memory_core.text.expansion import slots_asked
from memory_core.text.keywords import stem
from memory_core.text.lang import is_cjk
from memory_core.text.similarity import normalize_for_compare

_I = re.IGNORECASE

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


