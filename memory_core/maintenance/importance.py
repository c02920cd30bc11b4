"""The design's dynamic importance: what a memory is worth now, not when it was written.

    score = w_rec * recency + w_rel * relevance + w_freq * frequency        (each term on 1..5)

* recency   = 1 + 4 * exp(-lambda * days since the memory was last retrieved, or created if never)
              with lambda = 0.01/day (edits do not count: the scheduler's own expiry extensions are
              edits, and counting them would keep a memory alive by itself);
* relevance = the stored importance (1..5) the LLM gave it when it was written: with no query at
              hand, how much the memory matters is the best stand-in for how relevant it is;
* frequency = retrieval count on a log scale, 1 at zero accesses and 5 at
              ``importance_frequency_saturation`` accesses (so the first few retrievals count most);
* weights 0.3 / 0.5 / 0.2. Every number is a setting.

The expiry job uses it to keep alive what is still used: a memory that was retrieved and scores
at least ``keep_alive_min_score`` gets ``keep_alive_days_per_point * score`` more days counted
from its last access. Never-retrieved memories are not extended, so chatter fades on schedule.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory_core.config import Settings
from memory_core.records import MemoryRecord


@dataclass(frozen=True)
class ImportanceScore:
    """The dynamic score and its parts, each on the 1..5 scale (shown in the UI and history notes)."""

    score: float
    recency: float
    relevance: float
    frequency: float

    def describe(self) -> str:
        return (f"dynamic importance {self.score:.2f} (recency {self.recency:.2f}, relevance "
                f"{self.relevance:.2f}, frequency {self.frequency:.2f})")


def last_touched(record: MemoryRecord) -> datetime:
    """When the memory was last used or changed: the latest of creation, edit and retrieval."""
    times = [record.created_at, record.updated_at]
    if record.last_accessed_at is not None:
        times.append(record.last_accessed_at)
    return max(times)


def frequency_score(access_count: int, saturation: int) -> float:
    """1 + 4 * log(1+n) / log(1+saturation), capped at 5."""
    if access_count <= 0:
        return 1.0
    scale = math.log1p(max(1, saturation))
    return 1.0 + 4.0 * min(1.0, math.log1p(access_count) / scale)


def dynamic_importance(record: MemoryRecord, now: datetime, settings: Settings) -> ImportanceScore:
    """The design's score for ``record`` as of ``now`` (see the module docstring)."""
    anchor = record.last_accessed_at or record.created_at
    anchor = max(anchor, record.created_at)
    days = max(0.0, (now - anchor).total_seconds() / 86400.0)
    recency = 1.0 + 4.0 * math.exp(-settings.importance_decay_per_day * days)
    relevance = float(max(1, min(5, record.importance)))
    frequency = frequency_score(record.access_count, settings.importance_frequency_saturation)
    score = (settings.importance_weight_recency * recency
             + settings.importance_weight_relevance * relevance
             + settings.importance_weight_frequency * frequency)
    return ImportanceScore(score=score, recency=recency, relevance=relevance, frequency=frequency)


def earliest_useful_access(now: datetime, settings: Settings) -> datetime:
    """No memory last retrieved before this can earn a new date (``keep_alive_until``).

    Why: a memory that fades instead of expiring stays active past its date, so without this
    bound the daily job would re-read every faded memory ever retrieved, every day, for ever.
    Each term of the score is at most 5, so the score is at most 5 * (sum of the weights) and the
    new date at most ``last access + days_per_point * that``; an older access ends before now."""
    weights = (max(0.0, settings.importance_weight_recency) + max(0.0, settings.importance_weight_relevance)
               + max(0.0, settings.importance_weight_frequency))
    return now - timedelta(days=settings.keep_alive_days_per_point * 5.0 * weights)


def keep_alive_until(record: MemoryRecord, now: datetime,
                     settings: Settings) -> tuple[datetime | None, ImportanceScore]:
    """The new expiry for a memory that earned one, else ``None`` (with the score either way).

    Earned = retrieved at least once, score >= ``keep_alive_min_score``, and the new date
    (``last access + days_per_point * score``) lies after both now and the current expiry.
    """
    score = dynamic_importance(record, now, settings)
    if record.expires_at is None or record.last_accessed_at is None or record.access_count <= 0:
        return None, score
    if score.score < settings.keep_alive_min_score:
        return None, score
    until = record.last_accessed_at + timedelta(days=settings.keep_alive_days_per_point * score.score)
    if until <= now or until <= record.expires_at:
        return None, score
    return until, score
