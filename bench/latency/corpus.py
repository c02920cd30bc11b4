"""Synthetic-but-realistic corpora for the latency benchmark, and a deterministic embedder.

Text: Chinese and English memory sentences built from templates, mixed with real event
sentences sampled from ../shared/data/madial (when present) so the BM25 side sees natural
zh/en text. Vectors: at 10k the real bundled e5 model embeds the text; at 100k and 1M a
``SyntheticEmbedder`` stands in (embedding 1M texts would take ~2 hours on 2 cores), and
corpus vectors are generated per user from a seeded RNG so any user's vectors can be
regenerated for the exact-scan baseline without keeping 1M x 384 floats in memory.
Vectors are clustered (topic centre + noise) so the top-20 is not a uniform-noise lottery.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from memory_core.embedding.base import Embedder
from memory_core.types import MemoryType

DIM = 384
TOPICS = 64
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "madial"

ZH_TEMPLATES = [
    "我{when}在{place}{act}，感觉{feel}。",
    "我对{food}过敏，{when}吃了以后很不舒服。",
    "我的{rel}叫{name}，{when}我们一起去了{place}。",
    "{when}和{name}约好在{place}{act}。",
    "我最喜欢的{thing}是{food}，每周都会买。",
    "我在{company}做{job}，{when}开始负责新项目。",
    "提醒我{when}去{place}看医生。",
    "我的生日是{month}月{day}日，想在{place}庆祝。",
]
EN_TEMPLATES = [
    "I {act_en} at the {place_en} {when_en} and felt {feel_en}.",
    "I am allergic to {food_en}; {when_en} I had a reaction.",
    "My {rel_en} {name_en} and I went to the {place_en} {when_en}.",
    "I work at {company_en} as a {job_en} and started a new project {when_en}.",
    "My favourite {thing_en} is {food_en}, I buy it every week.",
    "Remind me to see the doctor at the {place_en} {when_en}.",
    "Planning a {trip_en} trip to {city_en} with {name_en} {when_en}.",
    "I prefer {drink_en} without sugar in the morning.",
]
SLOTS = {
    "when": "昨天 上周末 今天早上 去年夏天 上个月 前天晚上 周三 春节期间".split(),
    "place": "北京 上海 公园 咖啡馆 健身房 图书馆 医院 海边 山上 电影院".split(),
    "act": "跑步 爬山 开会 看电影 喝咖啡 读书 游泳 骑车 学吉他 做饭".split(),
    "feel": "很开心 有点累 非常满足 很放松 有些紧张 特别兴奋".split(),
    "food": "芒果 花生 海鲜 牛奶 鸡蛋 草莓 火锅 饺子 榴莲 豆腐".split(),
    "rel": "妈妈 爸爸 妹妹 哥哥 女朋友 同事 室友 老板".split(),
    "name": "小王 小李 张伟 刘洋 陈静 赵敏 Alice Bob".split(),
    "thing": "水果 零食 饮料 早餐 甜点".split(),
    "company": "腾讯 阿里 一家初创公司 学校 医院 银行".split(),
    "job": "工程师 设计师 产品经理 老师 医生 会计".split(),
    "month": [str(m) for m in range(1, 13)],
    "day": [str(d) for d in range(1, 29)],
    "act_en": "went hiking,went running,had a meeting,watched a movie,read a book,went swimming,cooked dinner".split(","),
    "place_en": "park,gym,library,hospital,beach,office,cinema,coffee shop,museum".split(","),
    "when_en": "yesterday,last weekend,this morning,last summer,last month,on Tuesday,over the holidays".split(","),
    "feel_en": "happy,tired,relaxed,excited,nervous,proud".split(","),
    "food_en": "mango,peanuts,shellfish,milk,strawberries,hot pot,dumplings,durian,tofu".split(","),
    "rel_en": "mother,father,sister,brother,girlfriend,colleague,roommate,boss".split(","),
    "name_en": "Alice,Bob,Carol,David,Emma,Frank,Grace,Henry".split(","),
    "thing_en": "fruit,snack,drink,breakfast,dessert".split(","),
    "company_en": "Acme,a startup,the university,a hospital,a bank".split(","),
    "job_en": "engineer,designer,product manager,teacher,nurse,accountant".split(","),
    "trip_en": "ski,hiking,beach,business,family".split(","),
    "city_en": "Tokyo,Paris,Chengdu,Berlin,Sydney,Kyoto".split(","),
    "drink_en": "coffee,green tea,oat milk,black tea".split(","),
}
QUERIES = [
    "我对什么过敏？", "我上周末做了什么？", "我在哪里工作？", "我的生日是哪天？", "我喜欢吃什么水果？",
    "我和谁去了北京？", "提醒我什么时候看医生？", "我最近在学什么？",
    "What am I allergic to?", "Where do I work?", "What did I do last weekend?", "Who is my sister?",
    "What is my favourite snack?", "When is my trip to Tokyo?", "What do I drink in the morning?",
    "Which project did I start?",
]


def _madial_events(limit: int = 4000) -> list[str]:
    """Real zh/en event sentences from MADial (evaluation data; optional for the benchmark)."""
    events: list[str] = []
    for name in ("MADial-Bench-zh-memory.json", "MADial-Bench-en-memory.json"):
        path = SHARED / name
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                for item in json.loads(line).values():
                    event = str(item.get("event", "")).strip()
                    if event:
                        events.append(event)
            except (ValueError, AttributeError):
                continue
    return events[:limit]


class SentencePool:
    """A fixed pool of distinct memory sentences (templates + MADial), sampled by index."""

    def __init__(self, seed: int = 7, size: int = 20_000) -> None:
        rng = random.Random(seed)
        sentences = list(dict.fromkeys(_madial_events()))
        self.from_madial = len(sentences)
        seen = set(sentences)
        templates = ZH_TEMPLATES + EN_TEMPLATES
        attempts = 0
        while len(sentences) < size and attempts < size * 20:
            attempts += 1
            template = rng.choice(templates)
            text = template.format(**{k: rng.choice(v) for k, v in SLOTS.items()})
            if text not in seen:
                seen.add(text)
                sentences.append(text)
        self.sentences = sentences

    def __len__(self) -> int:
        return len(self.sentences)


@dataclass(frozen=True)
class Spec:
    """One corpus: ``users`` users with ``per_user`` memories each."""

    label: str
    users: int
    per_user: int
    real_embeddings: bool
    seed: int = 42
    precision: str = "auto"  # of the real model (EMBEDDING_PRECISION; auto = the product default)

    @property
    def total(self) -> int:
        return self.users * self.per_user


SPECS = {
    "10k": Spec("10k", 10, 1000, real_embeddings=True),
    # The same corpus and queries with the fp32 encoder (the default before int8), side by side.
    "10k-fp32": Spec("10k-fp32", 10, 1000, real_embeddings=True, precision="fp32"),
    "100k": Spec("100k", 100, 1000, real_embeddings=False),
    "100k-100pu": Spec("100k-100pu", 1000, 100, real_embeddings=False),
    "1M": Spec("1M", 1000, 1000, real_embeddings=False),
}


def user_id(spec: Spec, index: int) -> str:
    return f"bench-{spec.label}-u{index:05d}"


def _centres(seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 999])
    c = rng.standard_normal((TOPICS, DIM)).astype(np.float32)
    return c / np.linalg.norm(c, axis=1, keepdims=True)


@dataclass
class UserBatch:
    user_id: str
    texts: list[str]
    vectors: np.ndarray  # (n, DIM) float32, unit rows
    importance: np.ndarray  # int
    created_at: list[datetime]
    memory_types: list[MemoryType]


def user_batch(spec: Spec, index: int, pool: SentencePool, now: datetime) -> UserBatch:
    """One user's memories, fully determined by (spec.seed, index)."""
    rng = np.random.default_rng([spec.seed, index])
    n = spec.per_user
    picks = rng.integers(0, len(pool), size=n)
    texts = [pool.sentences[int(p)] for p in picks]
    topics = rng.integers(0, TOPICS, size=n)
    noise = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors = _centres(spec.seed)[topics] * 2.0 + noise * (1.0 / np.sqrt(DIM)) * 4.0
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    importance = rng.choice([1, 2, 3, 4, 5], size=n, p=[0.15, 0.3, 0.3, 0.2, 0.05])
    ages = rng.uniform(0, 60 * 86400, size=n)  # the last 60 days, so TTL expiry applies to some
    created = [now - timedelta(seconds=float(a)) for a in ages]
    types = [MemoryType.EPISODIC if "昨天" in t or "yesterday" in t or "上周" in t else MemoryType.DECLARATIVE
             for t in texts]
    return UserBatch(user_id(spec, index), texts, vectors.astype(np.float32), importance, created, types)


def iter_users(spec: Spec, pool: SentencePool, now: datetime) -> Iterator[UserBatch]:
    for index in range(spec.users):
        yield user_batch(spec, index, pool, now)


class SyntheticEmbedder(Embedder):
    """Maps any text to a deterministic unit vector near one of the corpus's topic centres.

    Stands in for the model at 100k / 1M (stated in every output): vectors still go through
    the product's storage layer and search path; only the model's cost and semantics are gone.
    """

    name = "synthetic-unit-vectors"
    dim = DIM
    max_tokens = 512

    def __init__(self, seed: int = 42) -> None:
        self._centres = _centres(seed)

    def _one(self, text: str) -> np.ndarray:
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
        rng = np.random.default_rng(list(digest))
        v = self._centres[int(rng.integers(0, TOPICS))] * 2.0 + rng.standard_normal(DIM).astype(np.float32) * (
            4.0 / np.sqrt(DIM))
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one("q:" + t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 2)


def query_texts(count: int, seed: int = 3) -> list[str]:
    """``count`` distinct queries (distinct so each cold search is a real cache miss)."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(count):
        base = QUERIES[i % len(QUERIES)]
        extra = rng.choice(SLOTS["food"] + SLOTS["food_en"] + SLOTS["place"] + SLOTS["place_en"])
        out.append(f"{base} {extra} #{i}")
    return out
