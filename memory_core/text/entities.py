"""Named things a memory is about: people, places, organisations, products, foods, dates.

Entities are stored with each memory and shown in the UI, used for entity-overlap scoring,
and let the offline LLM reason about "the same thing" across memories. Precision matters
more than recall: a noisy list ("用户", "东西", "Yesterday") would make every memory look
related to every other, so the list is capped and generic words are filtered out.
"""
from __future__ import annotations

import re

from memory_core.text.lang import CJK_CLASS, has_cjk, jieba_pos_tokenizer
from memory_core.text.pii import PLACEHOLDER_RE

MAX_ENTITIES = 12
# Only the head of a long text is scanned: memories are stored as chunks of a few hundred
# tokens, and POS-tagging 100k characters would take seconds for at most 12 results.
MAX_SCAN_CHARS = 4000

# jieba POS tags kept: person, place, organisation, other proper noun, and their variants.
_PROPER_TAGS = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz"})
# Common nouns (tag "n") that say nothing specific about the user.
_GENERIC_ZH_NOUNS = frozenset(
    """用户 东西 时候 事情 问题 情况 方面 地方 时间 感觉 样子 东东 人们 大家 一些 部分 方式 办法 结果 原因 事儿
    食品 食物 内容 信息 记录 记忆 系统 助手 回答 回复 建议 意思 关系 消息 朋友们 别人 自己 全部 相关 任何 那种
    这种 哪种 种类 什么 东边 西边 今天 明天 昨天 时刻 地址 号码 电话 邮箱 名字 工作 生活 身体 心情 天气 见面 谢谢 手机号 手机号码 计划 打算 号码 推荐 离线""".split()
)
# Chinese prefixes jieba's HMM glues onto names ("和小王" -> "小王", "喝咖啡" -> "咖啡").
_ZH_GLUE_PREFIX = "和跟与同对在去喝吃给叫找见"

# Sentence-initial capitalised words that are not names.
_EN_COMMON = frozenset(
    """i i'm i've i'd i'll me my we our you your he she it they them their this that these those there here
    the a an and but or so if then when while what which who whom whose where why how yes no not
    yesterday today tomorrow tonight last next this every each all some any my please thanks thank
    hi hello hey ok okay sure well oh also just still maybe actually really please remember note
    can could would should will shall may might must do does did don't doesn't didn't is are was were be
    have has had let let's go went going get got make made like love hate want need think know
    after before since until during because although though however on in at by for with from to of
    about as into over under again never always sometimes usually often recently now soon later
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december mr mrs ms dr tell show give find remind recommend
    suggest help book call send check search look ask answer reply write read keep use try say
    good great nice cool sorry thanks wow lol haha""".split()
)
_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}

# A short lexicon of salient lowercase English nouns worth remembering (foods, allergens,
# drinks, pets, hobbies): "allergic to peanuts" should yield "peanuts".
_EN_SALIENT = frozenset(
    """peanut peanuts nut nuts tree-nuts shellfish seafood shrimp prawns crab lobster fish salmon tuna milk dairy
    lactose gluten wheat egg eggs soy sesame mango mangoes strawberry strawberries banana bananas kiwi
    pineapple apple apples chocolate coffee tea espresso latte beer wine whisky alcohol pork beef chicken lamb
    mutton cilantro coriander garlic onion onions chili spicy sushi pizza pasta noodles rice tofu hotpot
    penicillin aspirin ibuprofen insulin epipen inhaler asthma diabetes cat cats dog dogs puppy kitten
    hiking swimming running yoga tennis basketball football soccer badminton chess piano guitar violin
    photography cycling skiing marathon""".split()
)

_HANDLE_RE = re.compile(r"(?<![A-Za-z0-9_.@])@[A-Za-z0-9_]{2,30}(?![A-Za-z0-9_@.])")
_ISO_DATE_RE = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_ZH_DATE_RE = re.compile(r"(?<!\d)(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_EN_DATE_RE = re.compile(
    r"\b(January|February|March|April|May|June|July|August|September|October|November|December)\s+"
    r"(\d{1,2})(?:st|nd|rd|th)?,?\s+((?:19|20)\d{2})\b"
)
_QUANTITY_RE = re.compile(
    r"(?<![\dA-Za-z.])(?:[$¥€£]\s?\d+(?:[.,]\d+)?|\d+(?:\.\d+)?\s?"
    r"(?:岁|公斤|千克|斤|克|公里|千米|米|厘米|小时|分钟|块钱|块|元|美元|人民币|万|kg|g|lb|lbs|km|cm|mi|miles|m|"
    r"hours|hour|hrs|minutes|mins|years old|yrs|kids|children|%|°C|度))(?![A-Za-z])"
)
_EN_NAME_RE = re.compile(
    r"(?<![A-Za-z'’])(?:[A-Z][a-zA-Z'’\-]*|[a-z]+[A-Z][A-Za-z]*)(?:\s+(?:of\s+|de\s+)?[A-Z][a-zA-Z'’\-]*)*"
)
_EN_WORD_RE = re.compile(r"[A-Za-z][A-Za-z\-]*")


def _iso(year: str | int, month: str | int, day: str | int) -> str | None:
    y, m, d = int(year), int(month), int(day)
    if not (1 <= m <= 12 and 1 <= d <= 31 and 1900 <= y <= 2100):
        return None
    return f"{y:04d}-{m:02d}-{d:02d}"


def _dates(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for regex in (_ISO_DATE_RE, _ZH_DATE_RE):
        for m in regex.finditer(text):
            iso = _iso(m.group(1), m.group(2), m.group(3))
            if iso:
                found.append((m.start(), iso))
    for m in _EN_DATE_RE.finditer(text):
        iso = _iso(m.group(3), _MONTHS[m.group(1).lower()], m.group(2))
        if iso:
            found.append((m.start(), iso))
    return found


def _zh_entities(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    pos = 0
    for pair in jieba_pos_tokenizer().cut(text, HMM=True):
        word, flag = pair.word, pair.flag
        start = text.find(word, pos)
        if start >= 0:
            pos = start + len(word)
        if not re.fullmatch(f"[{CJK_CLASS}]+", word):
            continue
        if flag in _PROPER_TAGS:
            if len(word) >= 3 and word[0] in _ZH_GLUE_PREFIX:
                word = word[1:]
            if len(word) >= 2 and word not in _GENERIC_ZH_NOUNS:
                found.append((start, word))
        elif flag == "n" and len(word) >= 2 and word not in _GENERIC_ZH_NOUNS:
            found.append((start, word))
    return found


def _en_entities(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    covered: list[tuple[int, int]] = []
    for m in _EN_NAME_RE.finditer(text):
        words = [(w.start() + m.start(), w.end() + m.start()) for w in re.finditer(r"\S+", m.group())]
        # Drop leading common words ("Yesterday Alice" -> "Alice") and dangling "of"/"de".
        while words and text[words[0][0] : words[0][1]].lower() in _EN_COMMON:
            words.pop(0)
        while words and text[words[-1][0] : words[-1][1]].lower() in ("of", "de"):
            words.pop()
        if not words:
            continue
        name = re.sub(r"\s+", " ", text[words[0][0] : words[-1][1]])
        if len(name) < 2 or name.lower() in _EN_COMMON:
            continue
        found.append((words[0][0], name))
        covered.append((m.start(), m.end()))
    for m in _EN_WORD_RE.finditer(text):
        low = m.group().lower()
        if low in _EN_SALIENT and not any(a <= m.start() < b for a, b in covered):
            found.append((m.start(), low))
    return found


def extract_entities(text: str) -> list[str]:
    """Up to 12 distinct entities of ``text`` in order of appearance.

    Chinese: jieba names/places/organisations/proper nouns and specific common nouns
    (芒果, 火锅); English: capitalised names (not sentence-initial common words),
    camel-case products (iPhone) and a small lexicon of foods/allergens/pets/hobbies;
    both: ISO-normalised dates, numbers with units, @handles. PII placeholders never count.
    """
    clean = PLACEHOLDER_RE.sub(" ", text[:MAX_SCAN_CHARS])
    found: list[tuple[int, str]] = []
    found += _dates(clean)
    found += [(m.start(), m.group()) for m in _HANDLE_RE.finditer(clean)]
    found += [(m.start(), re.sub(r"\s+", "", m.group()) if has_cjk(m.group()) else m.group()) for m in _QUANTITY_RE.finditer(clean)]
    if has_cjk(clean):
        found += _zh_entities(clean)
    found += _en_entities(clean)
    found.sort(key=lambda item: item[0])
    out: list[str] = []
    seen: set[str] = set()
    for _, entity in found:
        key = entity.lower()
        if key in seen:
            continue
        seen.add(key)
        out.append(entity)
        if len(out) >= MAX_ENTITIES:
            break
    return out
