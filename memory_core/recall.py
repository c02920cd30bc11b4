"""Recall: what the legs that find a search's candidates ask of the stores, and what their answers
become, before anything ranks them.

Recall fuses up to four legs by reciprocal rank (the fusion is ``ranking.fused_relevance``):
dense on the query, dense on the query read with the recent conversation (when context is
given), BM25 on query + context (in SQL where the Milvus server has no BM25:
memory_core/sql_keyword.py), and both again inside the time window the query names ("in June",
"上周"; a soft boost, since people ask about events by when they happened, not when they were
written down; only ``filters.time_range`` is a hard filter). A recipe (memory_core/recipes.py)
says which legs run. Apart from the ranking, so that what is *found* and how it is *ordered*
can be read (and measured) one at a time.

This module is pure (a functional core): it says what each leg asks (the texts to embed, the
filters, the keyword text, the names to look up) and turns what the stores answered into
``Candidate``s. The store calls themselves, every one of a search, are made by the pipeline
(memory_core/retrieval.py, the imperative shell), so a chat message goes page -> service ->
engine -> pipeline -> store and no deeper (tests/test_chat_path.py).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Iterable, Sequence

from memory_core.recipes import Recipe
from memory_core.records import MemoryRecord, SearchFilters
from memory_core.text.expansion import slot_keywords
from memory_core.text.keywords import bm25_text
from memory_core.text.speaker import name_candidates, strip_names
from memory_core.types import TimeRange
from memory_core.vectors.base import VectorFilter, VectorHit


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
    not_own_fact: bool = False  # the query asks about the user's facts; this is another's fact or a wish
    rerank: float | None = None
    # The English encoder's ranks among the candidates (memory_core/english_leg.py): against the
    # query, and against the query read with the conversation.
    english_rank: int | None = None
    english_context_rank: int | None = None


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


def vector_filter(user_id: str, now: datetime, filters: SearchFilters, time_range: TimeRange | None,
                  fade_from: int = 0) -> VectorFilter:
    """The vector store's filter for one search: the owner, nothing "from the future" of the
    asking time, nothing past its date unless it fades (importance >= ``fade_from`` > 0), the
    explicit filters, and ``time_range`` on the write time."""
    created_to = int(now.timestamp()) + 1  # nothing "from the future" of the asking time
    created_from = None
    if time_range is not None:
        if time_range.end is not None:
            created_to = min(created_to, int(time_range.end.timestamp()))
        if time_range.start is not None:
            created_from = int(time_range.start.timestamp())
    return VectorFilter(
        user_id=user_id, now=int(now.timestamp()), fade_from=fade_from,
        memory_types=tuple(t.value for t in filters.memory_types),
        min_importance=filters.min_importance, created_from=created_from, created_to=created_to,
    )


def only_ids(flt: VectorFilter, memory_ids: tuple[str, ...], now: datetime) -> VectorFilter:
    """``flt`` restricted to ``memory_ids``, whenever they were written up to now: the core
    memories and the cosines of keyword-only candidates are searched among known ids."""
    return replace(flt, memory_ids=memory_ids, created_from=None, created_to=int(now.timestamp()) + 1)


def told_range(recipe: Recipe, filters: SearchFilters, time_range: TimeRange | None) -> TimeRange | None:
    """The window whose told times SQL is asked for (``ids_with_event_in``): the named window
    also admits memories whose own words tell of a time inside it (the ``event_time`` part:
    "yesterday ..." written the day after; memory_core.text.event_time). None when that part is
    off or there is no window; an explicit filter stays a filter on the write time."""
    if not recipe.event_time or filters.time_range is not None:
        return None
    return time_range


def with_told(window: VectorFilter, told: Sequence[str]) -> VectorFilter:
    """The window filter that also admits the memories that tell of a time inside it."""
    return replace(window, or_memory_ids=tuple(told)) if told else window


def speaker_names(query: str, recipe: Recipe) -> list[str]:
    """The names in the query that may be speaker labels (which of them are, SQL says:
    ``speakers_present``). The dense legs embed the query without the real ones: e5 reads "What
    exercises has John done?" mostly as "John", so every line by or to John scores alike; the
    speaker boost keeps the person in the ranking. LoCoMo, forgetting on: cat 1-4 recall@10 .738
    -> .754, multi-hop recall@20 .520 -> .560 (names kept for the keyword leg: stripping them
    there moved nothing)."""
    if not (recipe.speaker_boost_on() and recipe.dense):
        return []
    return name_candidates(query)


def dense_texts(query: str, context: str | None, speakers: frozenset[str], context_turns: int) -> list[str]:
    """What the dense legs embed: the query without the speakers it names, and (when context is
    given: a reply often continues a topic the last message only hints at) the query read with
    the last ``context_turns`` lines of the conversation."""
    texts = [strip_names(query, speakers)]
    if context and context_turns > 0:
        recent = [line for line in context.splitlines() if line.strip()][-context_turns:]
        texts.append(strip_names("\n".join(recent + [query]), speakers))
    return texts


def keyword_query(query: str, context: str | None) -> str:
    """The BM25 legs' pre-segmented text: query, its slot words and the context ("" when that
    leaves no token)."""
    text = bm25_text(" ".join(part for part in (query, slot_keywords(query, recall=True), context or "") if part))
    return text if text.strip() else ""


class Found:
    """The candidates the legs found, by id in the order first found, with what each leg said."""

    def __init__(self) -> None:
        self.by_id: dict[str, Candidate] = {}

    def _get(self, memory_id: str) -> Candidate:
        return self.by_id.setdefault(memory_id, Candidate(memory_id))

    def dense(self, hits: Iterable[VectorHit]) -> None:
        for hit in hits:
            c = self._get(hit.memory_id)
            c.dense, c.dense_rank = hit.score, hit.rank

    def context(self, hits: Iterable[VectorHit]) -> None:
        for hit in hits:
            self._get(hit.memory_id).context_rank = hit.rank

    def keyword(self, hits: Iterable[VectorHit]) -> None:
        for hit in hits:
            c = self._get(hit.memory_id)
            c.keyword, c.keyword_rank = hit.score, hit.rank

    def window_dense(self, hits: Iterable[VectorHit]) -> None:
        for hit in hits:
            self._get(hit.memory_id).window_dense_rank = hit.rank

    def window_keyword(self, hits: Iterable[VectorHit]) -> None:
        for hit in hits:
            self._get(hit.memory_id).window_keyword_rank = hit.rank

    def unseen(self, memory_ids: Iterable[str]) -> tuple[str, ...]:
        """The ids no leg found yet (the core memories that must still be searched for)."""
        return tuple(mid for mid in memory_ids if mid not in self.by_id)

    def core(self, hits: Iterable[VectorHit]) -> None:
        """A core memory competes even when no leg recalled it, with its cosine."""
        for hit in hits:
            c = self.by_id.setdefault(hit.memory_id, Candidate(hit.memory_id, core=True))
            c.dense = hit.score

    def candidates(self) -> list[Candidate]:
        return list(self.by_id.values())


def term_count_candidates(rows: Iterable[MemoryRecord], terms: Sequence[str], recall_k: int) -> list[Candidate]:
    """The outage fallback's ranking: the vector store is down, so a count of the query's terms
    in the user's rows (SQL) stands in for all of recall."""
    scored = []
    for row in rows:
        text = row.content.lower()
        scored.append((sum(1 for term in terms if term.lower() in text), row.memory_id))
    scored.sort(key=lambda pair: -pair[0])
    return [Candidate(mid, keyword=float(score), keyword_rank=rank)
            for rank, (score, mid) in enumerate(scored[:recall_k])]


def missing_cosines(candidates: Sequence[Candidate]) -> tuple[str, ...]:
    """The candidates the dense legs did not return (keyword hits, neighbours, the time window):
    absolute relevance needs the query's cosine for them too."""
    return tuple(c.memory_id for c in candidates if c.dense is None)


def set_cosines(candidates: Sequence[Candidate], hits: Iterable[VectorHit]) -> None:
    by_id = {c.memory_id: c for c in candidates}
    for hit in hits:
        if hit.memory_id in by_id:
            by_id[hit.memory_id].dense = hit.score


class QueryVectors:
    """The dense leg's query vectors of recent searches, so that relevance (the cosines of
    keyword-only candidates) does not embed the same text again (~5 ms a search). Embedding is
    a pure function of the text; the memo is shared by the threads that search."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, text: str, vector: Any) -> None:
        with self._lock:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)

    def get(self, text: str) -> Any:
        with self._lock:
            return self._vectors.get(text)
