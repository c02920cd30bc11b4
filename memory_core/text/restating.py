"""A fact told again, with other detail: the one memory that holds it keeps both tellings.

"my sister Chloe lives in Edinburgh, in Leith" and, months later, "Chloe's still in Edinburgh,
she loves it up there": newer-wins lets the newer memory replace the older one (one active
memory holds the fact), but the older one's detail (Leith) would then leave what the assistant
is shown. So when the newer memory tells the same fact again, rather than changing or
correcting it, it keeps the older one's words beside its own (``conflict_rules.inherited_detail``).

Telling again says much of the older telling again (``MIN_SAID_AGAIN`` of its words: news that
ends a fact shares a word or two with it, "cats are totally fine" after "I'm allergic to cats, I
sneeze nonstop whenever I visit Jen"), and is told apart from changing by what would make the two
texts disagree: a change or a correction marked ("moved", "now", "sorry, I meant"), a new value
beside the older one's (4821 / 4827, Year 2 / Year 3, "88号" / "86号，88号是隔壁楼"), another count
of negations ("不吃晚饭" / "恢复正常吃晚饭了，不吃晚饭胃受不了"), or a name of each side that the
other lacks (Westpac / Canva, Edinburgh / Glasgow). Any of these, and the older text is dropped as
before: joined into the newer one, it would keep a stale value alive.
"""
from __future__ import annotations

import re

from memory_core.text.chunking import split_sentences
from memory_core.text.entities import extract_entities
from memory_core.text.facts import negations, says_change, says_correction, signature
from memory_core.text.keywords import keyword_tokens
from memory_core.text.lang import has_cjk
from memory_core.text.pii import PLACEHOLDER_RE
from memory_core.text.repeats import without_filler
from memory_core.text.similarity import normalize_for_compare

# A joined memory stays a memory, not a file: past this, the older telling is left to the key.
MAX_JOINED_CHARS = 600
# The share of the older telling's words the newer one must say again.
MIN_SAID_AGAIN = 0.4
_PRONOUN = re.compile(r"['’]|^(?:we|they|you|he|she|it|us|them)$", re.IGNORECASE)


def _names(text: str) -> frozenset[str]:
    """The specific things a text names (people, places, brands, codes), lower-cased."""
    return frozenset(re.sub(r"['’]s$", "", e.lower()) for e in extract_entities(text)
                     if not re.fullmatch(r"[\d\s.,:%/-]+", e))  # "Chloe's" names Chloe


# What ends or turns a fact without a change word: "I eat meat again", "I used to run", "gave up
# Spanish", 以前是素食者, 不再, my ex-wife.
_TURNED = re.compile(r"\bagain\b|\bused to\b|\bgave up\b|\bgiving up\b|\bno more\b|\bany ?more\b|\bwas\b|\bwere\b|"
                     r"\bex-|\bformer\b|\bnot\b|以前|曾经|不再|放弃|前夫|前妻|前任|又(?![到是])", re.IGNORECASE)
# How a fact is held ("love" / "hate", 喜欢 / 讨厌, "great" / "awful"): told again, it is held alike.
STANCE = re.compile(r"\b(?:love[sd]?|hate[sd]?|like[sd]?|dislike[sd]?|enjoy(?:s|ed)?|prefer(?:s|red)?|"
                     r"favou?rite|great|awful|good|bad|terrible|amazing|lovely|horrible|best|worst)\b|"
                     r"不喜欢|喜欢|讨厌|最爱|爱|恨|好吃|难吃|不错|很好|很差|最好|最差", re.IGNORECASE)
# Words that frame a fact rather than say it (the older telling's first clause must be said again
# without them): how one lives, works, takes or has it.
_FRAME = frozenset("""live lives living work works take takes have has had get go goes eat eats drink drinks
    usual always usually every really just still also very my our the a an is are am im ive fyi btw tbh lol idk imo
    住 住在 在 做 是 有 一家 一个 一只 我 我们 家 吃 喝 用 上班""".split())
_FIRST_CLAUSE = re.compile(r"[,，;；:：。.!！?？\n]|\s(?:and|but|so)\s|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")


# Words typed short in chat, read as the word they stand for ("august 4 is my bday").
_TYPED_SHORT = {"bday": "birthday", "bdays": "birthday", "b-day": "birthday", "appt": "appointment", "pw": "password",
                "pwd": "password", "hubby": "husband", "convo": "conversation", "bro": "brother", "sis": "sister"}


def _said_in(word: str, tokens: frozenset[str], text: str) -> bool:
    """``word`` is said in the other telling: one of its ``tokens`` (read through ``_TYPED_SHORT``
    by the caller, as ``word`` is here), or (Chinese) its characters."""
    word = _TYPED_SHORT.get(word, word)
    return word in tokens or (has_cjk(word) and all(ch in text for ch in word))


def stances(text: str) -> frozenset[str]:
    """How ``text`` holds what it speaks of ("love", "hate", 喜欢, 讨厌), lower-cased."""
    return frozenset(m.lower() for m in STANCE.findall(text))


def told_again(newer: str, older: str) -> bool:
    """Whether ``newer`` tells ``older``'s fact again rather than changing it (module docstring).
    The caller has already decided that ``newer`` replaces ``older``."""
    if says_change(newer) or says_correction(newer) or _TURNED.search(without_filler(newer)):
        return False
    stance = stances(older)
    if stance and stance != stances(newer):
        return False  # "我喜欢吃辣" / "我讨厌吃辣", "she is great" / "she is awful"
    # The older telling's first statement is said again whole: "I take metformin every morning" is
    # not told again by "... every evening", nor "我喜欢吃辣" by "我讨厌吃辣".
    new_tokens = frozenset(_TYPED_SHORT.get(t.lower(), t.lower()) for t in keyword_tokens(newer))
    head = _FIRST_CLAUSE.split(older.strip(), 1)[0]
    no, nn = _names(older), _names(newer)  # read once: each is a jieba POS pass
    so, sn = signature(older), signature(newer)
    persons = so.persons if no & nn else frozenset()
    if any(not _said_in(w, new_tokens, newer) for w in (t.lower() for t in keyword_tokens(head))
           if w not in _FRAME and w not in persons and not _PRONOUN.search(w)):
        return False
    words = {w for w in keyword_tokens(older) if not _PRONOUN.search(w)}
    if len(words & set(keyword_tokens(newer))) < max(1.0, MIN_SAID_AGAIN * len(words)):
        # A restatement says again much of what the older one said; a change told as news shares a
        # word or two ("cats are totally fine" after "I'm allergic to cats, I sneeze nonstop ...").
        return False
    if negations(without_filler(newer)) != negations(without_filler(older)):
        return False  # "不吃晚饭" / "恢复正常吃晚饭了，不吃晚饭胃受不了": a flip said with a negation kept
    if so.values() and sn.values() - so.values():
        return False  # a value the older one did not have, beside its own: "88号" -> "86号，88号是隔壁楼"
    only_old = {o for o in no if not any(o in n or n in o for n in nn)}
    only_new = {n for n in nn if not any(o in n or n in o for o in no)}
    # Each side names a thing the other does not, or the newer names a new thing where the older
    # named one ("My favourite food is pizza, sushi is overrated"): another thing.
    return not ((only_old and only_new) or (no and only_new))


def keeps_older(newer: str, older: str) -> bool:
    """Whether the memory ``newer`` replaces ``older`` with will hold what ``older`` said: told
    again, no sealed value in either (each memory seals its own), and short enough to join."""
    if PLACEHOLDER_RE.search(older) or PLACEHOLDER_RE.search(newer) or not told_again(newer, older):
        return False
    return joined_text(older, newer) is not None or normalize_for_compare(older) in normalize_for_compare(newer)


def joined_text(older: str, newer: str) -> str | None:
    """``older``'s sentences that ``newer`` does not already hold, then ``newer``; None when
    ``newer`` holds them all or the joined text would be too long to stay one memory."""
    held = normalize_for_compare(newer)
    missing = [s.strip() for s in (split_sentences(older) or [older])
               if s.strip() and normalize_for_compare(s) and normalize_for_compare(s) not in held]
    if not missing:
        return None
    parts: list[str] = []
    for sentence in missing + [newer.strip()]:
        if parts and not re.search(r"[。！？!?.;；…]$", parts[-1]):
            parts[-1] += "。" if has_cjk(parts[-1][-1]) else "."
        parts.append(sentence)
    joined = "".join(p if not i or has_cjk(p[:1]) else " " + p for i, p in enumerate(parts))
    return joined if len(joined) <= MAX_JOINED_CHARS else None
