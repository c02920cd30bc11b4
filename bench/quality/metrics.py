"""Ranking metrics over evidence ids recovered from each retrieved memory's provenance.

A retrieved memory may stand for several source ids (deduplicated, merged or chunked
memories keep every source), so each rank carries a *set* of ids. recall@k is the share of
gold ids covered by the top k; all-hit@k is 1 when every gold id is covered; NDCG@k credits
each gold id once, at the first rank that covers it (gain 1 per newly covered id), against
the ideal of one gold id per rank — capped at 1 when one memory covers several.
"""
from __future__ import annotations

import math
import re
from typing import Iterable, Sequence

_LOCOMO_ID = re.compile(r"D:?(\d+):(\d+)")


def parse_dia_ids(raw: Iterable[str] | str) -> set[str]:
    """LoCoMo evidence / source strings to canonical ``D<session>:<turn>`` ids.

    Tolerates the malformed strings in the data ("D8:6; D9:17", "D:11:26", "D30:05")."""
    items = [raw] if isinstance(raw, str) else list(raw)
    found: set[str] = set()
    for item in items:
        for session, turn in _LOCOMO_ID.findall(str(item)):
            found.add(f"D{int(session)}:{int(turn)}")
    return found


def covered(ranking: Sequence[set[str]], k: int) -> set[str]:
    out: set[str] = set()
    for ids in ranking[:k]:
        out |= ids
    return out


def recall_at(ranking: Sequence[set[str]], gold: set[str], k: int) -> float:
    if not gold:
        raise ValueError("recall needs at least one gold id")
    return len(covered(ranking, k) & gold) / len(gold)


def all_hit_at(ranking: Sequence[set[str]], gold: set[str], k: int) -> float:
    return 1.0 if gold and gold <= covered(ranking, k) else 0.0


def ndcg_at(ranking: Sequence[set[str]], gold: set[str], k: int) -> float:
    if not gold:
        raise ValueError("NDCG needs at least one gold id")
    seen: set[str] = set()
    dcg = 0.0
    for rank, ids in enumerate(ranking[:k]):
        new = (ids & gold) - seen
        seen |= new
        if new:
            dcg += len(new) / math.log2(rank + 2)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(gold), k)))
    return min(1.0, dcg / ideal)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")
