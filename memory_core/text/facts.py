"""What a memory text asserts, read closely enough to tell a repeat from a correction.

Near-duplicate folding and newer-wins both ask "is this the same fact?", and surface
similarity answers it wrongly both ways:

- "My blood type is A+" and "My blood type is A-" normalise to the same letters, embed at
  cosine .97, and were folded as a repeat: the correction was dropped ("Already known").
  So were "locker code 4821" -> "4827" and "房间号 1203" -> "1302".
- "I live with my grandmother." and "My grandmother lives with me." say one thing in other
  words (cosine .975, character-bigram Jaccard .4) and stayed two memories.

``FactSignature`` holds the parts of a text that carry values: numbers (digits and number
words, with units), codes ("hunter22", "浙A12345"), graded letters (blood types A+ / AB-,
"O型"), days and months, the person mentioned, and the polarity (an odd number of negations).
Two texts state the same fact only if their signatures agree; a text that keeps its frame and
changes one of these values is a correction (``corrects``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memory_core.text.entities import extract_entities
from memory_core.text.intent import statement_part
from memory_core.text.keywords import keyword_tokens, stem
from memory_core.text.numbers import (THOUSANDS, THOUSANDS_SHORT, ZH_AMOUNT, ZH_NUMBER, number_word_tokens, plain,
                                       spelled_numbers, zh_numbers)
from memory_core.text.subject import PERSON_NOUNS_EN, PERSON_NOUNS_ZH, person_key

_I = re.IGNORECASE

NEGATION_RE = re.compile(
    r"不|没|别|未|无|非|\bnot\b|n't|\bnever\b|\bno\b|\bnone\b|\bno longer\b|\bquit\b|\bstopped\b", _I)
# Words with a negation character that negate nothing: "不错" is "good", "没事" "it's fine",
# "特别" "especially" (its 别 is no "don't": "我特别怕冷" was read as negated).
NEGATION_IDIOMS_RE = re.compile(r"不错|不客气|不好意思|没事|没关系|不用谢|没问题|不过|不一定|差不多|不少|不久|不然|"
                                r"要不|无论|无聊|非常|并非不|不得不|雷打不动|风雨无阻|不管|不停|不断|忍不住|"
                                # a double negation is a yes: 无辣不欢 ("no joy without spice"), 无X不Y
                                r"无[\u4e00-\u9fff]不[\u4e00-\u9fff]|"
                                r"特别|区别|分别|告别|个别|级别|类别|性别|别人|别的|别墅|别处|"
                                r"\bno problem\b|\bnot bad\b|\bno worries\b|"
                                # "NHS no. 943 476 5919", "room no 12": an abbreviation of "number"
                                r"\bno\.?\s*(?=\d)", _I)


@lru_cache(maxsize=16384)  # pure; every newer-wins rule counts the negations of the same texts
def negations(text: str) -> int:
    """How many negations ``text`` holds (idioms such as 不错 left out)."""
    return len(NEGATION_RE.findall(NEGATION_IDIOMS_RE.sub(" ", text)))


_CODE = re.compile(r"\b(?:UTC|GMT)\s?[+-]\s?\d{1,2}(?::\d\d)?(?!\d)|"  # a time zone: UTC+3 and UTC-3 differ
                   # a code, with a capital group after it that belongs to it (plates, postcodes: KJ21 XPT, SW1A 1AA)
                   # (not a number with its unit typed on: "175cm" is 175 cm, "500mg" 500 mg, "3pm" 3 pm)
                   r"(?<![A-Za-z\d])(?!\d+(?:[.,]\d+)?(?:mg|ml|g|kg|lbs?|km|cm|mm|m|mi|hrs?|mins?|yrs?|am|pm)(?![\w\-]))"
                   r"(?=[\w\-]*[A-Za-z])(?=[\w\-]*\d)[A-Za-z\d][\w\-]*[A-Za-z\d](?:\s[A-Z\d]{2,4}(?![\w]))?|"
                   # a Chinese plate (京A12345), its province first: not "航班MU5137", a code after a word
                   r"[京津沪渝冀豫云辽黑湘皖鲁新苏浙赣鄂桂甘晋蒙陕吉闽贵粤青藏川宁琼][A-Z][A-Z\d]{3,}")
_NUMBER = re.compile(r"(?<![A-Za-z\d.])[+-]?\d+(?:[.,]\d+)?(?:\s?(?:mg|ml|g|kg|lbs?|km|cm|mm|m|mi|miles|%|°c|°f|"
                     r"years?|yrs?|months?|weeks?|days?|hours?|hrs?|minutes?|mins?|am|pm|"
                     r"毫克|毫升|克|公斤|千克|斤|公里|千米|米|厘米|岁|个月|年|天|小时|分钟|点|号|楼|层|块|元|万|码|度|units?))?(?![A-Za-z\d])", _I)
_GRADE = re.compile(r"(?<![A-Za-z])(AB|A|B|O)\s?(?:型)?\s?(?:血)?\s?([+-]|positive|negative|阳性|阴性|rh[+-])|"
                    r"(?<![A-Za-z])(AB|A|B|O)\s?型|\brh\s?([+-]|positive|negative)|(阳|阴)性", _I)
_DAYS = re.compile(r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mondays|tuesdays|wednesdays|"
                   r"thursdays|fridays|saturdays|sundays|january|february|march|april|june|july|august|september|"
                   r"october|november|december)\b|(?:周|星期|礼拜)[一二三四五六日天]|[一二三四五六七八九十]{1,2}月(?:份)?|"
                   r"\d{1,2}月", _I)
_CORRECTION_MARKER = re.compile(
    r"\bsorry\b(?=[^.!?]{0,25}\b(?:meant|mean|typo|wrong|mistake|i said|it'?s|its|not)\b)|"
    r"^\W*sorry\W+(?=[^\s.!?]*\d)|"  # "Sorry, UTC-3!!": a bare value right after the apology
    r"\b(?:i meant|i mean|correction|actually|my mistake|my bad|typo|not \S+ but|wrong|rather)\b|"
    r"^\W*(?:oops|whoops|oh wait)\b(?=[^.!?]{0,25}\b(?:it'?s|its|meant|not)\b)|"  # "oops it's BA171 not BA117"
    r"\b(?:mixed (?:it |them )?up|had it wrong|got it wrong|(?:got|had) (?:it|that|them) backwards|the other way (?:round|around)|had (?:the|it) \w+ wrong|swapped|typo'?d|misspel\w*|wait,? no|"
    r"mis(?:read|heard|typed))\b|(?<!not a )(?<!n't a )\b(?:misdiagnos\w*|false positive)\b|(?<!不是)(?<!并非)误[判诊]|"
    r"说错了|打错了|写错了|记错了|口误|笔误|订错|买错|填错|约错|记反|[说写打看弄搞]反了|看错|看岔|记岔|记混|搞混|弄混|看花眼|搞错|弄错|更正|纠正|其实是|其实|应该是|"
    r"不是[^，。]{1,12}而?是|改一下|改成|我是说|不对|"
    # "the code isn't 4821, it's 4827": a value named to be rejected, then the right one
    r"\b(?:isn'?t|is not|wasn'?t|was not|not)\s+(?:the\s+)?(?=[\w\-.]*\d)[\w\-.]*\w\W{0,3}\s*(?:it'?s|it is|it was|its)\s+"
    r"(?=[\w\-.]*\d)",
    _I)


# A correction of one's own slip, said as such (not "actually", "rather", 其实, 不对, which also
# open new facts and opinions: matched so, they replaced MADial memories).
_OWN_SLIP = re.compile(r"\bsorry\b[^.!?]{0,25}\bmeant\b|\bi meant\b|\bcorrection\b|\bmy mistake\b|\btypo\b|\bmis(?:read|heard|typed)\b|"
                       r"\bmix-?up\b|\bmixed (?:it |them )?up\b|\bhad it wrong\b|\bgot it wrong\b|"
                       r"说错了|记错了|写错了|打错了|搞错了|弄错了|[说写打看弄搞记]反了|看错|看岔|记岔|记混|搞混|弄混|更正|纠正|我是说", _I)


_SPACES = re.compile(r"\s+")
_LEADING_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_SIGNED_DIGIT = re.compile(r"[+-]?\d")
_TEST_NAMED = re.compile(r"rh|血|抗体|检测|化验|结果|报告", _I)

_PERSONS_EN = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, PERSON_NOUNS_EN), key=len, reverse=True)) + r")\b", _I)
_PERSONS_ZH = re.compile("|".join(PERSON_NOUNS_ZH))


@dataclass(frozen=True)
class FactSignature:
    """The value-bearing parts of a text (see the module docstring)."""

    numbers: frozenset[str]
    codes: frozenset[str]
    grades: frozenset[str]
    days: frozenset[str]
    persons: frozenset[str]
    polarity: int

    def values(self) -> frozenset[str]:
        return self.numbers | self.codes | self.grades | self.days


@lru_cache(maxsize=8192)
def signature(text: str) -> FactSignature:
    shorts = list(THOUSANDS_SHORT.finditer(text))  # "1.5k", "2k"
    amounts = [m.span() for m in shorts]  # "1.5k" is 1500: no code "5k"
    code_matches = [m for m in _CODE.finditer(text) if not any(a <= m.start() < b for a, b in amounts)]
    codes = {m.group(0).lower() for m in code_matches}
    code_spans = [m.span() for m in code_matches]
    numbers: set[str] = set()
    code_spans += amounts  # "1.5k" is 1500, not 1
    for m in _NUMBER.finditer(text):
        if any(a <= m.start() < b for a, b in code_spans):
            continue
        # "1,450" is fourteen hundred and fifty; "3,5" a decimal comma
        value = THOUSANDS.sub("", _SPACES.sub("", m.group(0).lower())).replace(",", ".")
        numbers.add(value)
    numbers.update(plain(float(m.group(1)) * 1000) for m in shorts)
    numbers |= spelled_numbers(text)  # "fifteen hundred", "two grand", "六百五十度"
    # "5 years" and "five years" are one number: compare the digits alone as well.
    bare = {_LEADING_NUMBER.match(n).group(0) for n in numbers if _SIGNED_DIGIT.match(n)}  # type: ignore[union-attr]
    grades = set()
    for m in _GRADE.finditer(text):
        letter = (m.group(1) or m.group(3) or "").upper()
        sign = (m.group(2) or m.group(4) or m.group(5) or "").lower()
        if not letter and m.group(5) and not _TEST_NAMED.search(text):
            continue  # 阳性 / 阴性 alone grade a test only where one is named
        sign = {"positive": "+", "阳性": "+", "negative": "-", "阴性": "-", "阳": "+", "阴": "-"}.get(sign, sign)
        sign = sign.replace("rh", "")
        grades.add(f"{letter}{sign}")
    days = {m.group(0).lower().rstrip("s") if m.group(0).isascii() else m.group(0) for m in _DAYS.finditer(text)}
    persons = {person_key(m.group(0).lower()) for m in _PERSONS_EN.finditer(text)}
    persons |= {person_key(m.group(0)) for m in _PERSONS_ZH.finditer(text)}
    # Negated or not: "I can't swim, never learned" negates once in meaning, twice in words.
    return FactSignature(frozenset(bare), frozenset(codes), frozenset(grades), frozenset(days),
                         frozenset(persons), min(negations(text), 1))


def same_values(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` state the same values (numbers, codes, grades, days, people,
    polarity): the precondition for treating them as one fact."""
    sa, sb = signature(a), signature(b)
    return (sa.numbers == sb.numbers and sa.codes == sb.codes and sa.grades == sb.grades and sa.days == sb.days
            and sa.persons == sb.persons and sa.polarity == sb.polarity)


# Words capitalised only because they open a sentence: no name ("Yeah, I still run ...").
_INTERJECTIONS = frozenset("yeah yes yep yup no nope oh ok okay well hey hi hello wow haha lol sure so "
                           "anyway honestly actually also still".split())


def _entity_keys(text: str) -> set[str]:
    keys = set()
    for entity in extract_entities(text):
        low = entity.lower()
        if low in _INTERJECTIONS:
            continue
        keys.add(" ".join(stem(w) for w in low.split()) if low.isascii() else low)
    return keys


@lru_cache(maxsize=8192)
def content_tokens(text: str, cut_numerals: bool = False) -> frozenset[str]:
    """Keyword tokens of ``text`` that carry meaning (numbers and codes left out: the
    signature compares those)."""
    sig = signature(text)
    out = set()
    # With ``cut_numerals`` (a frame), Chinese numerals are cut out first: jieba reads "六百度" as
    # 六 / 百度 (the firm). The words a restatement shares keep them ("十八号" said again is said again).
    for token in keyword_tokens(ZH_AMOUNT.sub(" ", text) if cut_numerals and ZH_NUMBER.search(text) else text):
        low = token.lower()
        if re.fullmatch(r"[+-]?\d+(?:\.\d+)?", low) or low in sig.codes or low in number_word_tokens():
            continue  # "fifteen hundred" is a value, as "1500" is: no shared frame word
        out.add(low)
    return frozenset(out)


def _covers(entities: set[str], tokens: frozenset[str], text: str) -> bool:
    low = text.lower()
    return all(e in tokens or e in low or all(stem(w) in tokens for w in e.split()) for e in entities)


# Stems of words that carry a stance or emphasis, not a fact (compared after ``keyword_tokens``).
_SOFT_WORDS = frozenset(stem(w) for w in (
    "love like enjoy adore prefer still really also always usually just actually definitely truly indeed "
    "quite very so totally absolutely certainly").split()) | frozenset(
    "喜欢 热爱 爱 很 非常 特别 真的 还是 仍然 依然 一直 也 还 都 总是 确实 其实 挺".split())


def is_paraphrase(a: str, b: str, cosine: float, min_cosine: float) -> bool:
    """Whether ``a`` (new) says what ``b`` (stored) says, in other words, and nothing more (a
    repeat folds into the stored memory, so an added detail would be lost; a restatement with
    more replaces it instead, ``llm.offline.updates.restates``): their embeddings are close
    (``cosine`` >= ``min_cosine``), they state the same values, name the same things (each
    side's entities occur in the other), and share enough of their words: half of them, or a
    quarter when the embeddings are very close (.97, "I love hiking" / "I enjoy going on hikes").
    Cosine alone folds "我对芒果过敏" into "我对花生过敏" (.963)."""
    if cosine < min_cosine - 0.05 or not same_values(a, b) or says_change(a) != says_change(b):
        return False
    ta, tb = content_tokens(a), content_tokens(b)
    shared = ta & tb
    if not shared or len(ta - tb) > 1 or (ta - tb) - _SOFT_WORDS:
        # ``a`` (the new text, which a fold drops) may add one word, and only one that carries no
        # fact ("I love hiking" / "I enjoy going on hikes"): "My cat Tom is grey" after "I have a
        # cat named Tom" says more, and folding it would lose "grey".
        return False
    if not (_covers(_entity_keys(a), tb, b) and _covers(_entity_keys(b), ta, a)):
        return False
    jaccard = len(shared) / len(ta | tb)
    if cosine >= min_cosine and (jaccard >= 0.5 or (jaccard >= 0.25 and cosine >= min_cosine + 0.02)):
        return True
    # Said before with more ("Yeah, I still run every morning before work." after "Every morning
    # before work I go for a run, rain or shine."): nothing new, so a looser embedding match does.
    return len(shared) >= 2 and cosine >= min_cosine - 0.05


# A name said to the listener ("Thanks, Caroline!", "Wow, Mel,") and a transcript's speaker
# label tie every line of a conversation together: they are not what a statement is about.
_LABEL = re.compile(r"^\s*[A-Z][\w'’.\-]{0,24}(?:\s[A-Z][\w'’.\-]{0,24}){0,2}\s*[:：]\s*")
_VOCATIVE = re.compile(
    r"\b(?:hey|hi|hello|thanks|thank you|wow|yes|yeah|no|oh|congrats|congratulations|bye|sure|agreed|cool|awesome|"
    r"great|glad|sorry|okay|ok|dear|love you|miss you)\b[,!.\s]+(?:[A-Z][a-z]+)\b|,\s*[A-Z][a-z]+\s*(?=[!.?,])", _I)


@lru_cache(maxsize=8192)
def statement_words(text: str) -> str:
    """What a rule compares: the text's statements (not its questions), without the speaker
    label and the names said to the listener."""
    body = _LABEL.sub("", text, count=1)
    body = _VOCATIVE.sub(" ", body)
    return statement_part(body) or body


_CHANGE = re.compile(r"换(?!季)\w{0,3}了|改了|改成|换成|变成|新的|新号|新车|搬|现在|不再|已经不|升|转学|转到|调到|改去|改到|离开|辞职|跳槽|"
                     r"涨到|涨了|降到|加到|减到|提高到|降低到|入了|"
                     # "new" as English says it: "新来的组长", "新任", "新家", "新窝", "重新分班"
                     r"新来的|新任|新上任|新换的|新买的|新租的|新搬的|新家|新窝|新公司|新工作|新单位|新领导|新老板|新组长|"
                     r"新经理|新主管|新老师|新班主任|新医生|新地址|新手机|新电脑|重新分|"
                     r"入职|分手|结婚|离婚|提了|换号|开始|(?<!受)(?<!吃)不.{0,2}了$|不再?(?:去|用|做|玩|住|在)[^，。！!？?]{1,8}了|"
                     r"\bdivorce\b|\bsplit up\b|\bbroke up\b|\bengaged\b|\bretired\b|"
                     r"\bnew\b|\bchanged?\b|\bnow\b|\bupdated?\b|\bupdate:|\bswitched\b|\bmoved\b|\banymore\b|"
                     r"\bno longer\b|\bbecame\b|\bupgraded\b|\bquit\b|\bleft\b|\bjoined\b|\bstarted\b|"
                     r"\btransferred\b|\bpromoted\b|\bbroke up\b|\bgot married\b|\bdivorced\b|\bthese days\b|"
                     r"\bnowadays\b|\bfinally\b|\bturns out\b|\bactually\b|\bnot any ?more\b|\bfirst day\b|\btraded\b|"
                     r"\bregistered with\b|"
                     # an amount that moved: "rent goes up to $1,600", "bumped the sertraline up to 100mg"
                     r"\b(?:went|goes|going|gone|go) (?:up|down)\b|\b(?:doubled|halved)\b|\b(?:dropped|cut) to\b",
                     _I)  # not "raised" / "bumped": "Vodafone raised the price to £25" is no news of the user's plan


# A change only wanted or weighed is no change: "好想辞职去大理开个民宿" (the job is still the job),
# "thinking about switching to Verizon", "要不要搬去杭州". The marker must stand just before the
# change word, in the same clause.
_INTENT_ZH = re.compile(r"(?:好想|真想|很想|想要|想|希望|考虑|琢磨着?|寻思着?|要不要|想不想|该不该|犹豫要不要)"
                        r"[^，。！？!?,\s]{0,2}$")
_INTENT_EN = re.compile(r"\b(?:want(?:s|ed)? to|wanna|would like to|'d like to|would love to|'d love to|"
                        r"thinking (?:about|of)|think(?:ing)? about|considering|consider|tempted to|hop(?:e|ing) to|"
                        r"dream(?:ing)? (?:of|about)|wish i could|might|should i|whether to|if i should)"
                        r"(?:\s+[\w'’-]+){0,2}\s+$", _I)


# A change verb right after a negation denies the change: "never change a winning team", "haven't
# moved", 没换, 不改.
_NEGATED_VERB = re.compile(r"\b(?:never|don'?t|doesn'?t|didn'?t|won'?t|wouldn'?t|haven'?t|hasn'?t|not)\s+(?:\w+\s+)?$|"
                           r"(?:没有?|(?<!不得)不|从没|从来没)$", _I)  # not 不得不 ("不得不搬家": had to move)
_CHANGE_VERB = re.compile(r"changed?|switched|moved|updated?|quit|left|joined|started|换\w{0,3}了|改了|改成|换成|搬", _I)


@lru_cache(maxsize=8192)
def says_change(text: str) -> bool:
    """The text announces a change ("换成了", "my new number", "now"): it may update what an
    older memory says, even where the values it can show look alike (a redacted [PHONE]). A
    change word the user only wants or weighs ("好想辞职", "thinking about switching") is none."""
    for m in _CHANGE.finditer(text):
        before = text[max(0, m.start() - 40):m.start()]
        if _INTENT_ZH.search(before) or _INTENT_EN.search(before):
            continue
        if _NEGATED_VERB.search(before) and _CHANGE_VERB.fullmatch(m.group(0)):
            continue  # "never change a winning team", "没换过": the change denied
        return True
    return False


@lru_cache(maxsize=8192)
def says_correction(text: str) -> bool:
    """The text marks itself as a correction ("sorry, I meant ...", "说错了，是 ...")."""
    return _CORRECTION_MARKER.search(text) is not None


# A value named to be rejected: "not AF7713", "instead of 4821", "不是3U8964".
_REJECTED = re.compile(r"(?:\bnot|\b(?:is|was)n'?t|\binstead of|\brather than)\s+(?:the\s+)?(?=[A-Za-z0-9\-.]*\d)[A-Za-z0-9\-.]*[A-Za-z0-9]|"
                       r"不是\s*(?=[A-Za-z0-9\-.]*\d)[A-Za-z0-9\-.]*[A-Za-z0-9]", _I)  # "啊不是 是6800" rejects nothing


def without_rejected(text: str) -> str:
    """``text`` without the values it names only to reject them ("是CA1873 不是CA1837" -> "是CA1873")."""
    return _REJECTED.sub(" ", text)


def rejects_value(text: str) -> bool:
    """``text`` names a value only to reject it ("the code isn't 4821", "不是5316"): an answer
    cut there would give the wrong value."""
    return _REJECTED.search(text) is not None


def corrects(newer: str, older: str, explicit: bool = False, twins: bool = True) -> bool:
    """``newer`` keeps ``older``'s frame and changes a value: a number, a code, a graded letter,
    a day, or the polarity ("locker code 4821" -> "4827", "A+" -> "A-", "I am allergic to
    penicillin" -> "I am not allergic to penicillin"). The frame is what is left of each text's
    words once values are set aside; it must be shared (Jaccard >= .6, at least one word), or the
    two must give the same unit another number ("10 mg of lisinopril" -> "lisinopril to 15 mg"),
    or a value is replaced by its near twin ("BA287" -> "BA278", "Hanson" -> "Hansen"); with
    ``explicit`` (a text that says it corrects: "sorry, I meant ...") no shared word is needed.
    With ``explicit``, ``twins`` lets any value, a word too, be replaced by its near twin without
    a shared word; with ``twins=False`` a word counts only when one holds the other ("怕狗" /
    "不怕狗"), so a change word passed as ``explicit`` swaps no look-alike ("工作" / "发作").
    A value the newer text names only to reject it ("it's AF7731 not AF7713", "是3U8946 不是3U8964")
    is left out of it."""
    newer = without_rejected(newer)
    sn, so = signature(newer), signature(older)
    if _sides(newer) and _sides(older) and _sides(newer) != _sides(older):
        return False  # the left eye and the right eye: two facts, not one corrected
    fn, fo = _frame(newer), _frame(older)
    shared = fn & fo
    # A slip of a value: a number or code beside a shared word of the older statement, or any
    # value (a name too) when the newer text says it corrects.
    if (explicit and twin_values(newer, older, contained_only=not twins)) or (
            bool(shared) and (twin_values(newer, older, words=False, zh_numerals=False) or (
                twin_values(newer, older, words=False) and not (fo - fn and fn - fo)))):
        # (amounts in characters a slip apart beside a word both say only when neither names a thing
        # the other does not: "手机两千五买的" is no slip of "电脑六千五买的", "月薪一万二" of "存款一万五")
        return True
    if _OWN_SLIP.search(newer) and not so.values() and not sn.values() and sn.polarity == so.polarity and shared \
            and (fo - fn) and (fn - fo):
        # Said to be a correction, the same frame with another thing in it: "Correction on the
        # allergy: it's peanuts I'm allergic to" after "I'm allergic to walnuts".
        return True
    changed = (sn.values() != so.values()) or sn.polarity != so.polarity
    if not changed:
        return False
    # A value must be replaced, not only added: "I have a cat" -> "I have a cat and 2 dogs" adds.
    if sn.polarity == so.polarity and (not so.values() or not sn.values()):
        return False
    if shared and len(shared) / len(fn | fo) >= 0.6:
        return True
    # Said to be a correction, a value of the same kind replaced: "Sorry, I meant A-" after "My
    # blood type is A+" (a grade for a grade: no word of the frame is said again), "Oops, typo
    # earlier, it's 12 Elm Street, apartment 5" (a number beside shared words, in a longer text).
    if explicit and sn.polarity == so.polarity and not so.values() <= sn.values() and (
            bool(shared) or (bool(sn.grades) and bool(so.grades) and sn.grades != so.grades)):
        return True
    # A dose or a measure of the same thing: "10 mg of lisinopril" -> "lisinopril to 15 mg".
    units_new, units_old = _units(newer), _units(older)
    common = set(units_new) & set(units_old)
    return bool(common) and any(units_new[u] != units_old[u] for u in common) and (
        explicit or bool(shared - {stem(u) for u in common} - common))


# A decimal stays one value ("A1C 6.8" -> "5.8"), and so does a run of capitals ("KLM 4R2" -> "KLN").
_VALUE_TOKEN = re.compile(r"[A-Za-z]*\d[\w\-]*(?:[.,]\d+)*|(?<![A-Za-z])[A-Z][a-z]{2,}|(?<![A-Za-z])[A-Z]{2,5}(?![A-Za-z])")


@lru_cache(maxsize=8192)  # pure (jieba-bound); both sides of every correction check
def _value_tokens(text: str) -> frozenset[str]:
    """Numbers, codes and capitalised names, and the text's Chinese words (jieba), of what the
    text states (not a speaker label or a name said to the listener)."""
    text = statement_words(text)
    found = set(_VALUE_TOKEN.findall(text))
    # A number typed between characters is a value of its own too: "8栋602就行" holds 602 ("16楼" stays
    # whole beside it, so "16楼" / "17楼" are still a slip apart).
    found |= {n for t in found if re.search(r"[\u4e00-\u9fff]", t) for n in re.findall(r"\d{2,}", t)}
    found |= {t for t in keyword_tokens(text) if re.fullmatch(r"[\u4e00-\u9fff]{2,4}", t)}
    return frozenset(found)


def levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


_ZH_NUMERALS = frozenset("零〇一二两三四五六七八九十百千万亿")


def _numeric_slip(a: str, b: str) -> bool:
    """A number is what differs: digits, or Chinese numerals in the places the two differ
    ("一万二" / "一万五"), not a character of a word ("工作" / "发作")."""
    if re.search(r"\d", a + b):
        return True
    if len(a) != len(b):
        return False
    return all(x in _ZH_NUMERALS and y in _ZH_NUMERALS for x, y in zip(a, b) if x != y)


# Two-character time words ("今年" / "每年" / "过年", "今天" / "明天", "周三" / "周五"): one
# character apart, and no slip of a value.
_ZH_TIME_WORD = re.compile(r"[\u4e00-\u9fff][年月日天周晚]|[上中下]午|周[一二三四五六日末]|星期[一二三四五六日天]")


def twin_values(newer: str, older: str, words: bool = True, contained_only: bool = False,
                zh_numerals: bool = True) -> bool:
    """``newer`` replaces a value of ``older`` with one a slip away: two digits swapped, one
    digit, letter or character off ("4821" -> "4827", "BA287" -> "BA278", "Hanson" -> "Hansen",
    "张丽" -> "张莉"). Only values of two characters or more count: "2 cats" -> "3 cats" may be news.
    ``words=False`` leaves out words without a digit ("左眼" / "右眼" are two eyes, not a slip);
    ``contained_only`` keeps such a word only when one holds the other ("怕狗" / "不怕狗")."""
    # Codes as a whole too ("KJ21 XPT" -> "KJ21 XPF", "UTC+3" -> "UTC-3"), lower-cased.
    # Numbers written in characters as digits ("两千五" -> "2500", beside "一千五" -> "1500").
    old_tokens = {t.lower() for t in _value_tokens(older)} | signature(older).codes | (zh_numbers(older) if zh_numerals else set())
    new_tokens = {t.lower() for t in _value_tokens(newer)} | signature(newer).codes | (zh_numbers(newer) if zh_numerals else set())
    gone, came = old_tokens - new_tokens, new_tokens - old_tokens
    for o in gone:
        for n in came:
            if len(o) < 2 or abs(len(o) - len(n)) > 1 or o.isdigit() != n.isdigit():
                continue
            if _ZH_TIME_WORD.fullmatch(o) and _ZH_TIME_WORD.fullmatch(n):
                continue  # 今年 / 每年, 今天 / 明天: when it is said, not a value that slipped
            if not _numeric_slip(o, n) and (not words or (contained_only and o not in n and n not in o)):
                continue
            distance = levenshtein(o.lower(), n.lower())
            swapped = len(o) == len(n) and sorted(o) == sorted(n)
            if 0 < distance <= (2 if swapped or len(o) >= 4 else 1):
                return True
    return False


def twin_codes(newer: str, older: str) -> bool:
    """A code of ``older`` (letters and digits, 4 or more) is given in ``newer`` a slip away and
    not said again ("MU5137" -> "MU5173", "BA287" -> "BA278"): the same booking told again with
    the right code, with or without a word that says so."""
    old, new = signature(older).codes, signature(without_rejected(newer)).codes  # not the code it rejects
    gone, came = old - new, new - old
    for o in gone:
        for n in came:
            if min(len(o), len(n)) < 4 or not (re.search(r"[a-z]", o) and re.search(r"[a-z]", n)):
                continue
            swapped = len(o) == len(n) and sorted(o) == sorted(n)
            if 0 < levenshtein(o, n) <= (2 if swapped else 1):
                return True
    return False


_SIDE = re.compile(r"\b(?:left|right|upper|lower|front|back|top|bottom|first|second|older|younger|outbound|inbound|return)\b|"
                   r"左|右|去程|回程|返程", _I)


def _sides(text: str) -> frozenset[str]:
    """Words that tell one of a pair from the other (left / right, 左 / 右)."""
    return frozenset(m.group(0).lower() for m in _SIDE.finditer(text))


def _units(text: str) -> dict[str, frozenset[str]]:
    """unit -> the numbers given in it ("10 mg" -> {"mg": {"10"}})."""
    out: dict[str, set[str]] = {}
    for m in _NUMBER.finditer(text):
        parts = re.match(r"([+-]?\d+(?:[.,]\d+)?)\s?(\D+)?$", m.group(0).lower())
        if parts and parts.group(2):
            out.setdefault(parts.group(2).strip(), set()).add(parts.group(1))
    return {unit: frozenset(values) for unit, values in out.items()}


_FRAME_NOISE = frozenset("""now actual actually sorry meant mean correction wrong typo realli still chang new
    updat just turn out turns turned 其实 说错 打错 更正 纠正 应该 改成 现在 新 换 了 已经 不对""".split())


def _frame(text: str) -> frozenset[str]:
    tokens = content_tokens(text, cut_numerals=True)
    return frozenset(t for t in tokens if t not in _FRAME_NOISE and not NEGATION_RE.fullmatch(t)
                     and t not in {"not", "no", "never", "不", "没", "没有", "别"})
