"""A text on its way to storage, cut into chunks, and the stages ``add_many`` writes them in.

Apart from the write pipeline so the steps that read a chunk (near-duplicate detection,
storing, indexing) can live in modules of their own without importing the pipeline.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Sequence

import numpy as np

from memory_core.indexing import context_key
from memory_core.types import Analysis


CONSTRAINT_IMPORTANCE = 4  # the first importance that never expires (Settings.ttl_days_by_importance)


def lasting_constraint(analysis: Analysis) -> Analysis:
    """A constraint (an allergy, a diet, a condition, a dislike, a "never ...") is kept until the
    user lifts it, whatever importance the provider gave it: "I really hate mushrooms, the
    texture makes me gag" was rated 2 by the rules ("I hate mushrooms" 4) and expired after 180
    days, and the pizza suggested half a year later carried mushrooms."""
    if analysis.constraint_kind and analysis.importance < CONSTRAINT_IMPORTANCE:
        return replace(analysis, importance=CONSTRAINT_IMPORTANCE)
    return analysis


@dataclass
class Chunk:
    """One chunk on its way to storage."""

    item_index: int
    user_id: str
    text: str
    at: datetime
    session_id: str | None
    meta: dict[str, Any]
    source: list[str]
    context: str = ""  # the previous turn, redacted and trimmed: read by the analysis
    analysis: Analysis | None = None
    vector: np.ndarray | None = None
    hash: str = ""
    duplicate_of: str | None = None  # an existing (or earlier in this batch) memory id
    memory_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def key_context(self) -> str:
        """The turn it answered, stored with it and part of its retrieval key (``context_key``)."""
        return context_key(self.context)


def sources(source: str | Sequence[str] | None) -> list[str]:
    """An item's provenance as a list of strings (one source, several, or none)."""
    if source is None:
        return []
    if isinstance(source, str):
        return [source]
    return [str(s) for s in source]


def cut_into_stages(chunks: list[Chunk], size: int) -> list[list[Chunk]]:
    """``chunks`` cut into runs of about ``size``, never splitting one item's chunks (they must
    not fold into each other as duplicates, and an item lands whole or not at all)."""
    stages: list[list[Chunk]] = []
    for chunk in chunks:
        if stages and (len(stages[-1]) < size or stages[-1][-1].item_index == chunk.item_index):
            stages[-1].append(chunk)
        else:
            stages.append([chunk])
    return stages
