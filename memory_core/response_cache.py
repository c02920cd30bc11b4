"""Search responses as cache entries: JSON out, and back to a ``SearchResponse`` (a miss if unreadable).

``CACHE_FORMAT`` is part of every cache key: bump it whenever what a search returns for the same
input changes, so entries written by an older build are never served.
"""
from __future__ import annotations

import hashlib
import json
import logging
import unicodedata
from dataclasses import asdict
from datetime import datetime
from typing import Any

from memory_core.config import Settings
from memory_core.recipes import Recipe, RetrievalOptions, Tuning
from memory_core.records import SearchFilters, SearchResponse
from memory_core.types import MemoryType, ScoreParts, SearchResult, TimeRange

log = logging.getLogger(__name__)
# 2-8: speaker, answer-type, speaker-free dense query, told time, window legs; dated context lines;
# durations. 9: absolute relevance, the relevance threshold and the constraints of a response.
CACHE_FORMAT = 15  # 10: faded memories (Settings.fade_from_importance); 11: traits among the constraints;
# 12: the faded threshold of a response; 13: another person's facts and wishes rank lower (not_own_fact_factor);
# 14: the English encoder's leg (its model is part of the key: replicas with and without it differ);
# 15: the keyword leg's Chinese character pairs (memory_core/text/keywords.py, cjk_bigrams)


def filters_json(filters: SearchFilters) -> dict[str, Any]:
    tr = filters.time_range
    return {
        "t": [tr.start.isoformat() if tr and tr.start else None, tr.end.isoformat() if tr and tr.end else None],
        "types": sorted(t.value for t in filters.memory_types),
        "imp": filters.min_importance,
        "ent": sorted(filters.entities),
    }



def cache_key(query: str, top_k: int, context: str | None, filters: SearchFilters, now: datetime, recipe: Recipe,
              options: RetrievalOptions, settings: Settings, as_of: bool = False, threshold: float = 0.0) -> str:
    """A search's cache key. The day is part of it (recency and "yesterday" move with it). A
    search as of a given instant (``at``) keys on that instant: what was written by then differs
    within a day, and nothing invalidates a cached answer about the past. The recipe keys by its
    parts (as the switches that describe it did before recipes, so keys did not change) and by
    its numbers only where they differ from the engine's ``settings``."""
    normalised = " ".join(unicodedata.normalize("NFKC", query).lower().split())
    fields: dict[str, Any] = {
        "v": CACHE_FORMAT, "q": normalised, "k": top_k, "c": context or "",
        "f": filters_json(filters), "day": now.isoformat() if as_of else now.date().isoformat(),
        "o": recipe.switches() | {"use_cache": options.use_cache, "record": options.record}, "min": threshold,
        "fade": [settings.fade_from_importance, settings.faded_min_relevance],
        "en": settings.english_embedding_model,
    }
    if recipe.tuning is not None and recipe.tuning != Tuning.from_settings(settings):
        fields["t"] = asdict(recipe.tuning)
    payload = json.dumps(fields, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()

def _result_json(r: SearchResult) -> dict[str, Any]:
    data = asdict(r)
    data["memory_type"] = r.memory_type.value
    data["created_at"] = r.created_at.isoformat()
    return data


def _result(data: dict[str, Any]) -> SearchResult:
    parts = ScoreParts(**data.pop("parts"))
    data["memory_type"] = MemoryType(data["memory_type"])
    data["created_at"] = datetime.fromisoformat(data["created_at"])
    return SearchResult(parts=parts, **data)


def to_json(response: SearchResponse) -> str:
    tr = response.time_range
    return json.dumps({
        "results": [_result_json(r) for r in response.results],
        "constraints": [_result_json(r) for r in response.constraints],
        "constraint_block": response.constraint_block,
        "min_relevance": response.min_relevance,
        "faded_min_relevance": response.faded_min_relevance,
        "context_block": response.context_block,
        "rewritten_query": response.rewritten_query,
        "time_range": None if tr is None else {
            "start": tr.start.isoformat() if tr.start else None,
            "end": tr.end.isoformat() if tr.end else None, "label": tr.label},
        "reranker": response.reranker,
        "notices": response.notices,
    }, ensure_ascii=False)


def from_json(text: str) -> SearchResponse | None:
    """Rebuild a cached response; anything unreadable is treated as a miss."""
    try:
        data = json.loads(text)
        results = [_result(r) for r in data["results"]]
        tr = data["time_range"]
        time_range = None if tr is None else TimeRange(
            start=datetime.fromisoformat(tr["start"]) if tr["start"] else None,
            end=datetime.fromisoformat(tr["end"]) if tr["end"] else None, label=tr["label"])
        return SearchResponse(results=results, context_block=data["context_block"],
                              rewritten_query=data["rewritten_query"], time_range=time_range, timings_ms={},
                              cache_hit=True, reranker=data["reranker"], notices=list(data["notices"]),
                              constraints=[_result(r) for r in data["constraints"]],
                              constraint_block=data["constraint_block"], min_relevance=data["min_relevance"],
                              faded_min_relevance=data["faded_min_relevance"])
    except Exception as exc:
        log.warning("unreadable cache entry ignored: %s", exc)
        return None
