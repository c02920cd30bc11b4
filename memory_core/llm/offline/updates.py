"""Newer wins beyond fixed slots: changes, flips and restatements of the same person's facts.

The slot rules (``slots.py``) know home, phone, e-mail, employer and "my X is Y". People say
more than that: "I bike to work now" replaces "I take the 42 bus to work", "The studio moved
yoga to Wednesday evenings" replaces "My yoga class is on Tuesdays", "Took lessons all summer,
I can swim now" replaces "I can't swim", and "Every day I take a vitamin D supplement, 1000 IU"
says again, with more, what "I take vitamin D every day" said. Three readings, each for two
statements of the same person (``slots._same_owner``):

- ``changes``: the newer one announces a change ("now", "new", "switched", 换了, 搬到, 升) and
  shares a single-valued topic with the older one (``topics.json``: home, job, car, school,
  partner, ...) while naming other things: the older value is gone. Multi-valued things
  (allergies, hobbies, friends, languages) are not topics: a new one is added, not swapped,
  and "also" / "too" / 也 / 还 mark an addition;
- ``flips``: the same thing said with the other polarity, with a shared, specific word
  ("allergic ... penicillin" / "not allergic ... penicillin");
- ``restates``: the newer one says everything the older one did (its specific words, values
  and people) and maybe more, about lasting facts: one memory keeps the fact.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from memory_core.text.chunking import split_sentences
from memory_core.text.constraints import constraint_kind
from memory_core.text.entities import extract_entities
from memory_core.text.facts import content_tokens, negations, says_change, signature, statement_words
from memory_core.text.keywords import stem
from memory_core.text.lang import has_cjk, jieba_pos_tokenizer, jieba_tokenizer
from memory_core.text.subject import PERSON_NOUNS_EN, PERSON_NOUNS_ZH, subject_of
from memory_core.text.similarity import normalize_for_compare

_I = re.IGNORECASE
TOPICS_FILE = Path(__file__).with_name("topics.json")
# ("second" adds a second thing, not a second try: "passed my driving test, second try")
_ADDITIVE = re.compile(r"\b(?:also|too|as well|another|second(?! (?:try|time|attempt|go|round|shot)\b)|in addition|"
                       r"additionally|both)\b", _I)
_ADDITIVE_ZH = frozenset({"也", "还有", "另外", "又多了"})


@lru_cache(maxsize=8192)  # pure (and jieba-bound): asked of each newer text against every candidate
def _adds(text: str) -> bool:
    """The text adds a value rather than replacing one ("I also have a cat", 我也养了狗). Chinese
    is judged on jieba's words: 也 in 也门 is part of a name. (都, "all", marks no addition: "机票酒店都订好了".)"""
    if _ADDITIVE.search(text):
        return True
    return has_cjk(text) and any(w in _ADDITIVE_ZH for w in jieba_tokenizer().lcut(text))
# Words too common to tie two statements to one fact.
_GENERIC = frozenset("""wow awesome amazing great cool nice glad happy sorry thank thanks hey hi hello yeah yes
    super totally definitely sound sounds seem seems fun lol haha omg congrat congrats fyi btw tbh imo idk im ive
    update updat turn turns out after all just know found find
    food thing things time day days week weeks year years lot bit like love get got go going
    make made take took want need think know feel way really much many good great new now still also work
    home back today yesterday tomorrow morning night tonight people person one two first last just realli
    东西 时候 事情 现在 今天 昨天 明天 一直 每天 喜欢 觉得 感觉 一下 已经 还是 真的 时间 一个 这个 那个""".split())


def lexicon_patterns(path: Path, plurals: bool) -> dict[str, re.Pattern[str]]:
    """One alternation per entry of a JSON lexicon (``topics.json``, ``states.json``): English
    words whole (with ``plurals``, also in the plural: "I switched dentists"), Chinese ones
    anywhere, the longest first. Keys starting with "_" are notes."""
    data = json.loads(path.read_text(encoding="utf-8"))
    tail = "(?:s|es)?" if plurals else ""
    return {name: re.compile("|".join(sorted((re.escape(w) if not w.isascii() else rf"\b{re.escape(w)}{tail}\b"
                                              for w in words), key=len, reverse=True)), _I)
            for name, words in data.items() if not name.startswith("_")}


@lru_cache(maxsize=1)
def _topics() -> dict[str, re.Pattern[str]]:
    return lexicon_patterns(TOPICS_FILE, plurals=True)


@lru_cache(maxsize=8192)
def topics_of(text: str) -> frozenset[str]:
    """The single-valued topics ``text`` speaks of (``topics.json``)."""
    return frozenset(name for name, pattern in _topics().items() if pattern.search(text))


@lru_cache(maxsize=8192)
def specific_words(text: str) -> frozenset[str]:
    """Content words of ``text``'s statements specific enough to tie it to a fact (not 'like',
    'time', 现在, nor a negation such as 不吃: polarity is compared on its own)."""
    return frozenset(t for t in content_tokens(statement_words(text))
                     if t not in _GENERIC and len(t) > 1 and not negations(t) and not t.startswith(("不", "没")))


def word_count(text: str) -> float:
    """English words and numbers of ``text``, a Chinese character counting as half a word."""
    return len(re.findall(r"[A-Za-z0-9']+", text)) + len(re.findall(r"[\u4e00-\u9fff]", text)) / 2


def same_word(a: str, b: str) -> bool:
    """One word, or a Chinese word inside the other ("眼镜" / "戴眼镜", "近视" / "轻微近视")."""
    return a == b or (not a.isascii() and not b.isascii() and len(min(a, b, key=len)) >= 2 and (a in b or b in a))


@lru_cache(maxsize=8192)  # pure; asked of each text against every candidate it is compared with
def one_fact(text: str, sentences: int, words: int) -> bool:
    """Whether ``text`` is short enough to state one fact: at most ``sentences`` sentences and
    ``words`` words (a Chinese character counts as half a word) once questions are set aside."""
    body = statement_words(text)
    count = word_count(body)
    # A filler is no sentence: "so...", "well!", "嗯。" open a statement, they state nothing.
    said = [x for x in split_sentences(body) if len(re.findall(r"[A-Za-z0-9']+|[\u4e00-\u9fff]", x)) > 1]
    return count <= words and len(said) <= sentences


def changes(newer: str, older: str) -> bool:
    """``newer`` announces a change of a single-valued topic ``older`` states (see the module
    docstring); the caller has checked both are about the same person."""
    if constraint_kind(older) in ("allergy", "medical", "diet"):
        return False  # lifted only by its own words (states.py): "switched to gluten-free pasta" lifts no allergy
    if _CONTINUES.search(newer):
        return False  # "I got a new phone, still on Vodafone": the topic goes on
    # "also" counts in the clauses that tell the change: "我转到瑞金医院看甲状腺了，挂号也容易些" adds no hospital.
    told = [c for c in _CLAUSES.split(newer) if says_change(c)] or [newer]
    if not says_change(newer) or any(_adds(c) for c in told):
        return False
    # The person both are about ("Leo" in "Leo started third grade" / "My son Leo is in 2nd
    # grade") is no shared thing: only what is said of them is compared.
    about = {subject.split(":", 1)[1] for subject in (subject_of(newer), subject_of(older))
             if subject.split("/")[-1].startswith("name:")}
    if not topics_of(newer) & topics_of(older) and not (_REPLACES.search(newer) and any(
            _is_a_name(e, older) for e in (_entities(newer) & _entities(older)) - about)) and not (
            _SWAPS.search(newer) and (specific_words(newer) & specific_words(older)) - about):
        # No shared single-valued topic: only a swap said as one, of a place or a name both say
        # ("日本签证没下来 改去泰国清迈了" after "年假打算去日本"; "电脑椅" names no 苹果电脑), or
        # with a verb that can only swap, of a thing both say ("我转到瑞金医院看甲状腺了").
        return False
    # "I moved from Lisbon to Porto": the old value named as the old one is no continuation.
    stated = _FROM_OLD.sub(" ", newer)
    new_words, old_words = specific_words(stated), specific_words(older)
    if not new_words - old_words:
        return False  # nothing new named: a continuation or a repeat
    if (_entities(stated) & _entities(older)) - about and not _REPLACES.search(newer):
        # the same Japan trip, the same Biscuit: more about it, not a new value (unless the
        # newer one says it replaces: "国庆改去新疆了" after "国庆打算去云南")
        return False
    sn, so = signature(stated), signature(older)
    # The older value must be gone from the newer statement: a word or a value it does not repeat.
    return bool((old_words - new_words) or (so.values() - sn.values()))


_CONTINUES = re.compile(r"\bstill (?:on|with|using|use|at|in|the same)\b|仍然|依然|还在用|还是用", _I)
# Verbs that can only mean a swap (not 换了, which also buys: "换了个电脑椅").
_SWAPS = re.compile(r"改去|改成|改到|换成|换到|改为|转到|转去|\bswitched (?:me |him |her |us |them )?(?:over )?to\b|"
                    r"\bchanged (?:it |me |him |her |us |them )?(?:over )?to\b|"
                    r"\btraded (?:\w+ ){0,3}in for\b|\binstead of\b", _I)
# Words that say a value was swapped for another, not merely that time passed ("now", "new").
_REPLACES = re.compile(_SWAPS.pattern + r"|换\w{0,3}了|\binstead\b|\bno longer\b|\bnot any ?more\b|\btraded (?:\w+ ){0,3}in\b|"
                       r"\bmy new\b|\b(?:got|have|bought|found|registered with|moved to|signed up with) (?:a|our) new\b|新的", _I)
_FROM_OLD = re.compile(r"\bfrom\s+(?:\w+\s+){0,3}?(?=to\b)|\b(?:left|leaving|quit)\s+\w+(?:\s+\w+)?|离开了?[^，。,]{1,8}|"
                       r"从[^，。,]{1,8}(?:搬|换|转|调)|不在[^，。,]{1,8}(?:了)", _I)


def _is_a_name(word: str, text: str) -> bool:
    """A place or a name: capitalised in ``text`` (English), or one jieba tags as a place, person,
    organisation or other proper noun (日本, 云南; not 电脑)."""
    if word.isascii():
        return re.search(rf"\b{re.escape(word[:1].upper() + word[1:])}\b", text) is not None
    tagged = list(jieba_pos_tokenizer().cut(word))
    return len(tagged) == 1 and tagged[0].flag in ("ns", "nr", "nrt", "nt", "nz")


@lru_cache(maxsize=8192)  # pure (jieba-bound); asked of both sides of many pairs
def _entities(text: str) -> frozenset[str]:
    """Names of specific things (people, places, brands, codes): a capitalised English name or
    a Chinese proper noun. Common nouns ("yoga", "儿子") name a kind, not the one thing."""
    out = set()
    for entity in extract_entities(statement_words(text)):
        if re.fullmatch(r"[\d\s.,:%-]+", entity):
            continue
        if entity.isascii() and not re.search(r"[A-Z\d]", entity):
            continue  # a salient common noun of the lexicon
        out.add(re.sub(r"(?<=\d)\s+(?=[a-z])", "", entity.lower()))  # "175 cm" and "175cm" are one
    return frozenset(out - _COMMON_ZH)


_COMMON_ZH = frozenset("儿子 女儿 孩子 老婆 老公 妈妈 爸爸 公司 学校 工作 朋友 同事 家人 宝宝 闺女".split())


def flips(newer: str, older: str, marked: bool = False) -> bool:
    """The same specific thing said with the other polarity ("I can't swim" -> "I can swim
    now", "I'm allergic to penicillin" -> "not allergic to penicillin after all"): a clause of
    each that say mostly the same words (two thirds of the shorter's, two at least, or one when the newer
    text marks a change or a correction), one negated and the other not. Long chat lines share
    words across unrelated clauses; only clause against clause tells a flip."""
    if not (_states_a_fact(newer) and _states_a_fact(older)):
        return False
    need = 1 if marked else 2
    for clause_new in _CLAUSES.split(statement_words(newer)):
        words_new = specific_words(clause_new)
        if not words_new:
            continue
        negated = negations(clause_new) > 0
        for clause_old in _CLAUSES.split(statement_words(older)):
            if (negations(clause_old) > 0) == negated:
                continue  # the same polarity is no flip (tested first: it needs no word split)
            words_old = specific_words(clause_old)
            shared = words_new & words_old
            if len(shared) >= need and len(shared) / min(len(words_new), len(words_old)) >= 0.67:
                return True
    return False


# Clauses, also where Chinese is typed with spaces for commas ("我戒酒了 两个月没喝了").
# A space after a Latin word that is typed onto Chinese is a comma too ("我不会Python 平时就Excel"),
# not the spaces set around one ("我在 Google 上班"): one fixed-width look-behind per word length.
_LATIN_ENDS_CLAUSE = "|".join(rf"(?<=[\u4e00-\u9fff][A-Za-z0-9]{{{n}}})" for n in range(1, 16))
_CLAUSES = re.compile(r"[，,;；:：。.!！?？\n]|\s[-–—]\s|\bso\b|\bbut\b|\bplus\b|所以|但是|不过|"
                      r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])|"
                      rf"(?:{_LATIN_ENDS_CLAUSE})\s+(?=[\u4e00-\u9fff])", re.IGNORECASE)


# Stems of verbs and fillers a restatement may drop without dropping a fact.
_CARRIES_NO_FACT = frozenset(stem(w) for w in (
    "have has had own owns name named call called get got go goes went do does make keep use is am are was "
    "be been being still really also always usually just actually now currently these days").split()) | frozenset(
    "有 叫 是 在 了 还 也 都 现在 目前 一直 仍然 还是".split())


# English words that are the value of an attribute (a colour, a size, a kind): dropping one
# drops a fact. Chinese words are judged by jieba's part of speech instead (``_names_a_value``).
_VALUE_WORDS_EN = frozenset(stem(w) for w in (
    "red orange yellow green blue purple pink brown black white grey gray silver gold beige navy "
    "big small large tiny huge tall short long old young new used electric manual vegan vegetarian "
    "left right first second third senior junior spicy sweet sour bitter mild hot cold").split())


@lru_cache(maxsize=8192)
def _names_a_value(word: str) -> bool:
    """Whether ``word`` (a content token of a memory) names a thing or a quality: a noun, a
    name or an adjective in Chinese (jieba's tags n*, a*, eng), a listed value word in English."""
    if word.isascii():
        return word in _VALUE_WORDS_EN
    tags = [pair.flag for pair in jieba_pos_tokenizer().lcut(word)]
    return bool(tags) and all(t[:1] in ("n", "a") or t == "eng" for t in tags)


def restates(newer: str, older: str) -> bool:
    """``newer`` says all that ``older`` says about a lasting fact, and maybe more ("Ethan has
    been playing violin since he was six" after "My son Ethan plays the violin"): the same
    people, no value of the older one dropped or changed, the same polarity, and most of the
    older one's specific words (all but one of three or more)."""
    if normalize_for_compare(newer) == normalize_for_compare(older):
        return False  # the same words: a duplicate, which the write folds, not a restatement
    sn, so = signature(newer), signature(older)
    if (negations(newer) > 0) != (negations(older) > 0) or says_change(newer) or _adds(newer):
        return False  # "My bike lock code is 4821 as well": another thing with the same value
    if so.persons - sn.persons and sn.persons - so.persons:
        return False  # "my sister" / "my brother": two people
    if _GIVEN_A_ROLE.search(newer) and not _GIVEN_A_ROLE.search(older):
        return False  # "I put Max down as my emergency contact" says no more of "We have a dog named Max"
    if not so.values() <= sn.values():
        return False
    old_names, new_names = _entities(older), _entities(newer)

    def same_name(o: str, n: str) -> bool:
        if o == n or (not o.isascii() and len(min(o, n, key=len)) >= 2 and (o in n or n in o)):
            return True
        # "Mazda CX-5" / "CX-5": one name's words inside the other's.
        ow, nw = set(o.split()), set(n.split())
        return o.isascii() and n.isascii() and bool(ow) and bool(nw) and (ow <= nw or nw <= ow)

    # A make said before a model the newer one names ("特斯拉Model Y" / "Model Y", "Tesla Model Y"
    # / "Model Y") qualifies that name: dropping it says the same thing.
    kept = [o for o in old_names if any(same_name(o, n) for n in new_names)]
    qualifiers = {o for o in old_names if o not in kept and any(
        re.search(re.escape(o) + r"\s?" + re.escape(k), older, re.IGNORECASE) for k in kept)}
    qualifiers |= {w for k in kept for n in new_names if same_name(k, n) and k.isascii()
                   for w in set(k.split()) - set(n.split())}
    old_names = frozenset(o for o in old_names if o not in qualifiers)
    old_words, new_words = specific_words(older), specific_words(newer)
    old_words = frozenset(w for w in old_words if not any(w in q for q in qualifiers))
    shared = old_words & new_words
    if not shared or len(new_words) < len(old_words) - 1:
        return False  # saying less is no restatement: "Lisbon" must not retire "Lisbon, near the river"
    # A Chinese word inside another counts as said ("四川人" / "四川").
    missing = {w for w in old_words - new_words
               if not any(len(n) >= 2 and not w.isascii() and (w in n or n in w) for n in new_words)}
    # One name dropped and another brought in is another value ("cycled at 苏州园林" / "at 西湖"):
    # two events or a change, never the same fact said again.
    if any(not any(same_name(o, n) for n in new_names) for o in old_names) and \
            any(not any(same_name(o, n) for o in old_names) for n in new_names):
        return False
    # A shared name, place or code ties the two to one thing: half the other words may differ
    # ("I drive a red Mazda CX-5" / "My car is a CX-5, the red one"); otherwise one word may,
    # and two words at least must be shared.
    distinctive = bool(so.values() & sn.values()) or any(same_name(o, n) for o in old_names for n in new_names)
    if not distinctive and len(shared) < 2:
        return False
    # What the older one says and the newer one drops must carry no fact: "I have a cat named Tom"
    # -> "My cat Tom is grey" drops only "have"/"named"; "My cat Tom is grey" -> "My cat Tom
    # loves tuna" drops "grey", and retiring it would lose the cat's colour (both stay).
    missing = {w for w in missing - _CARRIES_NO_FACT if w not in PERSON_NOUNS_EN and w not in PERSON_NOUNS_ZH}
    if any(_names_a_value(w) for w in missing):
        return False
    allowed = len(old_words) // 2 if distinctive else (1 if len(old_words) >= 3 else 0)
    return len(missing) <= allowed and _states_a_fact(older) and _states_a_fact(newer)


# A name put in a role by the user ("listed Max as my emergency contact", "把乐乐填成紧急联系人"):
# another thing said of the name, or another bearer of it, never the older fact said again.
_GIVEN_A_ROLE = re.compile(r"\b(?:put|puts|putting|list|listed|lists|add|added|adds|register|registered|sign|signed|set)"
                           r"\s+(?:[\w'’]+\s+){0,3}?as\s+(?:my|our|his|her|the)\b|填成|填为|设成|设为|登记为|登记成", _I)
_FIRST_OR_THIRD = re.compile(r"\b(?:I|I'm|I've|I'd|im|ive|my|me|mine|we|our|us)\b|我|\b(?:he|she|they|his|her|their)\b|他|她", _I)
# A span of weeks or more gone by without something, after "haven't": "... had a drink in weeks".
SPAN_WITHOUT_EN = (r"[^.!?]{0,30}(?:\b(?:in|for)\s+(?:(?:\d+|a|an|two|three|four|five|six|several|many|a few|over a|over)\s*)?"
                   r"(?:weeks|months?|years?)\b|"
                   # "haven't touched a cigarette since march 3rd", "... since new year": since a named time
                   r"\bsince\s+(?:january|february|march|april|may|june|july|august|september|october|november|december|"
                   r"new year|christmas|last (?:year|month|summer|winter|spring|autumn|fall)|\d{4}\b|"
                   r"\d{1,2}(?:st|nd|rd|th)\b|\d{1,2}/\d{1,2}))")  # a date, not "since 7am"
_EN_SPAN_DROPPED = re.compile(r"^\W*(?:(?:so|and|ok|okay|well|oh|finally|officially)\W+)*(?:haven'?t\b" + SPAN_WITHOUT_EN + r"|"
                              r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|a few)\s+(?:days?|weeks?|months?|years?)\s+"
                              r"(?:\w+-free|clean|sober)\b|"
                              # a change told with its "I" dropped: "stopped the melatonin a month ago", "paid off the car"
                              # (not "stopped by / at the shop": a visit)
                              r"(?:just\s+|finally\s+)?(?:stopped(?!\s+(?:by|at|in|off|for|over)\b)|quit|started|sold|gave up|"
                              r"paid off)\b)", _I)
_REACTION_OPENING = re.compile(r"^\W*(?:wow|awesome|great|cool|nice|congrats|congratulations|sorry|thanks|thank you|glad|"
                               r"that'?s (?:great|awesome|amazing|cool|so|really)|sounds|hey|hi|haha|lol|omg|哇|太好了|恭喜|谢谢|哈哈)\b",
                               _I)


@lru_cache(maxsize=8192)  # pure; asked of both sides of every pair
def _states_a_fact(text: str) -> bool:
    """A statement about someone (I / my / 我 / he / she), not a reaction to the listener ("Wow,
    Caroline, that sounds awesome!"): only such texts restate a fact."""
    body = statement_words(text)
    if _REACTION_OPENING.search(body):
        return False
    # Chinese drops the subject when it is the speaker ("血压一直偏高", "周末一般都去爬山"); English
    # does in a span without something ("haven't had a drink in weeks", "3 months smoke-free").
    # Chinese with a name or a term in Latin letters is still Chinese ("自学了半年Python 现在能写爬虫了").
    return bool(_FIRST_OR_THIRD.search(body)) or (has_cjk(body) and _mostly_chinese(body)) or bool(
        _EN_SPAN_DROPPED.match(body))


def _mostly_chinese(body: str) -> bool:
    return len(re.findall(r"[\u4e00-\u9fff]", body)) > len(re.findall(r"[A-Za-z]", body))
