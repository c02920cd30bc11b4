"""The offline reply: an answer from the best memory, or suggestions that respect constraints.

Without a language model the reply is composed, and says so. It answers, it does not list:

- a request for suggestions (snacks, desserts, meals, drinks, activities) gets items from the
  catalogue minus everything the user's constraints and avoidances rule out, and says what was
  left out and why; a request the catalogue cannot serve (a film, a pet, a trip) gets no
  invented suggestion, only the constraints that bear on it;
- a question with a relevant memory gets one sentence of that memory (the one that fits the
  question, cut after the clause that answers it), said back to the user in the second person
  with the day it was noted ("你现在住在杭州市西湖区文三路（2024-03-10 记下）");
- a question about the user's own facts ("What do I drink in the afternoon?", "我早上喝什么？")
  is answered, not met with suggestions, even when a constraint bears on it;
- a statement about the user gets a short acknowledgement (the page then shows what was
  remembered), small talk a short word that nothing needed looking up, and a question nothing
  answers says so. None of them lists memories. What is relevant was decided by retrieval's
  threshold: the context block holds only memories that cleared it.

The chat service hands the offline reply the stored memory texts (``services.chat``), not the
context block's rewritten ones, so "lovely today" is never said back as "lovely 2026-12-05".
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
from memory_core.relevance import slot_terms
from memory_core.text.chunking import split_sentences
from memory_core.text.facts import rejects_value
from memory_core.text.pii import PLACEHOLDER_RE, find_pii
from memory_core.text.subject import subject_of
from memory_core.text.intent import clause_kind, is_small_talk
from memory_core.text.keywords import keyword_tokens
from memory_core.text.lang import detect_language, is_cjk

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


def _terms(question: str) -> tuple[frozenset[str], frozenset[str]]:
    """The question's content words and the words that state the slot it asks about."""
    return frozenset(t.lower() for t in keyword_tokens(question)), slot_terms(question)


def _fit(text: str, terms: tuple[frozenset[str], frozenset[str]]) -> int:
    """How well ``text`` answers: a question word counts twice, a slot word ("address") once."""
    words = {t.lower() for t in keyword_tokens(text)}
    return 2 * len(terms[0] & words) + len(terms[1] & words)


def _rank(memories: list[tuple[str, str]], question: str) -> list[tuple[str, str]]:
    """Retrieval's order, unless its best memory shares no word with the question while another
    does: then the one that shares most comes first. Retrieval weighs meaning and words already;
    re-sorting by shared words alone put "My sister lives in Toronto" above "My new address is
    5 Pine Road" for "Where do I live now?"."""
    terms = _terms(question)
    fits = [_fit(text, terms) for _, text in memories]
    if not memories or fits[0] > 0 or max(fits) == 0:
        return list(memories)
    best = fits.index(max(fits))
    return [memories[best]] + memories[:best] + memories[best + 1:]


# A clause ends at Chinese punctuation, or at ",;:" before a space (never inside "1,200" or "http://").
_CLAUSE_END = re.compile(r"(?<=[，；：])\s*|(?<=[,;:])\s+")
_CONTACT_ASKED = re.compile(r"电话|手机|号码|邮箱|\bphone\b|\bnumber\b|\be-?mail\b|\bcontact\b", re.IGNORECASE)


def _has_contact(clauses: Sequence[str]) -> bool:
    """Whether the clauses hold a phone number or an e-mail address (revealed, or a placeholder)."""
    text = " ".join(clauses)
    return bool(find_pii(text) or PLACEHOLDER_RE.search(text))


def answer_sentence(text: str, question: str) -> str:
    """The sentence of a memory that answers ``question``, cut after the clause that answers it
    best ("我女儿今年五岁，下个月要上大班了" -> "我女儿今年五岁" for "我女儿几岁？"). The cut keeps
    everything before that clause, so the answer never starts mid-thought ("so please never ...")."""
    terms = _terms(question)
    sentences = split_sentences(" ".join(text.split())) or [text.strip()]
    sentence = max(sentences, key=lambda s: (_fit(s, terms), -sentences.index(s)))
    clauses = [c for c in _CLAUSE_END.split(sentence) if c.strip()]
    fits = [_fit(c, terms) for c in clauses]
    best = max(fits, default=0)
    if best > 0 and fits.count(best) == 1 and len(clauses) > 1:
        end = fits.index(best) + 1
        # A clause that ends in a colon introduces what follows ("new email: <it>"), one that
        # rejects a value is followed by the right one ("the code isn't 4821, it's 4827"), and a
        # question for a number or an address is answered by the clause that holds it.
        while end < len(clauses) and (re.search(r"[:：]\s*$", clauses[end - 1]) or rejects_value(clauses[end - 1]) or (
                _CONTACT_ASKED.search(question) and not _has_contact(clauses[:end])
                and _has_contact(clauses[end:]))):
            end += 1
        sentence = "".join(c if re.search(r"[\u4e00-\u9fff，；：]$", c) else c + " "
                           for c in clauses[:end]).strip()
    return sentence.rstrip("，,；;：:。.！!？? ")


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


def _whose_reason(avoid: Avoid, texts: Sequence[str]) -> str:
    """The clause that rules ``avoid`` out, said back as it was said, when it is someone else's
    ("你儿子对花生过敏", "your son is allergic to peanuts"): the reply had said "you're allergic"
    of the son's allergy. Empty when the user's own (the reason is then worded from its kind).
    The clause is the one naming the thing with its reason (an allergy's 过敏 / allergic: "我儿子不
    爱吃芒果，我对芒果过敏" is the user's allergy); a clause that names no one ("My son, who is 5, is
    allergic to peanuts") is said with the sentence before it."""
    term = avoid.term.lower()
    marker = re.compile(r"过敏|allerg", _I) if avoid.kind == "allergy" else None
    for text in texts:
        for sentence in re.split(r"[。.!?！？;；\n]+", text):
            clauses = re.split(r"[，,]", sentence)
            for i, clause in enumerate(clauses):
                if term not in clause.lower() or (marker is not None and not marker.search(clause)):
                    continue
                said = clause
                if subject_of(clause) == "self" and not re.search(r"\b(?:i|i'm|i've|my|me)\b|我", clause, _I):
                    said = "，".join(clauses[:i + 1]) if is_cjk(sentence[:1]) else ",".join(clauses[:i + 1])
                if subject_of(said).split("/")[-1] == "self":
                    return ""
                return second_person(said.strip())
    return ""


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
        reason = _whose_reason(a, texts) or a.reason("zh" if zh else "en")
        parts.append(f"已避开{a.shown_term('zh')}（{reason}{'，' + date + ' 记下' if date else ''}）。" if zh
                     else f"I left out {a.shown_term('en')} ({reason}{', noted ' + date if date else ''}). ")
    for date, text in used_constraints:
        said = second_person(text).rstrip("。.！!")
        parts.append(f"也避开了与这条冲突的：{said}{_noted(date, zh)}。" if zh
                     else f"I also left out what clashes with what you told me: \"{said}\"{_noted(date, zh)}. ")
    return "".join(parts)


def _asks(question: str) -> bool:
    """Some clause asks or requests: "周末请朋友来家里 推荐点喝的" asks in its second clause (split at
    commas, and at a space between Chinese characters, as people type), and had been read as a
    statement, so the reply ignored the user's "我不喝酒"."""
    parts = re.split(r"[。！？!?\n，,；;]|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])", question)
    said = [p for p in parts if p.strip()]
    told = [p for p in said if not _OPENER.fullmatch(p.strip())] or said  # "你知道吗" alone still asks
    return any(clause_kind(part) != "statement" for part in told)


# "你知道吗，我升职了", "guess what, I got the job": an opener that asks nothing.
_OPENER = re.compile(r"(?:对了|哎|诶|嘿)?\s*(?:你知道吗|知道吗|你猜怎么着|你猜|猜猜看?|跟你说|告诉你)[吧啊呀嘛]?|"
                     r"(?:guess what|you know what|did you know|know what)\W*", _I)


# Words that ask for suggestions whatever else the question says ("what should I cook?",
# "早餐吃什么好"), and those that make it a question about the user's own facts ("what do I
# drink in the afternoon?", "我早上喝什么？"), which is answered from memory, not with suggestions.
_WANTS_IDEAS = re.compile(
    r"推荐|建议|好呢|什么好|啥好|哪个好|哪家好|应该|该(?:吃|喝|做|买|去|带|点|看|养)|可以(?:吃|喝|做|买|去|带|点)|想几个|"
    r"吃点|喝点|来点|教我|帮我|配点|排一下|"
    r"\brecommend|\bsuggest|\bideas?\b|\bshould (?:i|we)\b|\bcan (?:i|we) (?:eat|drink|have|make|cook|bring|get|do)\b|"
    r"\brecipe\b|\bwhat to\b|\bgive me\b|\bhelp me\b|\bany (?:tips|suggestions|recommendations)\b", _I)
_ABOUT_ME = re.compile(
    r"\b(?:do|did|does|am|was|were|have|had|is|are)\s+(?:i|my|we|our)\b|"
    r"\b(?:what|where|who|when|which|how)(?:'s|'re| is| was| are| were)\s+(?:my|our)\b|\bremember\b|"
    r"我|记得", _I)
_NEVER = re.compile(r"\b(?:never|don'?t|do not|stop)\b|不要|别|千万", _I)


def _wants_suggestions(question: str, asks: bool, has_rules: bool) -> bool:
    if not asks:  # "I'm vegetarian, never suggest meat" states a rule; it asks for nothing
        return False
    if _WANTS_IDEAS.search(question):
        return True
    if _ABOUT_ME.search(question):
        return False
    return bool(_RECOMMEND_RE.search(question)) or has_rules


def _answer(question: str, zh: bool, memories: list[tuple[str, str]]) -> str:
    date, text = _rank(memories, question)[0]
    said = second_person(answer_sentence(text, question))
    return f"{said}{_noted(date, zh)}。" if zh else f"{said[:1].upper()}{said[1:]}{_noted(date, zh)}."


def _about_me(question: str) -> bool:
    return bool(re.search(r"\b(?:i|i'm|i've|my|me|mine)\b|我", question, _I))


def compose_reply(question: str, memory_context: str, constraints: str = "") -> str:
    """The full offline reply text (``OfflineLLM.reply`` streams it); see the module docstring."""
    lang = detect_language(question) if question.strip() else detect_language(memory_context)
    zh = lang == "zh"
    memories = parse_memory_context(memory_context)
    rules = parse_memory_context(constraints)
    head = "（离线模式）" if zh else "(Offline mode) "
    asks = _asks(question)
    if _wants_suggestions(question, asks, bool(rules)):
        return (head + _suggest(question, zh, memories, rules)).rstrip()
    if asks and (memories or rules):
        return head + _answer(question, zh, memories or rules)
    if asks:
        return head + ("我还没有记住关于这方面的任何事情。" if zh else "I don't have anything remembered about that yet.")
    if is_small_talk(question) or not _about_me(question):
        return head + ("这句不需要查你的记忆。想知道我记得什么，随时问我。" if zh
                       else "Nothing to look up there. Ask me about anything you've told me.")
    return head + ("好的，知道了。" if zh else "Got it.")
