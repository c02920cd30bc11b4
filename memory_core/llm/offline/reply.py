"""The offline reply: what is remembered, and suggestions that respect what the user avoids."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Sequence

from memory_core.text.keywords import keyword_tokens, stem
from memory_core.text.lang import detect_language, is_cjk

_I = re.IGNORECASE

# ---------------------------------------------------------------- reply: avoid-list and catalog


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


SNACKS: tuple[CatalogItem, ...] = (
    _item("芒果干", "dried mango", "芒果 mango 水果 fruit 甜 sweet"),
    _item("原味混合坚果", "mixed nuts", "坚果 nut nuts 花生 peanut peanuts 杏仁 almond"),
    _item("无糖酸奶", "plain yogurt", "酸奶 yogurt 牛奶 milk 乳制品 dairy 乳糖 lactose"),
    _item("海苔片", "seaweed crisps", "海苔 seaweed"),
    _item("苹果脆片", "apple chips", "苹果 apple 水果 fruit"),
    _item("黑巧克力", "dark chocolate", "巧克力 chocolate 甜 sweet"),
    _item("盐水毛豆", "salted edamame", "毛豆 edamame 大豆 soy"),
    _item("芒果布丁", "mango pudding", "芒果 mango 牛奶 milk 乳制品 dairy 甜 sweet"),
    _item("香蕉", "bananas", "香蕉 banana 水果 fruit"),
    _item("全麦饼干", "whole-wheat crackers", "小麦 wheat 麸质 gluten 饼干 cracker"),
    _item("烤红薯", "roasted sweet potato", "红薯 sweet-potato"),
    _item("辣条", "spicy gluten strips", "辣 spicy chili 麸质 gluten"),
    _item("鱿鱼丝", "shredded squid", "鱿鱼 squid 海鲜 seafood"),
)
MEALS: tuple[CatalogItem, ...] = (
    _item("芒果糯米饭", "mango sticky rice", "芒果 mango 甜 sweet"),
    _item("番茄炒蛋", "tomato and egg stir-fry", "鸡蛋 egg eggs 番茄 tomato"),
    _item("清蒸鱼", "steamed fish", "鱼 fish 海鲜 seafood"),
    _item("宫保鸡丁", "kung pao chicken", "花生 peanut peanuts 坚果 nut nuts 辣 spicy chili 鸡肉 chicken"),
    _item("蔬菜沙拉", "garden salad", "蔬菜 vegetable 沙拉 salad"),
    _item("牛肉面", "beef noodle soup", "牛肉 beef 面 noodle noodles 小麦 wheat 麸质 gluten"),
    _item("麻婆豆腐", "mapo tofu", "豆腐 tofu 大豆 soy 辣 spicy chili"),
    _item("寿司", "sushi", "鱼 fish 海鲜 seafood 米饭 rice"),
    _item("香菇青菜", "bok choy with mushrooms", "蔬菜 vegetable 香菇 mushroom"),
)
DRINKS: tuple[CatalogItem, ...] = (
    _item("芒果奶昔", "mango smoothie", "芒果 mango 牛奶 milk 乳制品 dairy"),
    _item("绿茶", "green tea", "茶 tea 咖啡因 caffeine"),
    _item("咖啡", "coffee", "咖啡 coffee 咖啡因 caffeine"),
    _item("柠檬水", "lemonade", "柠檬 lemon"),
    _item("豆浆", "soy milk", "豆浆 大豆 soy"),
    _item("热巧克力", "hot chocolate", "巧克力 chocolate 牛奶 milk 乳制品 dairy"),
)
ACTIVITIES: tuple[CatalogItem, ...] = (
    _item("去公园散步", "a walk in the park", "散步 walking walk 户外 outdoor"),
    _item("爬山", "hiking", "爬山 hiking hike 户外 outdoor"),
    _item("看一场电影", "watching a movie", "电影 movie film"),
    _item("读一本好书", "reading a good book", "读书 阅读 reading book"),
    _item("游泳", "swimming", "游泳 swimming swim"),
    _item("做瑜伽", "yoga", "瑜伽 yoga"),
    _item("逛博物馆", "visiting a museum", "博物馆 museum"),
    _item("骑自行车", "cycling", "骑车 自行车 cycling bike"),
)

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
)
_REASONS = {
    "allergy": ("你对{t}过敏", "you're allergic to {t}"),
    "cannot": ("你不能吃{t}", "you can't eat {t}"),
    "no_eat": ("你不吃{t}", "you don't eat {t}"),
    "no_drink": ("你不喝{t}", "you don't drink {t}"),
    "dislike": ("你不喜欢{t}", "you don't like {t}"),
    "quit": ("你戒了{t}", "you quit {t}"),
    "no_recommend": ("你说过不要推荐{t}", "you asked me not to recommend {t}"),
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


_RECOMMEND_RE = re.compile(
    r"推荐|吃什么|喝什么|零食|小吃|建议|有什么好|玩什么|做什么|去哪|"
    r"\brecommend|\bsuggest|\bsnacks?\b|what should i (?:eat|drink|do|have)|\bideas?\b|what to (?:eat|drink|do)",
    _I,
)
_SNACK_RE = re.compile(r"零食|小吃|点心|\bsnacks?\b", _I)
_DRINK_RE = re.compile(r"喝|饮料|饮品|\bdrinks?\b|\bbeverages?\b", _I)
_ACTIVITY_RE = re.compile(r"玩|做什么|活动|去哪|周末干|\bactivit|\bthings to do\b|\bwhat (?:should|can) i do\b|\bfun\b|\bweekend\b", _I)
_MEAL_RE = re.compile(r"吃|饭|餐|菜|好吃|美食|\beat\b|\bfood\b|\bdinner\b|\blunch\b|\bbreakfast\b|\bmeals?\b|\brestaurant|\bdish", _I)

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


def _rank_memories(memories: list[tuple[str, str]], question: str) -> list[tuple[str, str]]:
    """Memories by keyword overlap with the question (stable: ties keep the given order)."""
    q = set(keyword_tokens(question))
    scored = [(-len(q & set(keyword_tokens(text))), i, (d, text)) for i, (d, text) in enumerate(memories)]
    return [m for _, _, m in sorted(scored)]


def _stream_chunks(text: str, lang: str) -> Iterator[str]:
    """A few words (English) or a few characters (Chinese) at a time; chunks concatenate to ``text``."""
    pieces = re.findall(r"[A-Za-z0-9'’\-.:/\[\]]+\s*|\s+|.", text, flags=re.DOTALL)
    size = 3 if lang == "en" else 6
    for i in range(0, len(pieces), size):
        yield "".join(pieces[i : i + size])


def compose_reply(question: str, memory_context: str) -> str:
    """The full offline reply text (``OfflineLLM.reply`` streams it)."""
    lang = detect_language(question) if question.strip() else detect_language(memory_context)
    zh = lang == "zh"
    memories = parse_memory_context(memory_context)
    parts: list[str] = ["（离线模式）" if zh else "(Offline mode) "]
    if not memories:
        parts.append("我还没有记住关于你的任何事情。" if zh else "I don't have anything remembered about you yet. ")
    else:
        parts.append("我记得：\n" if zh else "Here is what I remember:\n")
        for date_str, text in _rank_memories(memories, question)[:5]:
            prefix = f"{date_str}：" if zh and date_str else (f"{date_str}: " if date_str else "")
            parts.append(f"- {prefix}{text}\n")

    if _RECOMMEND_RE.search(question):
        avoids = extract_avoidances([t for _, t in memories])
        if _SNACK_RE.search(question):
            catalog, what_zh, what_en = SNACKS, "零食", "snacks"
        elif _DRINK_RE.search(question):
            catalog, what_zh, what_en = DRINKS, "饮品", "drinks"
        elif _ACTIVITY_RE.search(question):
            catalog, what_zh, what_en = ACTIVITIES, "活动", "activities"
        elif _MEAL_RE.search(question):
            catalog, what_zh, what_en = MEALS, "菜", "dishes"
        else:
            catalog, what_zh, what_en = ACTIVITIES, "活动", "activities"
        items, used = choose_items(catalog, avoids)
        if zh:
            parts.append(f"给你推荐几样{what_zh}：" + "、".join(i.zh for i in items) + "。")
            for a in used:
                parts.append(f"已避开{a.shown_term('zh')}（{a.reason('zh')}）。")
        else:
            parts.append(f"Some {what_en} you might like: " + ", ".join(i.en for i in items) + ". ")
            for a in used:
                parts.append(f"I left out {a.shown_term('en')} ({a.reason('en')}). ")
    elif memories:
        parts.append("没有连接语言模型，我只能列出相关的记忆。" if zh
                     else "No language model is connected, so I can only list the relevant memories.")
    return "".join(parts).rstrip()


