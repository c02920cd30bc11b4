"""Recall: the legs that find a search's candidates, before anything ranks them.

Recall fuses up to four legs by reciprocal rank (the fusion is ``ranking.fused_relevance``):
dense on the query, dense on the query read with the recent conversation (when context is
given), BM25 on query + context (in SQL where the Milvus server has no BM25:
memory_core/sql_keyword.py), and both again inside the time window the query names ("in June",
"上周"; a soft boost, since people ask about events by when they happened, not when they were
written down; only ``filters.time_range`` is a hard filter). A recipe (memory_core/recipes.py)
says which legs run. Apart from the ranking, so that what is *found* and how it is *ordered*
can be read (and measured) one at a time.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from memory_core.embedding.base import Embedder
from memory_core.recipes import Recipe
from memory_core.records import SearchFilters
from memory_core.sql_keyword import SqlKeywordLeg
from memory_core.sql_ports import SqlRepositoryPort
from memory_core.text.expansion import slot_keywords
from memory_core.text.keywords import keyword_text, keyword_tokens
from memory_core.text.speaker import name_candidates, strip_names
from memory_core.types import TimeRange
from memory_core.vectors.base import VectorFilter, VectorHit, VectorStore

log = logging.getLogger(__name__)


@dataclass
class Candidate:
    """One memory a leg found, with what each leg said of it (ranks are 0-based)."""

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


def merge_time(parsed: TimeRange | None, explicit: TimeRange | None) -> TimeRange | None:
    """The window a response reports: the one the query names, narrowed by an explicit filter."""
    if parsed is None:
        return explicit
    if explicit is None:
        return parsed
    starts = [t for t in (parsed.start, explicit.start) if t is not None]
    ends = [t for t in (parsed.end, explicit.end) if t is not None]
    return TimeRange(start=max(starts) if starts else None, end=min(ends) if ends else None,
                     label=" & ".join(x for x in (parsed.label, explicit.label) if x))


def vector_filter(user_id: str, now: datetime, filters: SearchFilters, time_range: TimeRange | None) -> VectorFilter:
    """The vector store's filter for one search: the owner, nothing "from the future" of the
    asking time, the explicit filters, and ``time_range`` on the write time."""
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


class RecallLegs:
    """The legs of recall over one store, with the query vectors of recent searches."""

    def __init__(self, repo: SqlRepositoryPort, vectors: VectorStore, embedder: Embedder) -> None:
        self.repo = repo
        self.vectors = vectors
        self.embedder = embedder
        self.sql_keyword = SqlKeywordLeg(repo)  # the keyword leg where the vector store has no BM25
        # The dense leg's query vectors, so that relevance (``fill_cosines``) does not embed the
        # same text again (~5 ms a search). Embedding is a pure function of the text.
        self._query_vectors: OrderedDict[str, Any] = OrderedDict()
        self._query_vectors_lock = threading.Lock()

    @property
    def native_keyword(self) -> bool:
        return bool(getattr(self.vectors, "native_keyword", True))

    def window_filter(self, user_id: str, now: datetime, filters: SearchFilters, time_range: TimeRange | None,
                      recipe: Recipe) -> VectorFilter:
        """The time window the query names: memories written inside it, and (the ``event_time``
        part) those whose own words tell of a time inside it ("yesterday ..." written the day
        after; ``memory_core.text.event_time``). An explicit filter stays a filter on the write time."""
        window = vector_filter(user_id, now, filters, time_range)
        if not recipe.event_time or filters.time_range is not None or time_range is None:
            return window
        told = self.repo.ids_with_event_in(user_id, time_range.start, time_range.end, now,
                                           limit=recipe.resolved_tuning.event_window_ids)
        return replace(window, or_memory_ids=tuple(told)) if told else window

    def recall(self, user_id: str, query: str, context: str | None, flt: VectorFilter, now: datetime,
               recipe: Recipe, timings: dict[str, float],
               window: VectorFilter | None = None, speakers: frozenset[str] = frozenset()) -> list[Candidate]:
        """Legs: dense on the query, dense on the query read with the recent conversation (when
        context is given: a reply often continues a topic the last message only hints at), BM25
        on query + context, and both again inside the time window the query names (if any).
        The dense legs embed the query without the speakers it names (``speakers_named``)."""
        tuning = recipe.resolved_tuning
        k = tuning.recall_k
        candidates: dict[str, Candidate] = {}

        def get(memory_id: str) -> Candidate:
            return candidates.setdefault(memory_id, Candidate(memory_id))

        vector = context_vector = None
        if recipe.dense:
            t = time.perf_counter()
            texts = [strip_names(query, speakers)]
            if context and tuning.context_dense_turns > 0:
                recent = [line for line in context.splitlines() if line.strip()][-tuning.context_dense_turns:]
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
        if recipe.keyword:
            keyword_query = keyword_text(" ".join(
                part for part in (query, slot_keywords(query), context or "") if part))
            if keyword_query.strip():
                for hit in self.keyword_hits(keyword_query, flt, k):
                    c = get(hit.memory_id)
                    c.keyword, c.keyword_rank = hit.score, hit.rank
        if window is not None:
            if vector is not None:
                for hit in self.vectors.search_dense(vector, window, k):
                    get(hit.memory_id).window_dense_rank = hit.rank
            if keyword_query.strip():
                for hit in self.keyword_hits(keyword_query, window, k):
                    get(hit.memory_id).window_keyword_rank = hit.rank
        if recipe.core and vector is not None:
            core_ids = tuple(mid for mid in self.repo.core_memory_ids(user_id, now) if mid not in candidates)
            if core_ids:
                core_filter = replace(flt, memory_ids=core_ids, created_from=None,
                                      created_to=int(now.timestamp()) + 1)
                for hit in self.vectors.search_dense(vector, core_filter, len(core_ids)):
                    c = candidates.setdefault(hit.memory_id, Candidate(hit.memory_id, core=True))
                    c.dense = hit.score
        timings["search"] = (time.perf_counter() - t) * 1000
        return list(candidates.values())

    def keyword_hits(self, keyword_query: str, flt: VectorFilter, k: int) -> list[VectorHit]:
        """The BM25 leg: in the vector store, or from SQL where it has no BM25 (memory_core/sql_keyword.py)."""
        if self.native_keyword:
            return self.vectors.search_keyword(keyword_query, flt, k)
        return self.sql_keyword.search(keyword_query, flt, k)

    def speakers_named(self, user_id: str, query: str, recipe: Recipe) -> frozenset[str]:
        """The names in the query that are speaker labels of this user's memories. The dense legs
        embed the query without them: e5 reads "What exercises has John done?" mostly as "John",
        so every line by or to John scores alike; the speaker boost keeps the person in the
        ranking. LoCoMo, forgetting on: cat 1-4 recall@10 .738 -> .754, multi-hop recall@20 .520 ->
        .560 (names kept for the keyword leg: stripping them there moved nothing)."""
        if not (recipe.speaker_boost_on() and recipe.dense):
            return frozenset()
        names = name_candidates(query)
        return frozenset(self.repo.speakers_present(user_id, names)) if names else frozenset()

    def sql_recall(self, user_id: str, query: str, now: datetime, recall_k: int,
                   timings: dict[str, float]) -> list[Candidate]:
        """The outage fallback: the vector store is down, so a count of the query's terms in the
        user's rows (SQL) stands in for all of recall."""
        t = time.perf_counter()
        terms = keyword_tokens(query)
        rows = self.repo.keyword_candidates(user_id, terms, now)
        scored = []
        for row in rows:
            text = row.content.lower()
            scored.append((sum(1 for term in terms if term.lower() in text), row.memory_id))
        scored.sort(key=lambda pair: -pair[0])
        timings["search"] = (time.perf_counter() - t) * 1000
        return [Candidate(mid, keyword=float(score), keyword_rank=rank)
                for rank, (score, mid) in enumerate(scored[:recall_k])]

    def _remember_query_vector(self, text: str, vector: Any) -> None:
        with self._query_vectors_lock:
            self._query_vectors[text] = vector
            self._query_vectors.move_to_end(text)
            while len(self._query_vectors) > 256:
                self._query_vectors.popitem(last=False)

    def _known_query_vector(self, text: str) -> Any:
        with self._query_vectors_lock:
            return self._query_vectors.get(text)

    def fill_cosines(self, user_id: str, query: str, speakers: frozenset[str], candidates: list[Candidate],
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
            flt = replace(vector_filter(user_id, now, filters, filters.time_range), memory_ids=missing,
                          created_from=None, created_to=int(now.timestamp()) + 1)
            by_id = {c.memory_id: c for c in candidates}
            for hit in self.vectors.search_dense(vector, flt, len(missing)):
                if hit.memory_id in by_id:
                    by_id[hit.memory_id].dense = hit.score
        except Exception as exc:  # relevance then rests on the words alone
            log.warning("cosines for keyword-only candidates unavailable: %s", exc)
