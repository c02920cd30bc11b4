"""What the offline reply may suggest, and what the user's memories rule out.

The catalogue (``catalog.json``: snacks, desserts, meals, drinks, activities, each item tagged
with what it contains, in both languages) is checked against two things: avoidances parsed from
any memory ("我对芒果过敏", "I don't eat spicy food", "never recommend X"), which name the
term and the reason, and the user's constraints as whole texts, so a constraint no parser
foresaw still removes every item whose tag it names ("Dairy and I don't get along" removes the
yogurt). A diet word stands for what it excludes (``DIET_IMPLIES``: vegetarian -> meat, fish).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from memory_core.text.keywords import stem
from memory_core.text.lang import is_cjk

_I = re.IGNORECASE

@dataclass(frozen=True)
class Avoid:
    """Something the memories say to keep away from, and why (a key of ``_REASONS``)."""

    term: str
    kind: str

    def shown_term(self, lang: str) -> str:
        """The term in the reply's language when the glossary knows it."""
        if lang == "zh":
            return self.term if is_cjk(self.term[0]) else (_from_english(self.term) or self.term)
        return _GLOSSARY.get(self.term, self.term)

    def reason(self, lang: str) -> str:
        zh, en = _REASONS[self.kind]
        return (zh if lang == "zh" else en).format(t=self.shown_term(lang))


@dataclass(frozen=True)
class CatalogItem:
    zh: str
    en: str
    tags: frozenset[str]


def _item(zh: str, en: str, tags: str) -> CatalogItem:
    return CatalogItem(zh, en, frozenset(tags.split()))


def _load_catalog() -> dict[str, tuple[CatalogItem, ...]]:
    data = json.loads(CATALOG_FILE.read_text(encoding="utf-8"))
    return {name: tuple(_item(*row) for row in rows) for name, rows in data.items() if not name.startswith("_")}


CATALOG_FILE = Path(__file__).with_name("catalog.json")
CATALOG = _load_catalog()
SNACKS, DESSERTS, MEALS, DRINKS, ACTIVITIES = (CATALOG[name] for name in
                                               ("snacks", "desserts", "meals", "drinks", "activities"))

# Enough of a glossary to explain an avoidance in the other language.
_GLOSSARY = {
    "芒果": "mango", "花生": "peanuts", "坚果": "nuts", "海鲜": "seafood", "鱼": "fish", "虾": "shrimp",
    "牛奶": "milk", "乳制品": "dairy", "鸡蛋": "eggs", "辣": "spicy food", "香菜": "cilantro", "咖啡": "coffee",
    "酒": "alcohol", "小麦": "wheat", "麸质": "gluten", "大豆": "soy", "巧克力": "chocolate", "猪肉": "pork",
    "牛肉": "beef", "羊肉": "lamb", "甜食": "sweets", "爬山": "hiking", "游泳": "swimming",
}
_GLOSSARY_EN = {v: k for k, v in _GLOSSARY.items()}
_GLOSSARY_EN.update({" ".join(stem(w) for w in v.split()): k for k, v in _GLOSSARY.items()})


def _from_english(term: str) -> str | None:
    low = term.lower()
    return _GLOSSARY_EN.get(low) or _GLOSSARY_EN.get(" ".join(stem(w) for w in low.split()))

_TERM_STOP = re.compile(r"[，。,.;；!！?？、\n]")
_ZH_TERM_SPLIT = re.compile(r"和|与|及|以及|或者|或|跟|、|/")
_ZH_TERM_TRIM_HEAD = re.compile(r"^(?:任何|所有|一切|吃|喝|的|太|很|那么|这么|一点)+")
_ZH_TERM_TRIM_TAIL = re.compile(r"(?:相关的食品|相关的东西|相关食品|相关的|相关|的食品|的食物|的东西|食品|食物|东西|类|了|的|啦|呢|哦)+$")
_EN_TERM_SPLIT = re.compile(r"\s*(?:,|\band\b|\bor\b|/)\s*", _I)
_EN_TERM_TRIM = re.compile(r"^(?:any|all|the|a|an|some|eating|drinking|to eat|to drink)\s+|\s+(?:anymore|at all|now|either|too|any more)$", _I)

_ZH_AVOID_RES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"对([^，。,.;；!！?？\s]{1,12}?)过敏"), "allergy"),
    (re.compile(r"([一-龥]{1,8})过敏"), "allergy_bare"),
    (re.compile(r"不(?:能|敢|可以)吃([^，。,.;；!！?？\s]{1,10})"), "cannot"),
    (re.compile(r"不(?:爱)?吃([^，。,.;；!！?？\s]{1,10})"), "no_eat"),
    (re.compile(r"不(?:爱)?喝([^，。,.;；!！?？\s]{1,10})"), "no_drink"),
    (re.compile(r"(?:不喜欢|讨厌|受不了|忌口)(?:吃|喝)?([^，。,.;；!！?？\s]{1,10})"), "dislike"),
    (re.compile(r"戒(?:了|掉了?)([^，。,.;；!！?？\s]{1,8})"), "quit"),
    # what a doctor rules out: "医生让我戒海鲜戒啤酒 动物内脏也别碰", "不能喝酒", "不让我吃辣"
    (re.compile(r"(?<!警)戒(?![了掉指备心严])([^，。,.;；!！?？\s戒了一二三四五六七八九十两几半0-9]{1,6})"), "avoid"),
    (re.compile(r"(?:不能|不可以|不让我?|别)(?:喝|碰|吃)([^，。,.;；!！?？\s]{1,10})"), "avoid"),
    (re.compile(r"([一-龥]{1,6}?)(?:也|都)?(?:别|不能|不要)碰"), "avoid"),
    (re.compile(r"不要(?:给我|再)?推荐(?:任何)?([^，。,.;；!！?？\s]{1,12})"), "no_recommend"),
)
_EN_AVOID_RES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\ballergic to ([a-z][a-z \-,]*)", _I), "allergy"),
    (re.compile(r"\b(?:allergy|allergies|intolerance) to ([a-z][a-z \-,]*)", _I), "allergy"),
    (re.compile(r"\b([a-z]+) (?:allergy|allergies)\b", _I), "allergy"),
    (re.compile(r"\b(?:don'?t|do not|never|can'?t|cannot|won'?t) (?:eat|have)\s+([a-z][a-z \-,]*)", _I), "no_eat"),
    (re.compile(r"\b(?:don'?t|do not|never|can'?t|cannot|won'?t) drink\s+([a-z][a-z \-,]*)", _I), "no_drink"),
    (re.compile(r"\b(?:hate|dislike|avoid|can'?t stand|don'?t like|do not like)\s+([a-z][a-z \-,]*)", _I), "dislike"),
    (re.compile(r"\b(?:quit|gave up|stopped (?:eating|drinking))\s+([a-z][a-z \-,]*)", _I), "quit"),
    (re.compile(r"\b(?:don'?t|do not|never) recommend (?:me )?(?:any )?([a-z][a-z \-,]*)", _I), "no_recommend"),
    (re.compile(r"\b(?:cut out|stay away from|keep away from|stay off|not allowed (?:to (?:eat|drink|have) )?|"
                r"told (?:me )?to avoid|have to avoid|must avoid|need to avoid)\s*([a-z][a-z \-,]*)", _I), "avoid"),
    (re.compile(r"\bno more ([a-z][a-z\-]*)", _I), "avoid"),
)
_REASONS = {
    "allergy": ("你对{t}过敏", "you're allergic to {t}"),
    "cannot": ("你不能吃{t}", "you can't eat {t}"),
    "no_eat": ("你不吃{t}", "you don't eat {t}"),
    "no_drink": ("你不喝{t}", "you don't drink {t}"),
    "dislike": ("你不喜欢{t}", "you don't like {t}"),
    "quit": ("你戒了{t}", "you quit {t}"),
    "no_recommend": ("你说过不要推荐{t}", "you asked me not to recommend {t}"),
    "avoid": ("你得避开{t}", "you need to avoid {t}"),
}
_EN_STOP_TERMS = frozenset("it that this them food foods stuff things anything something much".split())
_ZH_STOP_TERMS = frozenset("我 你 他 她 它 东西 什么 用户 有 是 也 都 很 对".split())


def _zh_terms(raw: str) -> list[str]:
    terms: list[str] = []
    for part in _ZH_TERM_SPLIT.split(raw):
        part = _ZH_TERM_TRIM_TAIL.sub("", _ZH_TERM_TRIM_HEAD.sub("", part.strip()))
        part = part.lstrip("我你他她对有是也都很")
        if part and part not in _ZH_STOP_TERMS and len(part) <= 6:
            terms.append(part)
    return terms


def _en_terms(raw: str) -> list[str]:
    raw = re.split(r"\b(?:but|because|so|since|which|when|if|though|although|as)\b|[.;!?]", raw, maxsplit=1, flags=_I)[0]
    terms: list[str] = []
    for part in _EN_TERM_SPLIT.split(raw):
        part = part.strip().lower()
        for _ in range(3):
            part = _EN_TERM_TRIM.sub("", part).strip()
        words = part.split()
        if not words or len(words) > 3 or part in _EN_STOP_TERMS:
            continue
        terms.append(part)
    return terms


def extract_avoidances(texts: Sequence[str]) -> list[Avoid]:
    """Allergies, dislikes and "don't recommend X" found in memory texts, first mention first."""
    found: list[Avoid] = []
    seen: set[str] = set()

    def add(term: str, kind: str) -> None:
        key = term.lower()
        if key in seen:
            return
        seen.add(key)
        found.append(Avoid(term, kind))

    for text in texts:
        for regex, kind in _ZH_AVOID_RES:
            for m in regex.finditer(text):
                raw = m.group(1)
                if kind == "allergy_bare":  # "我芒果过敏"; "…对X过敏" is the rule above
                    raw = raw.split("对")[-1].lstrip("我你他她有是也都很")
                    if not 1 <= len(raw) <= 4:
                        continue
                    kind = "allergy"
                for term in _zh_terms(raw):
                    add(term, kind)
        for regex, kind in _EN_AVOID_RES:
            for m in regex.finditer(text):
                for term in _en_terms(m.group(1)):
                    add(term, kind)
    return found


def _term_keys(term: str) -> set[str]:
    """Forms of an avoided term to look for: itself, its stems, its glossary translation."""
    low = term.lower()
    keys = {low}
    if low in _GLOSSARY:
        keys.add(_GLOSSARY[low])
    if _from_english(low):
        keys.add(_from_english(low) or "")
    for word in re.findall(r"[a-z]+", low):
        if word not in ("food", "foods", "products", "stuff"):
            keys.add(stem(word))
    return {k for k in keys if k}


def item_conflicts(item: CatalogItem, avoid: Avoid) -> bool:
    """True when ``item`` contains or belongs to the avoided thing (in either language)."""
    keys = _term_keys(avoid.term)
    names = {item.zh.lower(), item.en.lower()} | {t.lower() for t in item.tags}
    en_words = {stem(w) for name in names for w in re.findall(r"[a-z]+", name)}
    for key in keys:
        if re.search(r"[a-z]", key):
            key_words = [stem(w) for w in re.findall(r"[a-z]+", key)]
            if key_words and all(w in en_words for w in key_words):
                return True
        elif any(key in name or (name and is_cjk(name[0]) and name in key) for name in names):
            return True
    return False


def choose_items(catalog: Sequence[CatalogItem], avoids: Sequence[Avoid], count: int = 4) -> tuple[list[CatalogItem], list[Avoid]]:
    """The first ``count`` catalog items that conflict with no avoidance, and the avoidances that removed something."""
    chosen: list[CatalogItem] = []
    used: list[Avoid] = []
    for item in catalog:
        blockers = [a for a in avoids if item_conflicts(item, a)]
        for a in blockers:
            if a not in used:
                used.append(a)
        if not blockers and len(chosen) < count:
            chosen.append(item)
    return chosen, used


# A diet or condition stands for the tags it rules out.
DIET_IMPLIES: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (re.compile(r"\bvegan\b|纯素", _I), frozenset("meat fish seafood shellfish chicken beef pork dairy milk egg eggs honey cheese "
                                              "肉 鱼 海鲜 鸡 牛肉 猪肉 乳制品 牛奶 蛋 鸡蛋 蜂蜜".split())),
    (re.compile(r"\bvegetarian\b|吃素|素食", _I), frozenset("meat fish seafood shellfish chicken beef pork 肉 鱼 海鲜 鸡 牛肉 猪肉".split())),
    (re.compile(r"\bpescatarian\b", _I), frozenset("meat chicken beef pork 肉 鸡 牛肉 猪肉".split())),
    (re.compile(r"\bhalal\b|清真|\bno pork\b|不吃猪肉", _I), frozenset("pork alcohol 猪肉 酒".split())),
    (re.compile(r"\blactose|\bdairy|乳糖|乳制品|牛奶过敏", _I), frozenset("dairy milk lactose cheese cream 乳制品 牛奶 乳糖 奶油 芝士".split())),
    (re.compile(r"\bgluten|\bceliac|\bcoeliac|麸质|乳糜泻", _I), frozenset("gluten wheat 麸质 小麦".split())),
    (re.compile(r"\bcaffeine|咖啡因", _I), frozenset("caffeine 咖啡因".split())),
    (re.compile(r"\bsober\b|\bno alcohol\b|\bdon'?t drink\b(?! \w)|戒酒|不喝酒|滴酒不沾", _I), frozenset("alcohol 酒".split())),
    (re.compile(r"不吃辣|不能吃辣|\bspicy\b", _I), frozenset("spicy 辣".split())),
    (re.compile(r"\bnuts?\b|坚果", _I), frozenset("nut nuts tree-nut 坚果".split())),
    (re.compile(r"\bshellfish\b|甲壳", _I), frozenset("shellfish seafood 海鲜".split())),
)


def _tags_named(text: str, item: CatalogItem) -> bool:
    """Whether ``text`` names one of ``item``'s tags or names (English words by stem)."""
    low = text.lower()
    words = {stem(w) for w in re.findall(r"[a-z]+", low)}
    for tag in item.tags | {item.zh, item.en.lower()}:
        if re.search(r"[a-z]", tag):
            tag_words = [stem(w) for w in re.findall(r"[a-z]+", tag)]
            if tag_words and all(w in words for w in tag_words):
                return True
        elif len(tag) >= 1 and is_cjk(tag[0]) and tag in text and tag not in _WEAK_ZH_TAGS:
            return True
    return False


# Chinese tags too common inside other words to count on their own ("水" in "水果", "甜" in "甜点").
_WEAK_ZH_TAGS = frozenset("水 甜 汤 面 茶".split())


def ruled_out_by(item: CatalogItem, constraint: str) -> bool:
    """Whether the constraint text ``constraint`` rules ``item`` out: it names one of the item's
    tags, or a diet that implies one."""
    if _tags_named(constraint, item):
        return True
    return any(pattern.search(constraint) and implied & (item.tags | {item.zh, item.en.lower()})
               for pattern, implied in DIET_IMPLIES)
