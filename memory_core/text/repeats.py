"""A fact said again, with nothing added: "fyi I'm left-handed" after "I'm left-handed, so
scissors are my enemy", "just so you remember: allergic to kiwi!!" after "I'm allergic to kiwi".

``facts.is_paraphrase`` folds two texts that say the same thing in other words, and lets the
new one add at most one soft word. People repeat themselves with words around the fact that
say nothing about them ("btw", "in case I never said", "you should know that by now lol", 记一
下, 跟你说), and more briefly than the first time: each such repeat became a second memory.

A repeat folds into the stored memory, so what it adds would be lost; here the new text, once
its filler is gone, must add no word of its own (a word that differs from one of the stored
text's only by a derivational ending counts as said: "allergy" / "allergic"), state the same values
(numbers, codes, days, polarity), be about the same person, announce no change and hedge as much
as the stored one ("I used to smoke", "我想戒烟" are not what "I smoke", "我戒烟了" say). Only then
does a looser embedding match (``dedup_repeat_similarity``) do.
"""
from __future__ import annotations

import re
from functools import lru_cache

from memory_core.text.facts import _SOFT_WORDS, content_tokens, same_values, says_change
from memory_core.text.lang import CJK_CLASS
from memory_core.text.subject import same_subject

_I = re.IGNORECASE

# Words around a repeat that say nothing about the user: why it is said, not what.
_FILLER = re.compile(
    r"\b(?:by the way|btw|fyi|fwiw|just so you (?:know|remember)|just to remind you|just a reminder|reminder|"
    r"in case (?:i|you) (?:never (?:said|told you|mentioned (?:it)?)|forgot|didn'?t (?:know|say|mention|tell you))|"
    r"(?:as|like) i (?:said|told you|mentioned)(?: before| earlier)?|"
    r"you (?:should|must|ought to) (?:know|remember) (?:that|this)(?: by now)?|remember(?: that| this)?|"
    r"don'?t forget|lol|lmao|haha+|hehe+|anyway(?:s)?|yes|yeah|yep|ok|okay|so|again|"
    r"sav(?:e|ing) (?:this|it) (?:here|somewhere)|for (?:my )?(?:records|reference)|"
    r"just so it'?s (?:written down|saved|somewhere))\b[,:!.]*|"
    r"顺便说一?下|跟你说一?下?|我跟你讲|说过了?|再说一遍|再发一遍|记一下|记住了?|你记着|提醒你一?下|别忘了|帮我存着|存一下|"
    r"哈哈+|嘿嘿|呵呵|嘻嘻|啦|呀|嘛|哦|噢|反正|总之", _I)


@lru_cache(maxsize=8192)
def without_filler(text: str) -> str:
    """``text`` without the words that only frame a repeat ("btw", "in case I never said", 记一下)."""
    return re.sub(r"\s+", " ", _FILLER.sub(" ", text or "")).strip(" ,.!:;，。！：；")


# Naming a thing one way or the other says the same ("my cat is called Miso" / "my cat's name is Miso").
_NAMING = frozenset({"call", "called", "name", "named", "叫", "叫做", "名字"})


_SUFFIX = re.compile(r"(?:ies|ic|ical|y|ed|ing|s)$")


def _base(word: str) -> str:
    """A word without its derivational ending ("allergy" / "allergic" -> "allerg")."""
    return _SUFFIX.sub("", word) if word.isascii() and len(word) > 5 else word


# Characters that only glue a Chinese sentence together ("还得还", "生的", "是我对象"): no fact in them.
_ZH_GLUE = frozenset("的地得了着过吧呢啊嘛呀就都也还又才再很挺太真是在有和跟与把被给个这那么要会能")
_CJK_WORD = re.compile(f"[{CJK_CLASS}]+")


def _said_in(token: str, tokens: frozenset[str], stored: str = "") -> bool:
    """``token`` says nothing the stored text did not: one of its words, a word of its family
    ("allergy" / "allergic"), or, in Chinese, the same characters cut into other words ("每月" in
    "每个月", "出生" in "生的" ... "出生的"): a repeat reorders and regroups the characters, and
    jieba cuts them differently."""
    if token in tokens or token in _NAMING:
        return True
    if _CJK_WORD.fullmatch(token):
        return all(ch in stored for ch in token if ch not in _ZH_GLUE)
    return token.isascii() and any(t.isascii() and len(_base(t)) >= 5 and _base(t) == _base(token) for t in tokens)


# What the stored text only intends, plans, had or suspects: said plainly now, it is news, not a
# repeat ("fyi I smoke" after "I used to smoke", "跟你说一下 我戒烟了" after "我想戒烟").
HEDGE = re.compile(r"\b(?:want(?:s|ed)? to|wanna|plan(?:ning|s)? to|going to|gonna|might|may|maybe|perhaps|"
                    r"used to|trying to|try to|thinking (?:of|about)|hope to|hoping to|would like|'d like|"
                    r"'d love|would love|someday|probably)\b|(?<!想)想(?![想到起法象念])|打算|准备|计划|以前|曾经|可能|也许|大概|备孕|面试|"
                    r"试试", re.I)  # not 想想 / 想到 / 想起 ("想想就窒息": thinking of it, no wish)


def adds_nothing(new: str, old: str, cosine: float, min_cosine: float) -> bool:
    """Whether ``new`` says again what ``old`` says and nothing more (see the module docstring)."""
    if cosine < min_cosine:
        return False
    bare = without_filler(new)
    if not bare or not same_values(bare, old) or says_change(bare) != says_change(old):
        return False
    if bool(HEDGE.search(bare)) != bool(HEDGE.search(old)):
        return False
    words, stored = content_tokens(bare), content_tokens(old)
    shared = words & stored
    if not shared or any(not _said_in(w, stored, old) for w in words - _SOFT_WORDS):
        return False
    return same_subject(bare, old)
