"""The offline reply: an answer from the best memory, or suggestions that respect constraints.

Without a language model the reply is composed, and says so. It answers, it does not list:

- a request for suggestions (snacks, desserts, meals, drinks, activities) gets items from the
  catalogue minus everything the user's constraints and avoidances rule out, and says what was
  left out and why; a request the catalogue cannot serve (a film, a pet, a trip) gets no
  invented suggestion, only the constraints that bear on it;
- a question with a relevant memory gets that memory, said back to the user in the second
  person with the day it was noted ("你住在杭州市西湖区（2024-03-10 记下）");
- anything else (small talk, a statement being remembered, a question nothing answers) gets a
  short plain answer and no memories. What is relevant was decided by retrieval's threshold:
  the context block holds only memories that cleared it.
"""
from __future__ import annotations

import re
from typing import Iterator, Sequence

from memory_core.llm.offline.catalog import (
    ACTIVITIES,
    DESSERTS,
    DRINKS,
    MEALS,
    SNACKS,
    Avoid,
    CatalogItem,
    extract_avoidances,
    item_conflicts,
    ruled_out_by,
)
from memory_core.text.intent import clause_kind
from memory_core.text.keywords import keyword_tokens
from memory_core.text.lang import detect_language

_I = re.IGNORECASE

__all__ = ["compose_reply", "parse_memory_context", "second_person", "SNACKS", "extract_avoidances"]

_RECOMMEND_RE = re.compile(
    r"推荐|吃什么|喝什么|零食|小吃|建议|有什么好|玩什么|做什么|去哪|带什么|点什么|做点|来点|"
    r"\brecommend|\bsuggest|\bsnacks?\b|what should i (?:eat|drink|do|have|cook|make|bring|order|get|watch)|\bideas?\b|"
    r"what to (?:eat|drink|do|cook|make|bring)|\brecipe\b|\bwhat can i (?:eat|drink|have)\b",
    _I,
)
_CATEGORIES: tuple[tuple[re.Pattern[str], tuple[CatalogItem, ...], str, str], ...] = (
    (re.compile(r"零食|小吃|点心|\bsnacks?\b", _I), SNACKS, "零食", "snacks"),
    (re.compile(r"甜点|甜品|蛋糕|\bdesserts?\b|\bcake\b|\bsweets?\b|\btreat\b", _I), DESSERTS, "甜点", "desserts"),
    (re.compile(r"喝|饮料|饮品|\bdrinks?\b|\bbeverages?\b|\bpick-me-up\b", _I), DRINKS, "饮品", "drinks"),
    (re.compile(r"吃|饭|餐|菜|好吃|美食|食谱|菜谱|\beat\b|\bfood\b|\bdinner\b|\blunch\b|\bbreakfast\b|\bmeals?\b|"
                r"\brestaurant|\bdish|\brecipe\b|\bcook\b|\bmenu\b", _I), MEALS, "菜", "dishes"),
    (re.compile(r"玩|活动|周末干|\bactivit|\bthings to do\b|\bwhat (?:should|can) i do\b|\bfun\b", _I),
     ACTIVITIES, "活动", "activities"),
)

_CONTEXT_LINE_RE = re.compile(r"^\s*(?:[-*•]\s*)?\[(\d{4}-\d{2}-\d{2})\]\s*(.+?)\s*$")


def parse_memory_context(memory_context: str) -> list[tuple[str, str]]:
    """(date, text) pairs from ``[YYYY-MM-DD] text`` lines; undated non-empty lines get date ""."""
    out: list[tuple[str, str]] = []
    for line in (memory_context or "").splitlines():
        m = _CONTEXT_LINE_RE.match(line)
        if m:
            out.append((m.group(1), m.group(2)))
        elif line.strip():
            out.append(("", line.strip()))
    return out


_EN_SWAPS = (
    (re.compile(r"\bI'm\b", _I), "you're"), (re.compile(r"\bI am\b", _I), "you are"),
    (re.compile(r"\bI've\b", _I), "you've"), (re.compile(r"\bI'd\b", _I), "you'd"), (re.compile(r"\bI'll\b", _I), "you'll"),
    (re.compile(r"\bI was\b", _I), "you were"), (re.compile(r"\bmyself\b", _I), "yourself"),
    (re.compile(r"\bmine\b", _I), "yours"), (re.compile(r"\bmy\b", _I), "your"), (re.compile(r"\bme\b", _I), "you"),
    (re.compile(r"\bI\b"), "you"),
)


def _rank(memories: list[tuple[str, str]], question: str) -> list[tuple[str, str]]:
    """Retrieval's order, with memories that share words with the question first (stable)."""
    q = set(keyword_tokens(question))
    scored = [(-len(q & set(keyword_tokens(text))), i, (d, text)) for i, (d, text) in enumerate(memories)]
    return [m for _, _, m in sorted(scored)]


def second_person(text: str) -> str:
    """A memory said back to the user: "我住在杭州" -> "你住在杭州", "I'm allergic" -> "you're allergic"."""
    if detect_language(text) == "zh":
        return text.replace("我们", "你们").replace("我", "你")
    out = text
    for pattern, replacement in _EN_SWAPS:
        out = pattern.sub(replacement, out)
    return out


def _stream_chunks(text: str, lang: str) -> Iterator[str]:
    """A few words (English) or a few characters (Chinese) at a time; chunks concatenate to ``text``."""
    pieces = re.findall(r"[A-Za-z0-9'’\-.:/\[\]]+\s*|\s+|.", text, flags=re.DOTALL)
    size = 3 if lang == "en" else 6
    for i in range(0, len(pieces), size):
        yield "".join(pieces[i : i + size])


def _noted(date: str, zh: bool) -> str:
    if not date:
        return ""
    return f"（{date} 记下）" if zh else f" (noted {date})"


def _suggest(question: str, zh: bool, memories: Sequence[tuple[str, str]],
             constraints: Sequence[tuple[str, str]]) -> str:
    """Catalogue suggestions minus what the memories and constraints rule out."""
    category = next(((items, what_zh, what_en) for pattern, items, what_zh, what_en in _CATEGORIES
                     if pattern.search(question)), None)
    texts = [t for _, t in constraints] + [t for _, t in memories]
    dated = {t: d for d, t in list(memories) + list(constraints)}
    if category is None:  # a film, a pet, a trip: nothing to suggest without a model
        parts = ["没有连接语言模型，我给不了具体建议。" if zh else "No language model is connected, so I can't suggest anything "
                 "specific. "]
        for date, text in constraints:
            said = second_person(text).rstrip("。.！!")
            parts.append(f"请记得：{said}{_noted(date, zh)}。" if zh else f"Keep in mind: \"{said}\"{_noted(date, zh)}. ")
        return "".join(parts)
    catalog, what_zh, what_en = category
    avoids = extract_avoidances(texts)
    chosen: list[CatalogItem] = []
    used_avoids: list[Avoid] = []
    used_constraints: list[tuple[str, str]] = []
    for item in catalog:
        blockers = [a for a in avoids if item_conflicts(item, a)]
        ruled = [(d, t) for d, t in constraints if ruled_out_by(item, t)]
        for a in blockers:
            if a not in used_avoids:
                used_avoids.append(a)
        for c in ruled:
            if c not in used_constraints and not blockers:
                used_constraints.append(c)
        if not blockers and not ruled and len(chosen) < 4:
            chosen.append(item)
    parts: list[str] = []
    if chosen:
        parts.append(f"给你推荐几样{what_zh}：" + "、".join(i.zh for i in chosen) + "。" if zh
                     else f"Some {what_en} you might like: " + ", ".join(i.en for i in chosen) + ". ")
    else:
        parts.append(f"我能想到的{what_zh}都和你的忌口冲突。" if zh else f"Every {what_en[:-1]} I know of clashes with "
                     "what you avoid. ")
    for a in used_avoids:
        date = next((dated[t] for t in texts if a.term.lower() in t.lower() and dated.get(t)), "")
        parts.append(f"已避开{a.shown_term('zh')}（{a.reason('zh')}{'，' + date + ' 记下' if date else ''}）。" if zh
                     else f"I left out {a.shown_term('en')} ({a.reason('en')}{', noted ' + date if date else ''}). ")
    for date, text in used_constraints:
        said = second_person(text).rstrip("。.！!")
        parts.append(f"也避开了与这条冲突的：{said}{_noted(date, zh)}。" if zh
                     else f"I also left out what clashes with what you told me: \"{said}\"{_noted(date, zh)}. ")
    return "".join(parts)


def _asks(question: str) -> bool:
    return any(clause_kind(part) != "statement" for part in re.split(r"[。！？!?\n]", question) if part.strip())


def compose_reply(question: str, memory_context: str, constraints: str = "") -> str:
    """The full offline reply text (``OfflineLLM.reply`` streams it); see the module docstring."""
    lang = detect_language(question) if question.strip() else detect_language(memory_context)
    zh = lang == "zh"
    memories = parse_memory_context(memory_context)
    rules = parse_memory_context(constraints)
    head = "（离线模式）" if zh else "(Offline mode) "
    if _RECOMMEND_RE.search(question) or (rules and _asks(question)):
        return (head + _suggest(question, zh, memories, rules)).rstrip()
    if memories:
        date, text = _rank(memories, question)[0]
        said = second_person(text).rstrip("。.！!")
        return head + (f"{said}{_noted(date, zh)}。" if zh else f"{said[:1].upper()}{said[1:]}{_noted(date, zh)}.")
    if _asks(question):
        return head + ("我还没有记住关于这方面的任何事情。" if zh else "I don't have anything remembered about that yet.")
    return head + ("好的。" if zh else "Got it.")
