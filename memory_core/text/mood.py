"""Wishes and what-ifs: said by the user, but not how things are.

"要是我老家在海边就好了", "好想要个哥哥啊", "if Three offered me unlimited data for a tenner I'd
jump ship", "I wish I lived in Lisbon": each names a value a question may ask about (a hometown,
a brother, a network, a city) without stating it. Kept as memories they are fine (a wish says
something about the user); ranked like facts, they outranked the facts they only imagine
("我老家哪里的来着" was answered with the sea), and read as news they could replace one.
"""
from __future__ import annotations

import re
from functools import lru_cache

_I = re.IGNORECASE

_IRREALIS_EN = re.compile(
    r"\b(?:i wish|if only|i'?d (?:love|like) to|i would (?:love|like) to|would be (?:nice|cool|great|amazing)|"
    r"i dream (?:of|about)|dreaming (?:of|about)|my dream is|someday|some day|one day i|imagine if|what if|"
    r"if i (?:had|were|was|could|won|lived|got)\b|\bif (?:[\w'£$€.,]+ ){1,10}(?:i'?d|i would)\b|"
    r"i (?:want|wanna|hope) to (?:\w+ ){0,2}(?:one day|someday|eventually)|in another life)\b", _I)
_IRREALIS_ZH = re.compile(
    r"(?:要是|如果|假如|假设|万一|要不是)[^。！？!?]{0,20}(?:就好了|多好|该多好|就|会|能|可以|的话)|好想|真想|多想|做梦都想|"
    r"梦想|做梦|希望有一天|有朝一日|等我(?:发财|有钱|退休|中了?彩票)|下辈子|羡慕")

# A question about wishes, plans or dreams is answered by them ("where do I want to travel?").
_ASKS_WISHES = re.compile(
    r"\b(?:wish|wishes|want|wanted|dream|dreams|hope|hopes|would i|would like|plan|plans|someday|if i)\b|"
    r"想|希望|梦想|愿望|要是|如果|计划|打算", _I)


@lru_cache(maxsize=16384)
def is_irrealis(text: str) -> bool:
    """Whether ``text`` is a wish or a hypothetical rather than a statement of how things are."""
    body = text or ""
    return _IRREALIS_EN.search(body) is not None or _IRREALIS_ZH.search(body) is not None


def asks_about_wishes(query: str) -> bool:
    """Whether a question asks what the user wants, plans or imagines (its answer may be a wish)."""
    return _ASKS_WISHES.search(query or "") is not None
