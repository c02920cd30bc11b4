"""The retrieval pipeline: rewrite, time window, hybrid recall, neighbours, rerank, score, context.

Recall fuses up to four legs by reciprocal rank: dense on the query, dense on the query read
with the recent conversation (when context is given), BM25 on query + context (in SQL where the
Milvus server has no BM25: memory_core/sql_keyword.py), and both again
inside the time window the query names ("in June", "上周"; a soft boost, since people ask about
events by when they happened, not when they were written down; only ``filters.time_range`` is
a hard filter). The strongest hits then lend part of their score to the memory written right
after / before them in the same session (neighbour expansion: answers follow questions).
A transcript line whose speaker the query names ("What did Caroline research?" ->
"Caroline: ...") gets a relevance boost (``speaker_match_boost``, memory_core/text/speaker.py),
and so does a memory that states a time when the query asks when (``when_answer_boost``,
memory_core/text/answer_type.py).
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
import threading
import time
from collections import OrderedDict
import unicodedata
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Iterable, Sequence

from memory_core.cache import ResultCache
from memory_core.clock import Clock, as_utc
from memory_core.errors import ValidationError
from memory_core.config import Settings
from memory_core.context_block import build_context_block
from memory_core.embedding.base import Embedder
from memory_core.llm.base import LLMProvider
from memory_core.ranked import RankedResults
from memory_core.records import MemoryRecord, SearchFilters, SearchResponse
from memory_core.relevance import DEFAULT_MODEL, RelevanceModel, coverage, language, query_terms, slot_terms
from memory_core.response_cache import CACHE_FORMAT, filters_json, from_json, to_json
from memory_core.rerank import Reranker
from memory_core.scoring import Weights, final_score, recency, rrf_sum
from memory_core.sql_ports import SqlRepositoryPort
from memory_core.telemetry import Recorder
from memory_core.text.answer_type import asks_when, states_time
from memory_core.text.constraints import bears_on, may_bear_on
from memory_core.text.expansion import slot_keywords
from memory_core.text.keywords import keyword_text, keyword_tokens
from memory_core.text.speaker import name_candidates, query_names_speaker, speaker_label, strip_names
from memory_core.text.timeparse import parse_time_range
from memory_core.types import MemoryStatus, ScoreParts, SearchResult, TimeRange
from memory_core.validation import check_min_relevance, check_top_k, check_user_id, clean_text
from memory_core.sql_keyword import NOTICE as SQL_KEYWORD_NOTICE
from memory_core.sql_keyword import SqlKeywordLeg
from memory_core.vectors.base import VectorFilter, VectorHit, VectorStore

log = logging.getLogger(__name__)
STAGES = ("rewrite", "embed", "search", "rerank", "fetch", "total")


@dataclass
class _Candidate:
    memory_id: str
    dense: float | None = None
    dense_rank: int | None = None
    keyword: float | None = None
    keyword_rank: int | None = None
    context_rank: int | None = None  # dense leg on the query read with the recent conversation
    # Ranks inside the time window the query names: a dense and a keyword leg, like the main recall
    # (fused as one leg, their best rank, the window counted half as much: LoCoMo temporal recall@5
    # .780 -> .786, cat 1-4 recall@10 .758 -> .761).
    window_dense_rank: int | None = None
    window_keyword_rank: int | None = None
    neighbour: float = 0.0  # fused score lent by an adjacent memory of the same conversation
    core: bool = False
    speaker_named: bool = False  # the query names the speaker of this transcript line
    answers_when: bool = False  # the query asks "when" and this memory states a time
    rerank: float | None = None


@dataclass
class RetrievalOptions:
    """Switches for ablations (benchmarks compare the full pipeline with its parts)."""

    use_dense: bool = True
    use_keyword: bool = True
    use_core: bool = True
    use_score_terms: bool = True  # False: rank by relevance alone
    use_neighbours: bool = True  # lend score to the memories written just before/after a strong hit
    use_speaker: bool = True  # boost transcript lines whose speaker the query names
    use_answer_type: bool = True  # boost memories that state a time when the query asks "when"
    use_event_time: bool = True  # a named time window also admits memories that *tell* of that time
    use_cache: bool = True
    record: bool = True


def _merge_time(parsed: TimeRange | None, explicit: TimeRange | None) -> TimeRange | None:
    if parsed is None:
        return explicit
    if explicit is None:
        return parsed
    starts = [t for t in (parsed.start, explicit.start) if t is not None]
    ends = [t for t in (parsed.end, explicit.end) if t is not None]
    return TimeRange(start=max(starts) if starts else None, end=min(ends) if ends else None,
                     label=" & ".join(x for x in (parsed.label, explicit.label) if x))


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
        self.sql_keyword = SqlKeywordLeg(repo)  # the keyword leg where the vector store has no BM25
        # The dense leg's query vectors, so that relevance (``_fill_cosines``) does not embed the
        # same text again (~5 ms a search). Embedding is a pure function of the text.
        self._query_vectors: OrderedDict[str, Any] = OrderedDict()
        self._query_vectors_lock = threading.Lock()

    @property
    def weights(self) -> Weights:
        s = self.settings
        return Weights(s.weight_relevance, s.weight_importance, s.weight_recency, s.recency_half_life_days)

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
    ) -> SearchResponse:
        started = time.perf_counter()
        options = options or RetrievalOptions()
        user_id = check_user_id(user_id)
        query = clean_text(query, self.settings.max_input_chars, what="query")
        top_k = check_top_k(top_k)
        threshold = check_min_relevance(self.settings.min_relevance if min_relevance is None else min_relevance)
        filters = _checked_filters(filters or SearchFilters())
        now = as_utc(at) if at else self.clock.now()
        context_text = context if isinstance(context, str) or context is None else "\n".join(context)

        key = self._cache_key(query, top_k, context_text, filters, now, options, as_of=at is not None,
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
        time_range = _merge_time(parsed_range, filters.time_range)
        speakers = self._speakers_named(user_id, rewritten, options)
        window = None
        if parsed_range is not None:
            window = self._window_filter(user_id, now, filters, time_range, options)
        timings["rewrite"] = (time.perf_counter() - t) * 1000

        notices: list[str] = []
        degraded = False
        if options.use_keyword and not self._native_keyword:
            server = str(self.vectors.backend_info().get("vector_server_version", "")) or "an older server"
            notices.append(SQL_KEYWORD_NOTICE.format(server=server))
        # Only an explicit filter is hard. A time the query *names* is a preference: people ask
        # "where did I move from 4 years ago?" about a memory written last month, so the named
        # window boosts what falls inside it (an extra fused leg) instead of hiding the rest.
        flt = self._vector_filter(user_id, now, filters, filters.time_range)
        try:
            candidates = self._recall(user_id, rewritten, context_text, flt, now, options, timings, window,
                                      speakers)
        except Exception as exc:
            log.warning("vector search failed, falling back to SQL keyword search: %s", exc)
            degraded = True
            notices.append("Memory search is degraded: the vector store is unavailable, so keyword search over "
                           "the database answered. Results may be less relevant.")
            candidates = self._sql_recall(user_id, rewritten, now, filters.time_range, timings)

        t = time.perf_counter()
        records = self.repo.get_many([c.memory_id for c in candidates])
        records = {mid: r for mid, r in records.items()
                   if self._admissible(r, user_id, now, filters, filters.time_range)}
        candidates = [c for c in candidates if c.memory_id in records]
        if options.use_neighbours and not degraded and candidates and self.settings.neighbour_seeds > 0:
            self._add_neighbours(candidates, records, user_id, now, filters, options)
        # The rewrite may resolve "she" to the name, so both are read.
        self._mark_answer_matches(candidates, records, f"{query}\n{rewritten}", options)
        timings["fetch"] = (time.perf_counter() - t) * 1000

        if self.reranker is not None and candidates:
            t = time.perf_counter()
            scores = self.reranker.score(rewritten, [records[c.memory_id].content for c in candidates])
            for candidate, score in zip(candidates, scores):
                candidate.rerank = float(score)
            timings["rerank"] = (time.perf_counter() - t) * 1000

        if not degraded and options.use_dense:
            self._fill_cosines(user_id, rewritten, speakers, candidates, now, filters)
        terms, lang, slots = query_terms(rewritten), language(query), slot_terms(query)
        scored = self._score(candidates, records, now, options, terms, lang, slots)
        results = scored.top(threshold, top_k)
        constraints = self._constraints(user_id, query, now, scored, terms, lang) if options.use_core else []
        context_block = build_context_block(results, self.embedder.count_tokens, self.settings.context_max_tokens)
        constraint_block = build_context_block(constraints, self.embedder.count_tokens, self.settings.context_max_tokens)
        timings["total"] = (time.perf_counter() - started) * 1000
        response = SearchResponse(
            results=results, context_block=context_block, rewritten_query=rewritten, time_range=time_range,
            timings_ms=timings, cache_hit=False, reranker=self.reranker.name if self.reranker else None,
            degraded=degraded, notices=notices, constraints=constraints, constraint_block=constraint_block,
            min_relevance=threshold,
        )
        if generation is not None and not degraded:
            self.cache.set(user_id, key, to_json(response), generation, ttl_s=_valid_for(records.values(), now))
        if options.record:
            self.recorder.accessed([r.memory_id for r in results], now)
        self._record(user_id, response, now, options)
        return response

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
                    or not self._admissible(row, user_id, now, filters, filters.time_range)):
                log.info("cached result no longer matches the database; searching afresh")
                return False
        return True

    # ---- stages ---------------------------------------------------------------------------
    def _vector_filter(self, user_id: str, now: datetime, filters: SearchFilters,
                       time_range: TimeRange | None) -> VectorFilter:
        created_to = int(now.timestamp()) + 1  # nothing "from the future" of the asking time
        created_from = None
        if time_range is not None:
            if time_range.end is not None:
                created_to = min(created_to, int(time_range.end.timestamp()))
            if time_range.start is not None:
                created_from = int(time_range.start.timestamp())
        return VectorFilter(
            user_id=user_id, now=int(now.timestamp()),
            memory_types=tuple(t.value for t in filters.memory_types),
            min_importance=filters.min_importance, created_from=created_from, created_to=created_to,
        )

    def _window_filter(self, user_id: str, now: datetime, filters: SearchFilters, time_range: TimeRange | None,
                       options: RetrievalOptions) -> VectorFilter:
        """The time window the query names: memories written inside it, and (``use_event_time``)
        those whose own words tell of a time inside it ("yesterday ..." written the day after;
        ``memory_core.text.event_time``). An explicit filter stays a filter on the write time."""
        window = self._vector_filter(user_id, now, filters, time_range)
        if not options.use_event_time or filters.time_range is not None or time_range is None:
            return window
        told = self.repo.ids_with_event_in(user_id, time_range.start, time_range.end, now,
                                           limit=self.settings.event_window_ids)
        return replace(window, or_memory_ids=tuple(told)) if told else window

    def _recall(self, user_id: str, query: str, context: str | None, flt: VectorFilter, now: datetime,
                options: RetrievalOptions, timings: dict[str, float],
                window: VectorFilter | None = None, speakers: frozenset[str] = frozenset()) -> list[_Candidate]:
        """Legs: dense on the query, dense on the query read with the recent conversation (when
        context is given: a reply often continues a topic the last message only hints at), BM25
        on query + context, and both again inside the time window the query names (if any).
        The dense legs embed the query without the speakers it names (``_speakers_named``)."""
        k = self.settings.recall_k
        candidates: dict[str, _Candidate] = {}

        def get(memory_id: str) -> _Candidate:
            return candidates.setdefault(memory_id, _Candidate(memory_id))

        vector = context_vector = None
        if options.use_dense:
            t = time.perf_counter()
            texts = [strip_names(query, speakers)]
            if context and self.settings.context_dense_turns > 0:
                recent = [line for line in context.splitlines() if line.strip()][-self.settings.context_dense_turns:]
                texts.append(strip_names("\n".join(recent + [query]), speakers))
            vectors = self.embedder.embed_queries(texts)
            vector = vectors[0]
            self._remember_query_vector(texts[0], vector)
            context_vector = vectors[1] if len(texts) > 1 else None
            timings["embed"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        if vector is not None:
            for hit in self.vectors.search_dense(vector, flt, k):
                c = get(hit.memory_id)
                c.dense, c.dense_rank = hit.score, hit.rank
        if context_vector is not None:
            for hit in self.vectors.search_dense(context_vector, flt, k):
                get(hit.memory_id).context_rank = hit.rank
        keyword_query = ""
        if options.use_keyword:
            keyword_query = keyword_text(" ".join(
                part for part in (query, slot_keywords(query), context or "") if part))
            if keyword_query.strip():
                for hit in self._keyword_hits(keyword_query, flt, k):
                    c = get(hit.memory_id)
                    c.keyword, c.keyword_rank = hit.score, hit.rank
        if window is not None:
            if vector is not None:
                for hit in self.vectors.search_dense(vector, window, k):
                    get(hit.memory_id).window_dense_rank = hit.rank
            if keyword_query.strip():
                for hit in self._keyword_hits(keyword_query, window, k):
                    get(hit.memory_id).window_keyword_rank = hit.rank
        if options.use_core and vector is not None:
            core_ids = tuple(mid for mid in self.repo.core_memory_ids(user_id, now) if mid not in candidates)
            if core_ids:
                core_filter = replace(flt, memory_ids=core_ids, created_from=None,
                                      created_to=int(now.timestamp()) + 1)
                for hit in self.vectors.search_dense(vector, core_filter, len(core_ids)):
                    c = candidates.setdefault(hit.memory_id, _Candidate(hit.memory_id, core=True))
                    c.dense = hit.score
        timings["search"] = (time.perf_counter() - t) * 1000
        return list(candidates.values())

    @property
    def _native_keyword(self) -> bool:
        return bool(getattr(self.vectors, "native_keyword", True))

    def _keyword_hits(self, keyword_query: str, flt: VectorFilter, k: int) -> list[VectorHit]:
        """The BM25 leg: in the vector store, or from SQL where it has no BM25 (memory_core/sql_keyword.py)."""
        if self._native_keyword:
            return self.vectors.search_keyword(keyword_query, flt, k)
        return self.sql_keyword.search(keyword_query, flt, k)

    def _speakers_named(self, user_id: str, query: str, options: RetrievalOptions) -> frozenset[str]:
        """The names in the query that are speaker labels of this user's memories. The dense legs
        embed the query without them: e5 reads "What exercises has John done?" mostly as "John",
        so every line by or to John scores alike; the speaker boost keeps the person in the
        ranking. LoCoMo, forgetting on: cat 1-4 recall@10 .738 -> .754, multi-hop recall@20 .520 ->
        .560 (names kept for the keyword leg: stripping them there moved nothing)."""
        if not (self._speaker_boost_on(options) and options.use_dense):
            return frozenset()
        names = name_candidates(query)
        return frozenset(self.repo.speakers_present(user_id, names)) if names else frozenset()

    def _sql_recall(self, user_id: str, query: str, now: datetime, time_range: TimeRange | None,
                    timings: dict[str, float]) -> list[_Candidate]:
        t = time.perf_counter()
        terms = keyword_tokens(query)
        rows = self.repo.keyword_candidates(user_id, terms, now)
        scored = []
        for row in rows:
            text = row.content.lower()
            scored.append((sum(1 for term in terms if term.lower() in text), row.memory_id))
        scored.sort(key=lambda pair: -pair[0])
        timings["search"] = (time.perf_counter() - t) * 1000
        return [_Candidate(mid, keyword=float(score), keyword_rank=rank)
                for rank, (score, mid) in enumerate(scored[: self.settings.recall_k])]

    def _add_neighbours(self, candidates: list[_Candidate], records: dict[str, MemoryRecord], user_id: str,
                        now: datetime, filters: SearchFilters, options: RetrievalOptions) -> None:
        """Neighbour expansion: the memory written right after (and before) a strong hit in the
        same conversation gets part of its score. An answer is usually the turn after the
        question that matched ("do you have pets?" -> "yes, two cats"), and a story continues
        over adjacent turns; neither shares words with the query."""
        s = self.settings
        window = timedelta(seconds=s.neighbour_window_s)
        by_id = {c.memory_id: c for c in candidates}
        seeds = sorted(candidates, key=lambda c: -self._relevance(c, options))[: s.neighbour_seeds]
        # Two SQL statements for all seeds: the ids of each seed's next and previous memory (one
        # LIMIT 1 subquery per side, so a burst of memories written in the same second, e.g. an
        # import, never loads the whole burst), then those rows.
        adjacent = self.repo.adjacent_active(user_id, [records[c.memory_id].created_at for c in seeds], window)
        for seed, (after, before) in zip(seeds, adjacent):
            base = self._relevance(seed, options)
            record = records[seed.memory_id]
            for neighbour, factor in ((after, s.neighbour_next_share), (before, s.neighbour_prev_share)):
                if neighbour is None or (record.session_id is not None and neighbour.session_id != record.session_id):
                    continue
                if not self._admissible(neighbour, user_id, now, filters, filters.time_range):
                    continue
                c = by_id.get(neighbour.memory_id)
                if c is None:
                    c = by_id[neighbour.memory_id] = _Candidate(neighbour.memory_id)
                    candidates.append(c)
                    records[neighbour.memory_id] = neighbour
                c.neighbour = max(c.neighbour, factor * base)

    @staticmethod
    def _admissible(record: MemoryRecord, user_id: str, now: datetime, filters: SearchFilters,
                    time_range: TimeRange | None) -> bool:
        """Defence in depth: SQL, the system of record, has the last word on what may be shown."""
        if record.user_id != user_id or record.status is not MemoryStatus.ACTIVE:
            return False
        if record.expires_at is not None and record.expires_at <= now:
            return False
        if record.created_at > now + timedelta(seconds=1):
            return False
        if filters.memory_types and record.memory_type not in filters.memory_types:
            return False
        if filters.min_importance is not None and record.importance < filters.min_importance:
            return False
        explicit = filters.time_range  # hard, on the write time, for every leg (neighbours, core, SQL fallback)
        if explicit is not None and ((explicit.start is not None and record.created_at < explicit.start)
                                     or (explicit.end is not None and record.created_at >= explicit.end)):
            return False
        if filters.entities:
            wanted = {e.lower() for e in filters.entities}
            if not wanted & {e.lower() for e in record.entities}:
                return False
        return True

    def _relevance(self, c: _Candidate, options: RetrievalOptions) -> float:
        """Fused rank score of one candidate (before normalising by the best of this query)."""
        if c.rerank is not None:
            return c.rerank
        ranks: list[int | None] = []
        if options.use_dense:
            ranks += [c.dense_rank, c.context_rank]
        if options.use_keyword:
            ranks.append(c.keyword_rank)
        ranks += [c.window_dense_rank, c.window_keyword_rank]
        fused = rrf_sum(ranks, self.settings.rrf_k) + c.neighbour
        if c.speaker_named:  # flags are only set when their option and boost are on
            fused *= 1.0 + self.settings.speaker_match_boost
        if c.answers_when:
            fused *= 1.0 + self.settings.when_answer_boost
        return fused

    def _speaker_boost_on(self, options: RetrievalOptions) -> bool:
        return options.use_speaker and self.settings.speaker_match_boost > 0

    def _mark_answer_matches(self, candidates: list[_Candidate], records: dict[str, MemoryRecord], query: str,
                             options: RetrievalOptions) -> None:
        """Flag what the question's form says will answer it: the lines of the person it names
        ("What did Caroline research?" -> "Caroline: ..."; a question about a person is answered
        by their own lines far more often than by the replies that address them by name), and,
        for a question that asks when, the memories that state a time (memory_core/text/
        speaker.py and answer_type.py)."""
        speakers = self._speaker_boost_on(options)
        when = options.use_answer_type and self.settings.when_answer_boost > 0 and asks_when(query)
        for c in candidates:
            content = records[c.memory_id].content
            if speakers:
                label = speaker_label(content)
                c.speaker_named = label is not None and query_names_speaker(query, label)
            if when:
                c.answers_when = states_time(content)

    def _score(self, candidates: list[_Candidate], records: dict[str, MemoryRecord], now: datetime,
               options: RetrievalOptions, terms: frozenset[str] = frozenset(), lang: str = "en",
               slots: frozenset[str] = frozenset()) -> "RankedResults[_Candidate]":
        """Relevance is the fused score relative to this query's best candidate (1.0 = best), so
        importance and recency adjust the order among comparably relevant memories instead of
        drowning the difference between a first and a tenth rank. Absolute relevance is left to
        ``RankedResults``, which works it out only for the results a response can show."""
        weights = self.weights
        raw = {c.memory_id: self._relevance(c, options) for c in candidates}
        reranked = any(c.rerank is not None for c in candidates)
        best = max(raw.values(), default=0.0)
        results: list[tuple[SearchResult, _Candidate, MemoryRecord]] = []
        for c in candidates:
            record = records[c.memory_id]
            relevance = raw[c.memory_id] if reranked else (raw[c.memory_id] / best if best > 0 else 0.0)
            if relevance == 0.0 and c.core and c.dense is not None:
                # A core memory the legs did not recall: its cosine (shifted from e5's ~0.7-0.9
                # band) stands in, so it competes on merit rather than entering at zero.
                relevance = max(0.0, min(1.0, (c.dense - 0.7) / 0.3)) * 0.5
            relevance = max(0.0, min(1.0, relevance))
            rec = recency(record.created_at, now, weights.half_life_days)
            score = final_score(relevance, record.importance, rec, weights) if options.use_score_terms else relevance
            results.append((SearchResult(
                memory_id=record.memory_id, user_id=record.user_id, content=record.content,
                memory_type=record.memory_type, importance=record.importance, created_at=record.created_at,
                score=round(score, 6),
                parts=ScoreParts(relevance=round(relevance, 6), importance=record.importance / 5.0,
                                 recency=round(rec, 6), dense=c.dense, keyword=c.keyword, rerank=c.rerank),
                entities=record.entities, source=record.source, meta=record.meta,
            ), c, record))
        results.sort(key=lambda item: (-item[0].score, -item[0].created_at.timestamp(), item[0].memory_id))
        return RankedResults(results, lambda c, record: round(
            self.relevance(c.dense, self._coverage(c, record, terms, slots), lang), 6))

    @staticmethod
    def _coverage(c: _Candidate, record: MemoryRecord, terms: frozenset[str], slots: frozenset[str]) -> float:
        """How much of the query the memory covers, for absolute relevance: its words, and half at
        least when it falls in the time the query names ("what did I do last week?" shares no
        word with what was done) or is a line of the speaker the query names."""
        cov = coverage(terms, record.content, record.context, slots)
        if c.window_dense_rank is not None or c.window_keyword_rank is not None or c.speaker_named:
            cov = max(cov, 0.5)
        return cov

    def _remember_query_vector(self, text: str, vector: Any) -> None:
        with self._query_vectors_lock:
            self._query_vectors[text] = vector
            self._query_vectors.move_to_end(text)
            while len(self._query_vectors) > 256:
                self._query_vectors.popitem(last=False)

    def _known_query_vector(self, text: str) -> Any:
        with self._query_vectors_lock:
            return self._query_vectors.get(text)

    def _fill_cosines(self, user_id: str, query: str, speakers: frozenset[str], candidates: list[_Candidate],
                      now: datetime, filters: SearchFilters) -> None:
        """The query's cosine for every candidate the dense legs did not return (keyword hits,
        neighbours, the time window): absolute relevance needs it. One dense search restricted to
        those ids (exact, a few dozen vectors)."""
        missing = tuple(c.memory_id for c in candidates if c.dense is None)
        if not missing:
            return
        try:
            text = strip_names(query, speakers)
            vector = self._known_query_vector(text)
            if vector is None:
                vector = self.embedder.embed_queries([text])[0]
            flt = replace(self._vector_filter(user_id, now, filters, filters.time_range), memory_ids=missing,
                          created_from=None, created_to=int(now.timestamp()) + 1)
            by_id = {c.memory_id: c for c in candidates}
            for hit in self.vectors.search_dense(vector, flt, len(missing)):
                if hit.memory_id in by_id:
                    by_id[hit.memory_id].dense = hit.score
        except Exception as exc:  # relevance then rests on the words alone
            log.warning("cosines for keyword-only candidates unavailable: %s", exc)

    def _constraints(self, user_id: str, query: str, now: datetime, scored: "RankedResults[_Candidate]",
                     terms: frozenset[str], lang: str) -> list[SearchResult]:
        """The user's constraints that bear on ``query`` (memory_core.text.constraints), whatever
        their rank: an allergy must shape a snack suggestion that shares no word with it."""
        if not may_bear_on(query):
            return []  # no constraint can bear on it (``bears_on``): nothing to read
        try:
            records = [r for r in self.repo.constraints(user_id, now) if bears_on(r.content, query)]
        except Exception as exc:  # the reply goes on without them; the log says why
            log.warning("constraints could not be read: %s", exc)
            return []
        out = []
        for record in records:
            ranked = scored.get(record.memory_id)
            if ranked is not None:
                out.append(ranked)
                continue
            cov = coverage(terms, record.content, record.context)
            out.append(SearchResult(
                memory_id=record.memory_id, user_id=record.user_id, content=record.content,
                memory_type=record.memory_type, importance=record.importance, created_at=record.created_at,
                score=0.0, parts=ScoreParts(relevance=0.0, importance=record.importance / 5.0,
                                            recency=recency(record.created_at, now, self.weights.half_life_days),
                                            absolute=round(self.relevance(None, cov, lang), 6)),
                entities=record.entities, source=record.source, meta=record.meta))
        return out

    # ---- bookkeeping ----------------------------------------------------------------------
    def _cache_key(self, query: str, top_k: int, context: str | None, filters: SearchFilters, now: datetime,
                   options: RetrievalOptions, as_of: bool = False, threshold: float = 0.0) -> str:
        """The day is part of the key (recency and "yesterday" move with it). A search as of a
        given instant (``at``) keys on that instant: what was written by then differs within a
        day, and nothing invalidates a cached answer about the past."""
        normalised = " ".join(unicodedata.normalize("NFKC", query).lower().split())
        payload = json.dumps({
            "v": CACHE_FORMAT, "q": normalised, "k": top_k, "c": context or "",
            "f": filters_json(filters), "day": now.isoformat() if as_of else now.date().isoformat(),
            "o": asdict(options), "min": threshold,
        }, sort_keys=True, ensure_ascii=False)
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


def _valid_for(records: Iterable[MemoryRecord], now: datetime) -> float | None:
    """Seconds until the first of these memories expires (None: none does). A cached answer
    that holds one of them, or was ranked against it, stops being true then, and no write
    invalidates it: expiry is a moment passing, the job only records it later."""
    ends = [r.expires_at for r in records if r.expires_at is not None and r.expires_at > now]
    return (min(ends) - now).total_seconds() if ends else None
