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

from memory_core.text.constraints import constraint_kind

_I = re.IGNORECASE

_IRREALIS_EN = re.compile(
    r"\b(?:i wish|if only|would be (?:nice|cool|great|amazing)|i dream (?:of|about)|dreaming (?:of|about)|"
    r"imagine if|what if|if i (?:had|were|won|lived) .{0,40}\bi'?d\b|"
    r"if (?:[\w'£$€.,]+ ){1,10}offered me\b|i (?:want|wanna|hope) to (?:\w+ ){0,3}(?:one day|someday|eventually)|"
    r"in another life)\b", _I)
# Wishes, not conditions: "如果吃花生我会休克" states a reaction, and is kept as the fact it is.
_IRREALIS_ZH = re.compile(
    r"(?:要是|如果|假如|假设)[^。！？!?]{0,20}(?:就好了|多好|该多好)|好想|真想|多想|做梦都想|"
    r"(?<!梦想成真)梦想(?!成真)|做梦|希望有一天|有朝一日|等我(?:发财|有钱|退休|中了?彩票)|下辈子")

# A target amount the user wants to reach: "我想减到60公斤", "希望血压能降到120", "I want to get down
# to 75kg by summer", "my goal weight is 70kg". It names the amount it wants, not the amount there is:
# read as news it replaced "我现在体重65公斤" with the wish. ("我终于减到60公斤了" reached it: no goal.)
_GOAL_EN = re.compile(
    r"\b(?:want(?:s|ed)? to|wanna|tryna|hop(?:e|es|ing) to|trying to|try to|aim(?:ing)? to|would like to|'d like to|"
    r"working towards?)\b[^.!?;]{0,40}?\b(?:down to|up to|get to|under|below|at least|reach|hit|weigh)\s+"
    r"[£$€]?\d(?![\d,.]*-[A-Za-z])|"  # not "get to 7-Eleven"
    r"\b(?:goal|target|aim)(?! date)(?: [a-z]+)? (?:is|was|of)\s+(?:to\s+[^.!?;]{0,30}?)?[£$€]?\d|"
    r"\b(?:wants?|told|asked|needs?) me to (?:get|bring|keep)\b[^.!?;]{0,30}?\b(?:down to|under|below)\s+\d", _I)
_GOAL_ZH = re.compile(r"(?<![不没别])(?:想|希望|争取|目标|力争|努力|盼着?|梦想)[^，。！？!?,]{0,12}?"
                      r"(?:减到|降到|瘦到|涨到|加到|提高到|降低到|控制在|减少到|增加到|达到|存到|攒到)\s*\d|"
                      r"目标(?:体重|血压|是|定在)\s*\d|"
                      # a target someone sets the user: "医生让我把血压降到130以下"
                      r"(?:让|要|叫)我把?[^，。！？!?,]{0,8}(?:降到|减到|瘦到|控制在)\s*\d")
# Clauses, to tell a goal from the amount said beside it ("down to 78kg now, want to hit 75"); a
# decimal point splits nothing ("get down to 72.5kg").
_CLAUSE = re.compile(r"(?:[,，;；。!！?？\n]|(?<!\d)\.|\.(?!\d))+|\s+(?:but|and)\s+|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")


@lru_cache(maxsize=16384)
def is_goal(text: str) -> bool:
    """Whether ``text`` names only an amount the user wants to reach (a weight, a pressure, a
    saving), not the amount there is now: every clause with a number in it is a goal. Such a
    wish gives no new value to the current one; "体重降到63了 想减到60" still does (63)."""
    numbered = [c for c in _CLAUSE.split(text or "") if re.search(r"\d", c)]
    return bool(numbered) and all(_GOAL_EN.search(c) or _GOAL_ZH.search(c) for c in numbered)


# A question about wishes, plans or dreams is answered by them ("where do I want to travel?").
_ASKS_WISHES = re.compile(
    r"\b(?:wish|wishes|want|wanted|dream|dreams|hope|hopes|would i|would like|plan|plans|someday|if i|goal|goals|target)\b|"
    r"想(?:去|要|做|学|买|当|养|住|吃|玩|减|瘦|降)|最想|希望|梦想|愿望|要是|如果|计划|打算|目标", _I)


@lru_cache(maxsize=16384)
def is_irrealis(text: str) -> bool:
    """Whether ``text`` is a wish or a hypothetical rather than a statement of how things are."""
    body = text or ""
    if _IRREALIS_EN.search(body) is None and _IRREALIS_ZH.search(body) is None and not is_goal(body):
        return False  # the cheap test first: ranking asks it of every candidate
    return constraint_kind(body) is None  # "I'd love sushi but I'm allergic to fish": a constraint first


def asks_about_wishes(query: str) -> bool:
    """Whether a question asks what the user wants, plans or imagines (its answer may be a wish)."""
    return _ASKS_WISHES.search(query or "") is not None
