"""Ranking: how recalled candidates are ordered, and which the response may show.

The fused relevance of a candidate is the reciprocal-rank sum of the legs that found it
(memory_core/recall.py) plus what neighbour expansion lends; a line whose speaker the query names
("What did Caroline research?" -> "Caroline: ...") gets a boost (``speaker_match_boost``,
memory_core/text/speaker.py), and so does a memory that states a time when the query asks when
(``when_answer_boost``, memory_core/text/answer_type.py). Importance and recency then reorder
comparably relevant memories (memory_core/scoring.py). Which of these parts run is the recipe's
to say (memory_core/recipes.py). SQL, the system of record, has the last word on what may be
shown (``admissible``). Measured on LoCoMo and MADial-Bench with ``python -m bench.quality``.

Pure, like recall.py: the rows ranking needs from SQL (each seed's adjacent memories, the
user's constraints) are read by the pipeline (memory_core/retrieval.py) and passed in.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable, Sequence

from memory_core.lifecycle import in_retrieval
from memory_core.recall import Candidate
from memory_core.ranked import RankedResults
from memory_core.recipes import Recipe
from memory_core.records import MemoryRecord, SearchFilters
from memory_core.relevance import RelevanceModel, coverage
from memory_core.scoring import final_score, recency, rrf_sum
from memory_core.text.answer_type import asks_when, states_time
from memory_core.text.constraints import bears_on
from memory_core.text.speaker import query_names_speaker, speaker_label
from memory_core.text.mood import asks_about_wishes, is_irrealis
from memory_core.text.subject import about_someone_else, asks_about_the_user
from memory_core.types import MemoryStatus, ScoreParts, SearchResult, TimeRange


def admissible(record: MemoryRecord, user_id: str, now: datetime, filters: SearchFilters,
               time_range: TimeRange | None, fade_from: int = 0) -> bool:
    """Defence in depth: SQL, the system of record, has the last word on what may be shown.
    Past its date a memory is out, unless it fades (importance >= ``fade_from`` > 0)."""
    if record.user_id != user_id or record.status is not MemoryStatus.ACTIVE:
        return False
    if not in_retrieval(record, now, fade_from):
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


def fused_relevance(c: Candidate, recipe: Recipe) -> float:
    """Fused rank score of one candidate (before normalising by the best of this query)."""
    if c.rerank is not None:
        return c.rerank
    tuning = recipe.resolved_tuning
    ranks: list[int | None] = []
    if recipe.dense:
        ranks += [c.dense_rank, c.context_rank]
    if recipe.keyword:
        ranks.append(c.keyword_rank)
    ranks += [c.window_dense_rank, c.window_keyword_rank]
    if recipe.dense and recipe.english:
        ranks += [c.english_rank, c.english_context_rank]
    fused = rrf_sum(ranks, tuning.rrf_k) + c.neighbour
    if c.speaker_named:  # flags are only set when their part and boost are on
        fused *= 1.0 + tuning.speaker_match_boost
    if c.answers_when:
        fused *= 1.0 + tuning.when_answer_boost
    if c.not_own_fact:
        fused *= tuning.not_own_fact_factor
    return fused


def neighbour_seeds(candidates: list[Candidate], recipe: Recipe) -> list[Candidate]:
    """The strongest hits, which lend score to the memories written just before and after them
    (``add_neighbours``; the pipeline reads those memories for them: ``adjacent_active``)."""
    return sorted(candidates, key=lambda c: -fused_relevance(c, recipe))[: recipe.resolved_tuning.neighbour_seeds]


def neighbour_window(recipe: Recipe) -> timedelta:
    """How far from a seed its next and previous memory may have been written."""
    return timedelta(seconds=recipe.resolved_tuning.neighbour_window_s)


def add_neighbours(candidates: list[Candidate], records: dict[str, MemoryRecord], seeds: list[Candidate],
                   adjacent: Sequence[tuple[MemoryRecord | None, MemoryRecord | None]],
                   user_id: str, now: datetime, filters: SearchFilters, recipe: Recipe, fade_from: int = 0) -> None:
    """Neighbour expansion: the memory written right after (and before) a strong hit in the
    same conversation gets part of its score. An answer is usually the turn after the
    question that matched ("do you have pets?" -> "yes, two cats"), and a story continues
    over adjacent turns; neither shares words with the query. ``adjacent`` holds each seed's
    (next, previous) memory as SQL found them (two statements for all seeds: one LIMIT 1
    subquery per side, so a burst of memories written in the same second, e.g. an import,
    never loads the whole burst)."""
    tuning = recipe.resolved_tuning
    by_id = {c.memory_id: c for c in candidates}
    for seed, (after, before) in zip(seeds, adjacent):
        base = fused_relevance(seed, recipe)
        record = records[seed.memory_id]
        for neighbour, factor in ((after, tuning.neighbour_next_share), (before, tuning.neighbour_prev_share)):
            if neighbour is None or (record.session_id is not None and neighbour.session_id != record.session_id):
                continue
            if not admissible(neighbour, user_id, now, filters, filters.time_range, fade_from):
                continue
            c = by_id.get(neighbour.memory_id)
            if c is None:
                c = by_id[neighbour.memory_id] = Candidate(neighbour.memory_id)
                candidates.append(c)
                records[neighbour.memory_id] = neighbour
            c.neighbour = max(c.neighbour, factor * base)


def mark_answer_matches(candidates: list[Candidate], records: dict[str, MemoryRecord], query: str,
                        recipe: Recipe) -> None:
    """Flag what the question's form says will answer it: the lines of the person it names
    ("What did Caroline research?" -> "Caroline: ..."; a question about a person is answered
    by their own lines far more often than by the replies that address them by name), and,
    for a question that asks when, the memories that state a time (memory_core/text/
    speaker.py and answer_type.py); and, for a question about the user alone ("what's my job
    now?"), the memories that are another person's facts ("my sister just got a job at
    Pfizer"), and for any question but one about wishes, the wishes and what-ifs ("要是我老家在
    海边就好了"): these rank lower (memory_core/text/subject.py, mood.py)."""
    speakers = recipe.speaker_boost_on()
    when = recipe.when_boost_on() and asks_when(query)
    about_me = recipe.not_own_fact_on() and asks_about_the_user(query)
    facts_only = recipe.not_own_fact_on() and not asks_about_wishes(query)
    for c in candidates:
        content = records[c.memory_id].content
        label = speaker_label(content) if speakers or about_me or facts_only else None
        if speakers:
            c.speaker_named = label is not None and query_names_speaker(query, label)
        if when:
            c.answers_when = states_time(content)
        if (about_me or facts_only) and label is None:
            # a transcript line is a record of what its speaker said, wishes too: the speaker part ranks it
            c.not_own_fact = (about_me and about_someone_else(content)) or (facts_only and is_irrealis(content))


def score(candidates: list[Candidate], records: dict[str, MemoryRecord], now: datetime, recipe: Recipe,
          relevance_model: RelevanceModel, terms: frozenset[str] = frozenset(), lang: str = "en",
          slots: frozenset[str] = frozenset()) -> "RankedResults[Candidate]":
    """Relevance is the fused score relative to this query's best candidate (1.0 = best), so
    importance and recency adjust the order among comparably relevant memories instead of
    drowning the difference between a first and a tenth rank. Absolute relevance is left to
    ``RankedResults``, which works it out only for the results a response can show."""
    weights = recipe.resolved_tuning.weights
    raw = {c.memory_id: fused_relevance(c, recipe) for c in candidates}
    reranked = any(c.rerank is not None for c in candidates)
    best = max(raw.values(), default=0.0)
    results: list[tuple[SearchResult, Candidate, MemoryRecord]] = []
    for c in candidates:
        record = records[c.memory_id]
        relevance = raw[c.memory_id] if reranked else (raw[c.memory_id] / best if best > 0 else 0.0)
        if relevance == 0.0 and c.core and c.dense is not None:
            # A core memory the legs did not recall: its cosine (shifted from e5's ~0.7-0.9
            # band) stands in, so it competes on merit rather than entering at zero.
            relevance = max(0.0, min(1.0, (c.dense - 0.7) / 0.3)) * 0.5
        relevance = max(0.0, min(1.0, relevance))
        rec = recency(record.created_at, now, weights.half_life_days)
        value = final_score(relevance, record.importance, rec, weights) if recipe.score_terms else relevance
        results.append((SearchResult(
            memory_id=record.memory_id, user_id=record.user_id, content=record.content,
            memory_type=record.memory_type, importance=record.importance, created_at=record.created_at,
            score=round(value, 6),
            parts=ScoreParts(relevance=round(relevance, 6), importance=record.importance / 5.0,
                             recency=round(rec, 6), dense=c.dense, keyword=c.keyword, rerank=c.rerank),
            entities=record.entities, source=record.source, meta=record.meta, sealed=record.sealed,
        ), c, record))
    results.sort(key=lambda item: (-item[0].score, -item[0].created_at.timestamp(), item[0].memory_id))
    return RankedResults(results, lambda c, record: round(
        relevance_model(c.dense, query_coverage(c, record, terms, slots), lang), 6))


def query_coverage(c: Candidate, record: MemoryRecord, terms: frozenset[str], slots: frozenset[str]) -> float:
    """How much of the query the memory covers, for absolute relevance: its words, and half at
    least when it falls in the time the query names ("what did I do last week?" shares no
    word with what was done) or is a line of the speaker the query names."""
    cov = coverage(terms, record.content, record.context, slots)
    if c.window_dense_rank is not None or c.window_keyword_rank is not None or c.speaker_named:
        cov = max(cov, 0.5)
    return cov


def constraints(relevance_model: RelevanceModel, query: str, now: datetime, scored: "RankedResults[Candidate]",
                rows: Iterable[MemoryRecord], terms: frozenset[str], lang: str,
                half_life_days: float) -> list[SearchResult]:
    """The user's constraints that bear on ``query`` (memory_core.text.constraints), whatever
    their rank: an allergy must shape a snack suggestion that shares no word with it. ``rows``
    are the user's constraints as SQL holds them (the pipeline reads them only when one
    ``may_bear_on`` the query)."""
    out = []
    for record in (r for r in rows if bears_on(r.content, query)):
        ranked = scored.get(record.memory_id)
        if ranked is not None:
            out.append(ranked)
            continue
        cov = coverage(terms, record.content, record.context)
        out.append(SearchResult(
            memory_id=record.memory_id, user_id=record.user_id, content=record.content,
            memory_type=record.memory_type, importance=record.importance, created_at=record.created_at,
            score=0.0, parts=ScoreParts(relevance=0.0, importance=record.importance / 5.0,
                                        recency=recency(record.created_at, now, half_life_days),
                                        absolute=round(relevance_model(None, cov, lang), 6)),
            entities=record.entities, source=record.source, meta=record.meta, sealed=record.sealed))
    return out


def valid_for(records: Iterable[MemoryRecord], now: datetime) -> float | None:
    """Seconds until the first of these memories expires (None: none does). A cached answer
    that holds one of them, or was ranked against it, stops being true then, and no write
    invalidates it: expiry is a moment passing, the job only records it later."""
    ends = [r.expires_at for r in records if r.expires_at is not None and r.expires_at > now]
    return (min(ends) - now).total_seconds() if ends else None
