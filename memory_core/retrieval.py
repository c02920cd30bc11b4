"""The retrieval pipeline: rewrite, time window, recall, neighbours, rerank, score, context.

One search runs a recipe (memory_core/recipes.py: ``FULL`` by default, with the numbers of the
engine's ``Settings``): recall finds candidates with the legs the recipe names
(memory_core/recall.py), ranking orders them and SQL admits what may be shown
(memory_core/ranking.py). This module runs those steps in order and keeps the books around them.
Measured on LoCoMo and MADial-Bench with ``python -m bench.quality``.

Stages are timed (rewrite, embed, search, rerank, fetch, total) and recorded for analytics.
Results are cached per user and invalidated by every write for that user. When the vector
store is down, recall falls back to a keyword scan of the user's rows in SQL and the response
says it is degraded (and is not cached).
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
import unicodedata
from dataclasses import asdict, replace
from datetime import datetime
from typing import Any, Sequence

from memory_core.cache import ResultCache
from memory_core.clock import Clock, as_utc
from memory_core.config import Settings
from memory_core.context_block import build_context_block
from memory_core.embedding.base import Embedder
from memory_core.errors import ValidationError
from memory_core.llm.base import LLMProvider
from memory_core.ranking import (
    add_neighbours,
    admissible,
    constraints,
    fused_relevance,
    mark_answer_matches,
    score,
    valid_for,
)
from memory_core.recall import Candidate, RecallLegs, merge_time, vector_filter
from memory_core.recipes import Recipe, RetrievalOptions, Tuning, choose_recipe
from memory_core.records import SearchFilters, SearchResponse
from memory_core.relevance import DEFAULT_MODEL, RelevanceModel, language, query_terms, slot_terms
from memory_core.rerank import Reranker
from memory_core.response_cache import CACHE_FORMAT, filters_json, from_json, to_json
from memory_core.sql_keyword import NOTICE as SQL_KEYWORD_NOTICE
from memory_core.sql_ports import SqlRepositoryPort
from memory_core.telemetry import Recorder
from memory_core.text.timeparse import parse_time_range
from memory_core.types import TimeRange
from memory_core.validation import check_min_relevance, check_top_k, check_user_id, clean_text
from memory_core.vectors.base import VectorStore

__all__ = ["STAGES", "RetrievalOptions", "RetrievalPipeline"]  # RetrievalOptions: its old home, kept

log = logging.getLogger(__name__)
STAGES = ("rewrite", "embed", "search", "rerank", "fetch", "total")


class RetrievalPipeline:
    def __init__(
        self,
        settings: Settings,
        repo: SqlRepositoryPort,
        vectors: VectorStore,
        embedder: Embedder,
        llm: LLMProvider,
        cache: ResultCache,
        clock: Clock,
        recorder: Recorder,
        reranker: Reranker | None = None,
        relevance: RelevanceModel = DEFAULT_MODEL,
    ) -> None:
        self.settings = settings
        self.repo = repo
        self.vectors = vectors
        self.embedder = embedder
        self.llm = llm
        self.cache = cache
        self.clock = clock
        self.recorder = recorder
        self.reranker = reranker
        self.relevance = relevance
        self.legs = RecallLegs(repo, vectors, embedder)

    def search(
        self,
        user_id: str,
        query: str,
        top_k: int = 5,
        context: str | Sequence[str] | None = None,
        filters: SearchFilters | None = None,
        at: datetime | None = None,
        options: RetrievalOptions | None = None,
        min_relevance: float | None = None,
        recipe: Recipe | str | None = None,
    ) -> SearchResponse:
        """Run ``recipe`` (default: the one ``options``' switches describe, ``FULL`` when none),
        its numbers from ``Settings`` unless it carries its own."""
        started = time.perf_counter()
        recipe = choose_recipe(recipe, options).tuned(self.settings)
        options = options or RetrievalOptions()
        user_id = check_user_id(user_id)
        query = clean_text(query, self.settings.max_input_chars, what="query")
        top_k = check_top_k(top_k)
        threshold = check_min_relevance(self.settings.min_relevance if min_relevance is None else min_relevance)
        filters = _checked_filters(filters or SearchFilters())
        now = as_utc(at) if at else self.clock.now()
        context_text = context if isinstance(context, str) or context is None else "\n".join(context)

        key = self._cache_key(query, top_k, context_text, filters, now, recipe, options, as_of=at is not None,
                              threshold=threshold)
        # Read before any data is: see memory_core/cache.py.
        generation = self.cache.generation(user_id) if options.use_cache else None
        if generation is not None:
            cached = self.cache.get(user_id, key, generation)
            if cached is not None:
                response = from_json(cached)
                if response is not None and self._hit_still_true(response, user_id, now, filters):
                    total = (time.perf_counter() - started) * 1000
                    timings = {stage: 0.0 for stage in STAGES} | {"total": total}
                    response = replace(response, cache_hit=True, timings_ms=timings)
                    if options.record:  # a use from the cache keeps a memory alive like any other
                        self.recorder.accessed([r.memory_id for r in response.results], now)
                    self._record(user_id, response, now, options)
                    return response

        timings: dict[str, float] = {stage: 0.0 for stage in STAGES}
        t = time.perf_counter()
        rewritten = self.llm.rewrite_query(query, now) or query
        parsed_range = parse_time_range(query, now)
        time_range = merge_time(parsed_range, filters.time_range)
        speakers = self.legs.speakers_named(user_id, rewritten, recipe)
        window = None
        if parsed_range is not None:
            window = self.legs.window_filter(user_id, now, filters, time_range, recipe)
        timings["rewrite"] = (time.perf_counter() - t) * 1000

        notices: list[str] = []
        degraded = False
        if recipe.keyword and not self.legs.native_keyword:
            server = str(self.vectors.backend_info().get("vector_server_version", "")) or "an older server"
            notices.append(SQL_KEYWORD_NOTICE.format(server=server))
        # Only an explicit filter is hard. A time the query *names* is a preference: people ask
        # "where did I move from 4 years ago?" about a memory written last month, so the named
        # window boosts what falls inside it (an extra fused leg) instead of hiding the rest.
        flt = vector_filter(user_id, now, filters, filters.time_range)
        try:
            candidates = self.legs.recall(user_id, rewritten, context_text, flt, now, recipe, timings, window,
                                          speakers)
        except Exception as exc:
            log.warning("vector search failed, falling back to SQL keyword search: %s", exc)
            degraded = True
            notices.append("Memory search is degraded: the vector store is unavailable, so keyword search over "
                           "the database answered. Results may be less relevant.")
            candidates = self.legs.sql_recall(user_id, rewritten, now, recipe.resolved_tuning.recall_k, timings)

        t = time.perf_counter()
        records = self.repo.get_many([c.memory_id for c in candidates])
        records = {mid: r for mid, r in records.items()
                   if admissible(r, user_id, now, filters, filters.time_range)}
        candidates = [c for c in candidates if c.memory_id in records]
        if recipe.neighbours and not degraded and candidates and recipe.resolved_tuning.neighbour_seeds > 0:
            add_neighbours(self.repo, candidates, records, user_id, now, filters, recipe)
        # The rewrite may resolve "she" to the name, so both are read.
        mark_answer_matches(candidates, records, f"{query}\n{rewritten}", recipe)
        timings["fetch"] = (time.perf_counter() - t) * 1000

        if self.reranker is not None and candidates:
            t = time.perf_counter()
            scores = self.reranker.score(rewritten, [records[c.memory_id].content for c in candidates])
            for candidate, value in zip(candidates, scores):
                candidate.rerank = float(value)
            timings["rerank"] = (time.perf_counter() - t) * 1000

        if not degraded and recipe.dense:
            self.legs.fill_cosines(user_id, rewritten, speakers, candidates, now, filters)
        terms, lang, slots = query_terms(rewritten), language(query), slot_terms(query)
        scored = score(candidates, records, now, recipe, self.relevance, terms, lang, slots)
        results = scored.top(threshold, top_k)
        bearing = (constraints(self.repo, self.relevance, user_id, query, now, scored, terms, lang,
                               recipe.resolved_tuning.recency_half_life_days) if recipe.core else [])
        context_block = build_context_block(results, self.embedder.count_tokens, self.settings.context_max_tokens)
        constraint_block = build_context_block(bearing, self.embedder.count_tokens, self.settings.context_max_tokens)
        timings["total"] = (time.perf_counter() - started) * 1000
        response = SearchResponse(
            results=results, context_block=context_block, rewritten_query=rewritten, time_range=time_range,
            timings_ms=timings, cache_hit=False, reranker=self.reranker.name if self.reranker else None,
            degraded=degraded, notices=notices, constraints=bearing, constraint_block=constraint_block,
            min_relevance=threshold,
        )
        if generation is not None and not degraded:
            self.cache.set(user_id, key, to_json(response), generation, ttl_s=valid_for(records.values(), now))
        if options.record:
            self.recorder.accessed([r.memory_id for r in results], now)
        self._record(user_id, response, now, options)
        return response

    def _relevance(self, c: Candidate, recipe: Recipe) -> float:
        """Fused rank score of one candidate under ``recipe`` (tuned from Settings when it is not)."""
        return fused_relevance(c, recipe.tuned(self.settings))

    def _hit_still_true(self, response: SearchResponse, user_id: str, now: datetime,
                        filters: SearchFilters) -> bool:
        """A cached answer is served only if SQL still admits every memory in it, as an
        uncached search's rows must be (owner, status, expiry, filters) and with the same text:
        a cache shared with another deployment, or an entry that outlived a change, is a miss."""
        held = list(response.results) + list(response.constraints)
        if not held:
            return True
        rows = self.repo.get_many([r.memory_id for r in held])
        for result in held:
            row = rows.get(result.memory_id)
            if (row is None or result.user_id != user_id or row.content != result.content
                    or not admissible(row, user_id, now, filters, filters.time_range)):
                log.info("cached result no longer matches the database; searching afresh")
                return False
        return True

    # ---- bookkeeping ----------------------------------------------------------------------
    def _cache_key(self, query: str, top_k: int, context: str | None, filters: SearchFilters, now: datetime,
                   recipe: Recipe, options: RetrievalOptions, as_of: bool = False, threshold: float = 0.0) -> str:
        """The day is part of the key (recency and "yesterday" move with it). A search as of a
        given instant (``at``) keys on that instant: what was written by then differs within a
        day, and nothing invalidates a cached answer about the past. The recipe keys by its parts
        (as the switches that describe it did before recipes, so keys did not change) and by its
        numbers only where they differ from this engine's Settings."""
        normalised = " ".join(unicodedata.normalize("NFKC", query).lower().split())
        fields: dict[str, Any] = {
            "v": CACHE_FORMAT, "q": normalised, "k": top_k, "c": context or "",
            "f": filters_json(filters), "day": now.isoformat() if as_of else now.date().isoformat(),
            "o": recipe.switches() | {"use_cache": options.use_cache, "record": options.record}, "min": threshold,
        }
        if recipe.tuning is not None and recipe.tuning != Tuning.from_settings(self.settings):
            fields["t"] = asdict(recipe.tuning)
        payload = json.dumps(fields, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def _record(self, user_id: str, response: SearchResponse, now: datetime, options: RetrievalOptions) -> None:
        if not options.record:
            return
        t = response.timings_ms
        self.recorder.metric(dict(
            at=self.clock.now(), user_id=user_id,
            cache_hit=response.cache_hit, degraded=response.degraded, results=len(response.results),
            **{f"{stage}_ms": float(t.get(stage, 0.0)) for stage in STAGES},
        ))


def _checked_filters(filters: SearchFilters) -> SearchFilters:
    """An explicit time range in aware UTC (a naive datetime is read as UTC, like everywhere in
    the engine; comparing it with the query's own aware window raised TypeError), start before end."""
    tr = filters.time_range
    if tr is None:
        return filters
    for bound in (tr.start, tr.end):
        if bound is not None and not isinstance(bound, datetime):
            raise ValidationError(f"time_range bounds must be datetimes, got {type(bound).__name__}")
    start = as_utc(tr.start) if tr.start is not None else None
    end = as_utc(tr.end) if tr.end is not None else None
    if start is not None and end is not None and start >= end:
        raise ValidationError(f"time_range must start before it ends: {start.isoformat()} >= {end.isoformat()}")
    return replace(filters, time_range=TimeRange(start=start, end=end, label=tr.label))
