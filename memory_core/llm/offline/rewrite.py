"""Offline query rewriting: relative dates made absolute, polite filler removed."""
from __future__ import annotations

import re
from datetime import datetime

from memory_core.text.lang import detect_language
from memory_core.text.timeparse import normalize_relative_dates

_I = re.IGNORECASE

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


