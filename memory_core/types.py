"""Domain types shared by every part of the engine.

Kept free of storage and framework imports so that the SQL layer, the vector
store, the pipelines, the app and the benchmarks can all speak the same small
vocabulary without importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any


class MemoryType(str, Enum):
    """What kind of thing a memory records (design: facts, events, preferences)."""

    DECLARATIVE = "declarative"  # stable facts: "allergic to mango", "lives in Beijing"
    EPISODIC = "episodic"  # events bound to a time: "went hiking last Sunday"
    PROCEDURAL = "procedural"  # how the user wants things done: "answer in Chinese"


class MemoryStatus(str, Enum):
    """Lifecycle state. Only ACTIVE memories are retrievable and have vectors."""

    ACTIVE = "active"
    EXPIRED = "expired"
    ARCHIVED = "archived"
    SUPERSEDED = "superseded"  # replaced by a newer or merged memory (``superseded_by``)
    DELETED = "deleted"


@dataclass(frozen=True)
class TimeRange:
    """A half-open time window ``[start, end)`` in aware UTC datetimes; either end may be open."""

    start: datetime | None = None
    end: datetime | None = None
    label: str = ""  # the words it was parsed from, e.g. "last week" / "上个月"


@dataclass(frozen=True)
class Analysis:
    """What the LLM (or its offline stand-in) says about a piece of text being remembered."""

    importance: int  # 1..5
    memory_type: MemoryType
    entities: list[str] = field(default_factory=list)
    summary: str = ""
    # An allergy, diet, dislike or "never ..." (memory_core.text.constraints): offered to every
    # request it bears on, and passed to the reply as a constraint.
    constraint_kind: str | None = None


@dataclass(frozen=True)
class ScoreParts:
    """Why a memory ranked where it did. Every part is in [0, 1]."""

    relevance: float
    importance: float
    recency: float
    dense: float | None = None  # raw cosine similarity, when the dense leg found it
    keyword: float | None = None  # raw BM25 score, when the keyword leg found it
    rerank: float | None = None  # cross-encoder score, when a reranker ran
    # Calibrated relevance in [0, 1] that means the same for every query (memory_core.relevance),
    # beside ``relevance``, which is relative to this query's best hit.
    absolute: float | None = None


@dataclass(frozen=True)
class SearchResult:
    """One retrieved memory with its final score and the parts that made it."""

    memory_id: str
    user_id: str
    content: str
    memory_type: MemoryType
    importance: int
    created_at: datetime
    score: float
    parts: ScoreParts
    entities: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    sealed: str | None = None  # the memory's sealed PII (``MemoryRecord.sealed``), for ``engine.reveal``
