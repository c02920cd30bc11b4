"""The retrieval pipeline: rewrite, time window, recall, neighbours, rerank, score, context.

One search runs a recipe (memory_core/recipes.py: ``FULL`` by default, with the numbers of the
engine's ``Settings``): recall finds candidates with the legs the recipe names
(memory_core/recall.py), ranking orders them and SQL admits what may be shown
(memory_core/ranking.py). This module runs those steps in order and keeps the books around them.
Measured on LoCoMo and MADial-Bench with ``python -m bench.quality``.

Functional core, imperative shell: this module makes every store call of a search (the vector
store's dense and BM25 searches; SQL's rows, core ids, speakers, told times, keyword candidates,
adjacent memories, constraints), and recall.py, ranking.py and sql_keyword.py only compute, on
what it read. So a chat message reaches a store in five files (page -> service -> engine ->
this pipeline -> adapter; tests/test_chat_path.py), and the pure steps are read and tested
without a store.

Stages are timed (rewrite, embed, search, rerank, fetch, total) and recorded for analytics.
Results are cached per user and invalidated by every write for that user. When the vector
store is down, recall falls back to a keyword scan of the user's rows in SQL and the response
says it is degraded (and is not cached).
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace
from datetime import datetime
from typing import Sequence

from memory_core import sql_keyword
from memory_core.cache import ResultCache
from memory_core.clock import Clock, as_utc
from memory_core.config import Settings
from memory_core.context_block import build_context_block
from memory_core.embedding.base import Embedder
from memory_core.english_leg import EnglishLeg
from memory_core.lifecycle import faded
from memory_core.llm.base import LLMProvider
from memory_core.ranked import RankedResults
from memory_core.ranking import (
    add_neighbours,
    admissible,
    constraints,
    fused_relevance,
    mark_answer_matches,
    neighbour_seeds,
    neighbour_window,
    score,
    valid_for,
)
from memory_core.recall import (
    Candidate,
    Found,
    QueryVectors,
    dense_texts,
    keyword_query,
    merge_time,
    missing_cosines,
    only_ids,
    set_cosines,
    speaker_names,
    term_count_candidates,
    told_range,
    vector_filter,
    with_told,
)
from memory_core.recipes import Recipe, RetrievalOptions, choose_recipe
from memory_core.records import MemoryRecord, SearchFilters, SearchResponse
from memory_core.relevance import DEFAULT_MODEL, RelevanceModel, language, query_terms, slot_terms
from memory_core.rerank import Reranker
from memory_core.response_cache import cache_key, from_json, to_json
from memory_core.sql_ports import SqlRepositoryPort
from memory_core.telemetry import Recorder
from memory_core.text.constraints import may_bear_on
from memory_core.text.keywords import keyword_tokens
from memory_core.text.pii import redact
from memory_core.text.speaker import strip_names
from memory_core.text.timeparse import parse_time_range
from memory_core.types import SearchResult
from memory_core.validation import (
    check_filter_time_range,
    check_min_relevance,
    check_top_k,
    check_user_id,
    clean_text,
)
from memory_core.vectors.base import VectorFilter, VectorHit, VectorStore

__all__ = ["STAGES", "RetrievalOptions", "RetrievalPipeline"]  # RetrievalOptions: its old home, kept

log = logging.getLogger(__name__)
STAGES = ("rewrite", "embed", "search", "rerank", "fetch", "total")
DEGRADED = ("Memory search is degraded: the vector store is unavailable, so keyword search over the database "
            "answered. Results may be less relevant.")


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
        english: EnglishLeg | None = None,
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
        self.english = english
        self.query_vectors = QueryVectors()

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
        # A number or an address in the query is read as its placeholder, as memories hold it: the
        # query is then found by what it asks about, and no identifier reaches the cache or the logs.
        query = redact(clean_text(query, self.settings.max_input_chars, what="query")).text
        top_k = check_top_k(top_k)
        threshold = check_min_relevance(self.settings.min_relevance if min_relevance is None else min_relevance)
        filters = check_filter_time_range(filters or SearchFilters())
        now = as_utc(at) if at else self.clock.now()
        context_text = context if isinstance(context, str) or context is None else "\n".join(context)
        context_text = redact(context_text).text if context_text else context_text

        key = cache_key(query, top_k, context_text, filters, now, recipe, options, self.settings,
                        as_of=at is not None, threshold=threshold)
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
        fade = self.settings.fade_from_importance
        t = time.perf_counter()
        rewritten = self.llm.rewrite_query(query, now) or query
        parsed_range = parse_time_range(query, now)
        time_range = merge_time(parsed_range, filters.time_range)
        names = speaker_names(rewritten, recipe)
        speakers = frozenset(self.repo.speakers_present(user_id, names)) if names else frozenset()
        window = None
        if parsed_range is not None:
            window = vector_filter(user_id, now, filters, time_range, fade)
            told = told_range(recipe, filters, time_range)
            if told is not None:
                window = with_told(window, self.repo.ids_with_event_in(
                    user_id, told.start, told.end, now, limit=recipe.resolved_tuning.event_window_ids,
                    fade_from=fade))
        timings["rewrite"] = (time.perf_counter() - t) * 1000

        notices: list[str] = []
        degraded = False
        if recipe.keyword and not self.native_keyword:
            server = str(self.vectors.backend_info().get("vector_server_version", "")) or "an older server"
            notices.append(sql_keyword.NOTICE.format(server=server))
        # Only an explicit filter is hard. A time the query *names* is a preference: people ask
        # "where did I move from 4 years ago?" about a memory written last month, so the named
        # window boosts what falls inside it (an extra fused leg) instead of hiding the rest.
        flt = vector_filter(user_id, now, filters, filters.time_range, fade)
        try:
            candidates = self._recall(user_id, rewritten, context_text, flt, now, recipe, timings, window, speakers)
        except Exception as exc:
            log.warning("vector search failed, falling back to SQL keyword search: %s", exc)
            degraded = True
            notices.append(DEGRADED)
            t = time.perf_counter()
            terms = keyword_tokens(rewritten)
            candidates = term_count_candidates(self.repo.keyword_candidates(user_id, terms, now, fade_from=fade), terms,
                                               recipe.resolved_tuning.recall_k)
            timings["search"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        records = self.repo.get_many([c.memory_id for c in candidates])
        records = {mid: r for mid, r in records.items()
                   if admissible(r, user_id, now, filters, filters.time_range, fade)}
        candidates = [c for c in candidates if c.memory_id in records]
        if recipe.neighbours and not degraded and candidates and recipe.resolved_tuning.neighbour_seeds > 0:
            seeds = neighbour_seeds(candidates, recipe)
            adjacent = self.repo.adjacent_active(user_id, [records[c.memory_id].created_at for c in seeds],
                                                 neighbour_window(recipe))
            add_neighbours(candidates, records, seeds, adjacent, user_id, now, filters, recipe, fade)
        # The rewrite may resolve "she" to the name, so both are read.
        mark_answer_matches(candidates, records, f"{query}\n{rewritten}", recipe)
        timings["fetch"] = (time.perf_counter() - t) * 1000

        if self.english is not None and recipe.english and recipe.dense and not degraded and candidates:
            # A second reading, like a reranker's, so its time counts as the rerank stage's.
            t = time.perf_counter()
            try:
                self.english.rank(dense_texts(rewritten, context_text, speakers,
                                              recipe.resolved_tuning.context_dense_turns), candidates, records)
            except Exception as exc:  # the other legs' ranking stands
                log.warning("English leg unavailable for this search: %s", exc)
            timings["rerank"] = (time.perf_counter() - t) * 1000
        if self.reranker is not None and candidates:
            t = time.perf_counter()
            scores = self.reranker.score(rewritten, [records[c.memory_id].content for c in candidates])
            for candidate, value in zip(candidates, scores):
                candidate.rerank = float(value)
            timings["rerank"] = (time.perf_counter() - t) * 1000

        if not degraded and recipe.dense:
            self._fill_cosines(user_id, rewritten, speakers, candidates, now, filters)
        terms, lang, slots = query_terms(rewritten), language(query), slot_terms(query)
        scored = score(candidates, records, now, recipe, self.relevance, terms, lang, slots)
        # A faded memory comes back only when relevant, whatever lower threshold was asked for.
        faded_floor = max(threshold, self.settings.faded_min_relevance)
        results = scored.top(threshold, top_k, lambda row: faded_floor if faded(row, now, fade) else threshold)
        bearing = self._constraints(user_id, query, now, scored, terms, lang, recipe) if recipe.core else []
        context_block = build_context_block(results, self.embedder.count_tokens, self.settings.context_max_tokens)
        constraint_block = build_context_block(bearing, self.embedder.count_tokens, self.settings.context_max_tokens)
        timings["total"] = (time.perf_counter() - started) * 1000
        response = SearchResponse(
            results=results, context_block=context_block, rewritten_query=rewritten, time_range=time_range,
            timings_ms=timings, cache_hit=False, reranker=self.reranker.name if self.reranker else None,
            degraded=degraded, notices=notices, constraints=bearing, constraint_block=constraint_block,
            min_relevance=threshold, faded_min_relevance=faded_floor,
        )
        if generation is not None and not degraded:
            self.cache.set(user_id, key, to_json(response), generation, ttl_s=valid_for(records.values(), now))
        if options.record:
            self.recorder.accessed([r.memory_id for r in results], now)
        self._record(user_id, response, now, options)
        return response

    # ---- recall: the legs' store calls (what they ask and what the hits become: recall.py) ---
    @property
    def native_keyword(self) -> bool:
        return bool(getattr(self.vectors, "native_keyword", True))

    def _recall(self, user_id: str, query: str, context: str | None, flt: VectorFilter, now: datetime,
                recipe: Recipe, timings: dict[str, float], window: VectorFilter | None,
                speakers: frozenset[str]) -> list[Candidate]:
        """Legs: dense on the query, dense on the query read with the recent conversation (when
        context is given), BM25 on query + context, and both again inside the time window the
        query names (if any); then the core memories no leg found. The dense legs embed the query
        without the speakers it names."""
        tuning = recipe.resolved_tuning
        k = tuning.recall_k
        found = Found()
        vector = context_vector = None
        if recipe.dense:
            t = time.perf_counter()
            texts = dense_texts(query, context, speakers, tuning.context_dense_turns)
            vectors = self.embedder.embed_queries(texts)
            vector = vectors[0]
            self.query_vectors.remember(texts[0], vector)
            context_vector = vectors[1] if len(texts) > 1 else None
            timings["embed"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        if vector is not None:
            found.dense(self.vectors.search_dense(vector, flt, k))
        if context_vector is not None:
            found.context(self.vectors.search_dense(context_vector, flt, k))
        words = keyword_query(query, context) if recipe.keyword else ""
        if words:
            found.keyword(self._keyword_hits(words, flt, k))
        if window is not None:
            if vector is not None:
                found.window_dense(self.vectors.search_dense(vector, window, k))
            if words:
                found.window_keyword(self._keyword_hits(words, window, k))
        if recipe.core and vector is not None:
            core_ids = found.unseen(self.repo.core_memory_ids(user_id, now, fade_from=flt.fade_from))
            if core_ids:
                found.core(self.vectors.search_dense(vector, only_ids(flt, core_ids, now), len(core_ids)))
        timings["search"] = (time.perf_counter() - t) * 1000
        return found.candidates()

    def _keyword_hits(self, text: str, flt: VectorFilter, k: int) -> list[VectorHit]:
        """The BM25 leg: in the vector store, or from SQL where it has no BM25."""
        if self.native_keyword:
            return self.vectors.search_keyword(text, flt, k)
        return self.sql_keyword_hits(text, flt, k)

    def sql_keyword_hits(self, text: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """The keyword leg from SQL, with the signature and meaning of ``VectorStore.search_keyword``
        (``text`` is pre-segmented keyword text): SQL reads the candidate rows, sql_keyword.py
        filters and ranks them by BM25."""
        terms = sql_keyword.leg_terms(text)
        if not terms:
            return []
        rows = self.repo.keyword_candidates(flt.user_id, [sql_keyword.like_term(t) for t in terms],
                                            sql_keyword.as_of(flt), limit=sql_keyword.CANDIDATES,
                                            fade_from=flt.fade_from)
        return sql_keyword.rank_candidates(rows, terms, flt, limit)

    def _fill_cosines(self, user_id: str, query: str, speakers: frozenset[str], candidates: list[Candidate],
                      now: datetime, filters: SearchFilters) -> None:
        """The query's cosine for every candidate the dense legs did not return: absolute
        relevance needs it. One dense search restricted to those ids (exact, a few dozen vectors)."""
        missing = missing_cosines(candidates)
        if not missing:
            return
        try:
            text = strip_names(query, speakers)
            vector = self.query_vectors.get(text)
            if vector is None:
                vector = self.embedder.embed_queries([text])[0]
            flt = only_ids(vector_filter(user_id, now, filters, filters.time_range,
                                         self.settings.fade_from_importance), missing, now)
            set_cosines(candidates, self.vectors.search_dense(vector, flt, len(missing)))
        except Exception as exc:  # relevance then rests on the words alone
            log.warning("cosines for keyword-only candidates unavailable: %s", exc)

    # ---- ranking's SQL reads ---------------------------------------------------------------
    def _constraints(self, user_id: str, query: str, now: datetime, scored: RankedResults[Candidate],
                     terms: frozenset[str], lang: str, recipe: Recipe) -> list[SearchResult]:
        """The user's constraints that bear on the query (``ranking.constraints``), read only when
        one may (``may_bear_on``); the reply goes on without them when SQL cannot say."""
        if not may_bear_on(query):
            return []
        try:
            rows: list[MemoryRecord] = self.repo.constraints(user_id, now, fade_from=self.settings.fade_from_importance)
        except Exception as exc:  # the log says why
            log.warning("constraints could not be read: %s", exc)
            return []
        return constraints(self.relevance, query, now, scored, rows, terms, lang,
                           recipe.resolved_tuning.recency_half_life_days)

    # ---- bookkeeping ----------------------------------------------------------------------
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
                    or not admissible(row, user_id, now, filters, filters.time_range,
                                      self.settings.fade_from_importance)):
                log.info("cached result no longer matches the database; searching afresh")
                return False
        return True

    def _record(self, user_id: str, response: SearchResponse, now: datetime, options: RetrievalOptions) -> None:
        if not options.record:
            return
        t = response.timings_ms
        self.recorder.metric(dict(
            at=self.clock.now(), user_id=user_id,
            cache_hit=response.cache_hit, degraded=response.degraded, results=len(response.results),
            **{f"{stage}_ms": float(t.get(stage, 0.0)) for stage in STAGES},
        ))
