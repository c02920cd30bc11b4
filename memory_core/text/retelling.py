"""A fact told again in other words, anchored on what names it: one memory keeps both tellings.

People tell the assistant the same fact twice, months apart and worded anew: "my cat's name is
Miso" / "btw my cat is called Miso, in case I never said"; "My license plate is KX19 ABC" / "plate
number KX19 ABC, for the parking form"; "车停在B2层C区108" / "停车位 108 C区 B2 怕忘了再说一遍".
The stricter readings (``repeats``, ``restating.told_again``, the offline ``says_again``) ask for
the values written the same way and the first clause said again word for word, and count the
"never" of "in case I never said" as a flip, so each of these stayed two active memories: on the
probe sets, about half of all repeats.

``retells`` reads two texts as one fact told twice, in other words (the older one's words with
more after them are a restatement, judged elsewhere), when the newer one

- says again every value of the older one, written as people write them: a phone number spaced
  or not, "1991" / "91", "2nd" / "2", a code's parts in another order ("B2层C区108" / "108 C区
  B2"), and puts no other number beside them ("I run 10k every morning, 5k felt too easy"), nor
  a value or a name a slip away from an older one (4821 / 4827, Hanson / Hansen: corrections);
- says again what the older one says something is like (a colour, a size, a taste: "My cat Tom
  is grey" and "My cat Tom loves tuna" are two facts about Tom);
- shares with it a name, a proper noun (Miso, Bangkok Spice, 苏晴, 伊犁) or a value, and says
  again the older one's other words: both of two ("my gate code is 4821" is not "bike lock code is
  4821"), half of more; a code of letters and digits (a flight, a plate) is enough alone;
- holds it as the older one does: as many negations, the same stance ("I'm a Liverpool fan" /
  "Liverpool fans are the worst") and place (home, work), the same hedge, wish or plan; it neither
  ends, turns nor resumes it ("I'm off keto", "14 Harrow Road was my address until March",
  "eating carbs again"), and tells no event of a day ("had a coffee at Starbucks last week",
  "今天吃了芒果冰" beside "我对芒果过敏");
- speaks of no person the older one did not ("my niece Emma" beside "my daughter Emma"), and
  names no person, place or organisation the older one lacks while the older one names one it
  lacks ("dinner in Chaoyang with Anna" / "I live in Beijing, in Chaoyang");
- is no question, announces no change or correction, and is no longer than a memory may grow
  once joined.

Then nothing of the older telling is lost by keeping the newer one with the older's words beside
it (``joined_text``), and no stale value survives the join: every older value is said again, and
no end, flip or other value is told. The join (``conflict_rules.inherited_detail``) reads it after
whatever rule superseded, so it checks the question itself; the offline ``supersedes_text`` has
checked that both are about the same person before it asks.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

from memory_core.text.entities import extract_entities
from memory_core.text.facts import levenshtein, negations, says_change, says_correction, signature, twin_values
from memory_core.text.keywords import keyword_tokens
from memory_core.text.lang import has_cjk, jieba_pos_tokenizer
from memory_core.text.repeats import HEDGE, without_filler
from memory_core.text.restating import stances
from memory_core.text.intent import is_question
from memory_core.text.similarity import normalize_for_compare

# The share of the older telling's other words (beside its names and values) the newer one must
# say again, when there are more than two.
MIN_WORDS_SAID = 0.5
MAX_RETOLD_CHARS = 600  # as restating.MAX_JOINED_CHARS: a joined memory stays a memory

_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_PIECES = re.compile(r"[a-z]+|\d+")
# What ends, turns or only supposes a fact without a change word (as restating's list, less "was",
# which a birthday is told with: "I was born on April 2nd"; and a death, a sale, a break-up, an "if").
_TURNED = re.compile(r"\bused to\b|\bgave up\b|\bno more\b|\bany ?more\b|\bex-|\bformer\b|\b(?:off|quit|stopped|ditched)\b|"
                     r"\bdone with\b|\bput (?:\w+ )?down\b|\bpassed away\b|\bdied\b|\bsold\b|\bselling\b|\bbroke up\b|\bdivorced?\b|"
                     r"\bwas\b(?! born)|\bwere\b(?! born)|\buntil\b|\btill\b|\b(?:my|our|the) old\b|\blast day\b|\bfinished\b|"
                     r"\bcompleted\b|\bfired\b|\blaid off\b|\bretired\b|\bback (?:in|when)\b|\bin (?:college|high school|uni)\b|\bshut\b|\bclos(?:ed|ing)\b|\bcancel+(?:ed|ing)?\b|\bmissing\b|\blost\b|\bmoving\b|"
                     r"\bif\b|\bunless\b|以前|曾经|之前|不再|放弃|前夫|前妻|前任|前男友|前女友|戒了|去世|走了|卖了|分手|离婚|如果|要是|"
                     r"假如|万一|取消|关门|倒闭|退了|结束|学完|毕业|辞了|离职|丢了|搬走|被裁|退休|当年|那时候|小时候|大学时|上学时",
                     re.IGNORECASE)
# A day or an occasion: what is told with one happened then (an event), unless both tellings have one.
_OCCASION = re.compile(r"\b(?:today|tonight|yesterday|this (?:morning|afternoon|evening|week)|last (?:night|week|month|year|"
                       r"weekend|time)|on (?:mon|tues|wednes|thurs|fri|satur|sun)day|(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
                       r"(?:\w+ )?ago)\b|今天|今晚|昨天|昨晚|今早|刚才|前天|上周|上个?月|上星期|去年|周末|周[一二三四五六日天]|"
                       r"星期[一二三四五六日天]|礼拜[一二三四五六日天]|[一二三四五六七八九十两几\d]+(?:天|周|个月|年)前", re.IGNORECASE)
# Whose place it is (home, work, school): "我家wifi密码" and "公司wifi密码" are two passwords.
_PLACE = re.compile(r"\b(?:home|house|work|office|school|gym)\b|家|公司|单位|办公室|学校|宿舍", re.IGNORECASE)
# Not yet so: a wish, a plan, what is coming (a retelling states it as the older one did).
_PLANNED = re.compile(r"\b(?:wish|hope|hoping|dream|saving (?:up )?for|training for|next (?:week|month|year)|"
                      r"soon|someday|will|'ll|about to)\b|希望|梦想|想要|盼着|考虑|琢磨|下个?月|下周|下星期|明年|明天|后天|快要|将要|即将",
                      re.IGNORECASE)
# Doing it once more, not saying it once more ("eating carbs again", 又开始): a state resumed.
_AGAIN = re.compile(r"(?<!say )(?<!said )(?<!saying )(?<!tell you )(?<!told you )\bagain\b|又(?![到是])|再次|重新", re.IGNORECASE)
# What something is like (a colour, a size, a taste): said of it, it is the fact ("My cat Tom is
# grey" and "My cat Tom loves tuna" are two facts about Tom), so a retelling says it again.
_QUALITY = re.compile(r"\b(?:red|orange|yellow|green|blue|purple|pink|brown|black|white|gr[ae]y|silver|gold|beige|navy|"
                      r"big|small|large|tiny|huge|tall|short|spicy|sweet|sour|bitter|mild)\b|"
                      r"[红橙黄绿蓝紫粉黑白灰棕金银]色|(?:特|超|很|不)?(?:辣|甜|酸|苦)", re.IGNORECASE)
_PRONOUNS = frozenset("i me my mine we us our you your he him his she her they them their it its "
                      "我 我们 你 你们 他 她 它 他们 她们 咱 咱们".split())
# Characters that only glue a Chinese sentence together, or say who ("我开" is said by "开了").
_GLUE = frozenset("我你他她它们的地得了着过吧呢啊是在有")
_NAMING = frozenset({"name", "call", "called", "named", "叫", "名字"})
_PROPER_TAGS = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz", "eng"})
_NAME_TAGS = frozenset({"nr", "ns", "nt"})


def _numbers(values: Iterable[str]) -> set[str]:
    """Numbers as people vary them: without leading zeros, a year also by its last two digits."""
    out = set()
    for value in values:
        bare = value.lstrip("+").lstrip("0") or "0"
        out.add(bare)
        if re.fullmatch(r"(?:19|20)\d\d", bare):
            out.add(bare[2:])
    return out


@lru_cache(maxsize=4096)  # read several times for each pair
def _split_values(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The text's numbers (ordinals as numbers: "2nd" is 2) and its other codes, lower-cased."""
    sig = signature(text)
    ordinals = {c: m.group(1) for c in sig.codes if (m := _ORDINAL.match(c))}
    return sig.numbers | frozenset(ordinals.values()), sig.codes - frozenset(ordinals)


def _values_said_again(newer: str, older: str) -> bool:
    """Every value of ``older`` is in ``newer``, however it is written there."""
    so, sn = signature(older), signature(newer)
    if not (so.grades <= sn.grades and so.days <= sn.days):
        return False
    old_numbers, old_codes = _split_values(older)
    new_numbers, new_codes = _split_values(newer)
    digits_old, digits_new = "".join(re.findall(r"\d", older)), "".join(re.findall(r"\d", newer))
    if digits_old and digits_old == digits_new and not old_codes:
        return True  # "138 2233 4455" / "13822334455": the same digits, spaced otherwise
    given = _numbers(new_numbers) | _numbers(p for c in new_codes for p in _PIECES.findall(c) if p.isdigit())
    # "一只", "周一", "first one": the article or a day's name, read as the number one, need not recur.
    if any(not _numbers([n]) & given for n in old_numbers - {"1"}):
        return False
    new_pieces = set(_PIECES.findall(newer.lower()))
    return all(code in new_codes or set(_PIECES.findall(code)) <= new_pieces for code in old_codes)


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """The text's search words less the filler around a repeat ("记一下", "btw"), pronouns, single
    Chinese characters ("区", "层") and values (counted apart: ``retells``)."""
    return frozenset(t for t in (w.lower() for w in keyword_tokens(without_filler(text))) if t not in _PRONOUNS
                     and not re.fullmatch(r"[\d.,]+", t) and len(t) > (2 if t.isascii() else 1)
                     and not (re.search(r"\d", t) and t in signature(text).codes))


def _said(word: str, words: frozenset[str], text: str) -> bool:
    """``word`` is said in the other telling: as a word, or (Chinese) all its characters."""
    if word in _NAMING and words & _NAMING:
        return True  # "my cat's name is Miso" / "my cat is called Miso"
    return word in words or (has_cjk(word) and all(ch in text for ch in word if ch not in _GLUE))


@lru_cache(maxsize=4096)
def _named(text: str, capitalised: bool, tags: frozenset[str]) -> frozenset[str]:
    """The names of ``text`` (each word, lower-cased; with ``capitalised`` only those written with a
    capital) and its Chinese words jieba tags with one of ``tags``."""
    out = {w for e in extract_entities(text) if (e[:1].isupper() or not capitalised)
           and not re.fullmatch(r"[\d\s.,:%/-]+", e)
           for w in re.sub(r"['’]s\b", "", e.lower()).split() if len(w) > 2 or (has_cjk(w) and not capitalised)}
    if has_cjk(text):
        out |= {p.word for p in jieba_pos_tokenizer().lcut(text) if p.flag in tags and len(p.word) > 1
                and (has_cjk(p.word) or capitalised)}
    return frozenset(out)


def _anchors(text: str) -> frozenset[str]:
    """What names a fact in ``text``: its names and its Chinese proper nouns (jieba's person,
    place, organisation and other-name tags)."""
    return _named(text, False, _PROPER_TAGS)


def _names(text: str) -> frozenset[str]:
    """The people, places and organisations ``text`` names: its capitalised names, and the words
    jieba tags as a person, place or organisation (not its other nouns: 女朋友, 工位)."""
    return _named(text, True, _NAME_TAGS)


def _shared_anchor(newer: str, older: str) -> set[str]:
    """The anchors of ``older`` said in ``newer``, and the values (2+ digits or codes) both give."""
    low_new = newer.lower()
    shared = {a for a in _anchors(older) if a in low_new}
    n_old, c_old = _split_values(older)
    n_new, c_new = _split_values(newer)
    shared |= {n for n in _numbers(n_old) & _numbers(n_new) if len(n) > 1}
    shared |= {c for c in c_old if c in c_new or set(_PIECES.findall(c)) <= set(_PIECES.findall(low_new))}
    return shared


def _twin_names(newer: str, older: str) -> bool:
    """A name of ``older`` is given in ``newer`` a slip away and not said again ("Hanson" /
    "Hansen", "张丽" / "张莉"): a correction, not a retelling."""
    old_names, new_names = _anchors(older), _anchors(newer)
    low_new, low_old = newer.lower(), older.lower()
    gone = [o for o in old_names if o not in low_new]
    came = [n for n in new_names if n not in low_old]
    return any(0 < levenshtein(o, n) <= (1 if len(o) < 5 else 2) and abs(len(o) - len(n)) <= 1
               and has_cjk(o) == has_cjk(n) for o in gone for n in came)


def _differs(pattern: re.Pattern[str], newer: str, older: str) -> bool:
    """One telling has what ``pattern`` marks and the other has not."""
    return bool(pattern.search(newer)) != bool(pattern.search(older))


def retells(newer: str, older: str) -> bool:
    """Whether ``newer`` tells ``older``'s fact again (module docstring)."""
    if normalize_for_compare(older) in normalize_for_compare(newer):
        # The same words, or the same words and more: a duplicate, folded at the write, or said
        # with more, which the readings of a restatement judge (offline ``restates``).
        return False
    bare = without_filler(newer)
    if is_question(newer) or is_question(older):
        return False  # the join reads this too (conflict_rules), after any rule that superseded
    if says_change(bare) or says_correction(newer) or twin_values(newer, older, words=False) \
            or _twin_names(newer, older):
        return False
    if _OCCASION.search(newer) and not _OCCASION.search(older):
        return False  # what happened on a day ("今天吃了芒果冰", "last week at Starbucks") is an event
    if any(_differs(p, bare, older) for p in (_AGAIN, _TURNED, HEDGE, _PLANNED)):
        return False  # ended, resumed, hedged, wished or planned in one telling only
    if stances(older) != stances(bare) \
            or {m.lower() for m in _PLACE.findall(older)} != {m.lower() for m in _PLACE.findall(bare)}:
        return False  # held otherwise ("I'm a Liverpool fan" / "Liverpool fans are the worst"), or another place's
    if negations(bare) != negations(without_filler(older)):
        return False  # "spot 108 is my neighbour's, not mine", "Bangkok Spice, not my favourite"
    if len(older) + len(newer) + 1 > MAX_RETOLD_CHARS or not _values_said_again(newer, older):
        return False
    n_old, n_new = _numbers(_split_values(older)[0] - {"1"}), _numbers(_split_values(newer)[0])
    if n_old and n_new - n_old:
        return False  # a number beside the older one's: "I run 10k every morning, 5k felt too easy"
    so, sn = signature(older), signature(newer)
    anchors = _shared_anchor(newer, older)
    if not anchors or sn.persons - so.persons:
        return False  # no shared name or value; or a person the older one did not speak of ("my niece Emma")
    only_old = {a for a in _names(older) if a not in newer.lower()}
    only_new = {a for a in _names(newer) if a not in older.lower()}
    if only_old and only_new:
        return False  # each names what the other does not: "dinner in Chaoyang with Anna" / "I live in Beijing, in Chaoyang"
    low_new = newer.lower()
    if any(q.lower() not in low_new for q in _QUALITY.findall(older)):
        return False  # a quality of the older telling not said again: another fact about the same thing
    old_words, new_words = _words(older), _words(newer)
    if len(new_words) < 2 or (new_words < old_words):
        return False  # saying less, and nothing else, retires nothing ("I live in Lisbon" / "..., near the river")
    # What the older telling says beside its names and values must mostly be said again: "my gate
    # code is 4821" is not "bike lock code is 4821", nor "我住在杭州" "我公司在杭州".
    framing = [w for w in old_words if not any(w in a or a in w for a in anchors)]
    said = sum(1 for w in framing if _said(w, new_words, low_new))
    coded = any(len(c) >= 5 and re.search(r"[a-z]", c) and re.search(r"\d", c) for c in anchors)
    if not framing:
        return coded  # "我住在望京" / "我在望京上班": only the place is shared
    if len(framing) <= 2:
        return coded or said == len(framing)  # "my gate code" / "bike lock code": a word of two is what it is
    return coded or said >= MIN_WORDS_SAID * len(framing)
