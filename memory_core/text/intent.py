"""Is a chat message something to remember, or only a question or request?

"给我推荐点好吃的零食" or "What did I say about Lisbon?" carry nothing about the user; storing
them would fill the store with questions that later crowd out facts. A message that also
states something about the user ("我对芒果过敏，推荐点零食") is kept.
"""
from __future__ import annotations

import re

_QUESTION_END = re.compile(r"[?？]\s*$|[吗呢么嘛]\s*[?？。!！]?\s*$")
_REQUEST_START = re.compile(
    r"^\s*(?:(?:请问|请你|请|帮我|给我|麻烦|能不能|可不可以|可以|你能|你可以|推荐|告诉我|说说|讲讲|查一下|查查|问一下)"
    r"|(?:what|where|when|who|whom|which|why|how|can you|could you|would you|will you|please|tell me|recommend|"
    r"suggest|remind me|show me|do you|did i|do i|am i|is there|are there|give me|help me)\b)",
    re.IGNORECASE,
)
# First-person statements: the message tells us something about the user.
_SELF_STATEMENT = re.compile(
    r"(我(是|叫|在|住|对|有|不|没|喜欢|讨厌|爱|想|要|会|刚|已经|正在|最近|昨天|今天|明天|下周|上周|每|的|家|们|妈|爸|女|儿|老)|"
    r"\bI(?:'m| am| was| have| had| live| work| like| love| hate| prefer| don't| do not| never| always| just|"
    r" moved| went| got| will| plan| need| usually| can't| cannot)\b|\bmy\b|\bwe\b|\bour\b)",
    re.IGNORECASE,
)
_REQUEST_FIRST_PERSON = re.compile(r"^\s*(给我|帮我|告诉我|提醒我|我想知道|我该|我应该)")


def is_question_or_request(text: str) -> bool:
    """True when ``text`` asks for something and states nothing about the user."""
    stripped = text.strip()
    if not stripped:
        return True
    asks = bool(_QUESTION_END.search(stripped) or _REQUEST_START.search(stripped))
    if not asks:
        return False
    # "给我推荐…" starts with 我 inside a request phrase: that is not a statement about the user.
    body = _REQUEST_FIRST_PERSON.sub("", stripped)
    if re.search(r"(do|did|am|can|should|shall) I\b|\b(what|where|when|how)\b.*\bmy\b", body, re.IGNORECASE):
        return True
    return not _SELF_STATEMENT.search(body)
