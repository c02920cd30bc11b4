"""The keyword leg of recall from SQL, for a vector store without BM25 (a Milvus server older
than 2.5; ``VectorStore.native_keyword`` is False there).

Why not the outage fallback (``recall.term_count_candidates``): that one stands in for *all* of
recall when Milvus is down, ranks by a count of matched terms and ignores the search filters.
Here the dense legs still run on the server and only the keyword leg moves, so it must behave
like the BM25 leg it replaces: the same ``VectorFilter`` (owner, expiry, types, importance, time
window, id lists), the same tokens (``index_text``, what Milvus' BM25 field would have held),
and BM25 ranking (k1 1.2, b 0.75, as Milvus).

How: the pipeline (memory_core/retrieval.py, which makes every store call of a search) asks
``SqlRepository.keyword_candidates`` for the user's active memories whose content
contains any query term (a ``LIKE`` per term, newest first, at most ``CANDIDATES`` rows); a
stemmed term is matched by its stem minus a final "e"/"i" ("hike" finds "hiking", "happi" finds
"happy"); this module (pure: it calls no store) then filters the candidates and scores them
exactly on their tokens. Known losses
against Milvus BM25: a term that occurs only in a memory's context line or entities (not in its
content) is not found, document frequencies come from the candidates rather than from all of
the user's memories, and a user with more than ``CANDIDATES`` matching memories is ranked among
the newest ``CANDIDATES`` only.
"""
from __future__ import annotations

import math
from collections import Counter
from datetime import datetime, timezone
from typing import Iterable, Sequence

from memory_core.indexing import index_text
from memory_core.lifecycle import epoch, fades
from memory_core.records import MemoryRecord
from memory_core.text.keywords import bigram_chars
from memory_core.vectors.base import VectorFilter, VectorHit

CANDIDATES = 500
MAX_TERMS = 16  # what keyword_candidates reads
K1, B = 1.2, 0.75
NOTICE = ("Keyword matching ran in the database: this Milvus server ({server}) has no BM25 full-text "
          "search (Milvus 2.5+ has). Semantic search is unaffected.")


def like_term(token: str) -> str:
    """The substring that finds the words a stemmed token came from (a Chinese bigram token:
    its two characters)."""
    pair = bigram_chars(token)
    if pair is not None:
        return pair
    if token.isascii() and token.isalpha() and len(token) > 3 and token[-1] in "ei":
        return token[:-1]
    return token


def _admitted(record: MemoryRecord, flt: VectorFilter) -> bool:
    """``VectorFilter`` semantics (memory_core.vectors.filters.build_filter) on a SQL row."""
    if record.user_id != flt.user_id:
        return False
    created, expires = epoch(record.created_at), epoch(record.expires_at)
    if flt.now is not None and 0 < expires <= flt.now and not fades(record.importance, flt.fade_from):
        return False
    if flt.memory_types and record.memory_type.value not in flt.memory_types:
        return False
    if flt.min_importance is not None and record.importance < flt.min_importance:
        return False
    in_window = ((flt.created_from is None or created >= flt.created_from)
                 and (flt.created_to is None or created < flt.created_to))
    if not in_window and record.memory_id not in flt.or_memory_ids:
        return False
    return not flt.memory_ids or record.memory_id in flt.memory_ids


def bm25_rank(query_terms: Sequence[str], docs: dict[str, list[str]], limit: int) -> list[tuple[str, float]]:
    """(id, score) of the documents matching at least one term, best first (ties: input order)."""
    terms = list(dict.fromkeys(query_terms))
    if not docs or not terms:
        return []
    counts = {doc_id: Counter(tokens) for doc_id, tokens in docs.items()}
    avg_len = sum(len(tokens) for tokens in docs.values()) / len(docs) or 1.0
    df = {t: sum(1 for c in counts.values() if t in c) for t in terms}
    n = len(docs)
    scored: list[tuple[str, float]] = []
    for doc_id, c in counts.items():
        length = sum(c.values())
        score = 0.0
        for t in terms:
            tf = c.get(t, 0)
            if tf:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg_len))
        if score > 0:
            scored.append((doc_id, score))
    scored.sort(key=lambda pair: -pair[1])
    return scored[:limit]


def leg_terms(text: str) -> list[str]:
    """The distinct terms of pre-segmented keyword text (``keyword_text``, what the BM25 leg
    receives), at most ``MAX_TERMS``: what the candidates are looked up by and ranked on."""
    return list(dict.fromkeys(text.split()))[:MAX_TERMS]


def as_of(flt: VectorFilter) -> datetime:
    """The asking time of a filter, as ``keyword_candidates`` takes it."""
    return datetime.fromtimestamp(flt.now if flt.now is not None else 0, timezone.utc)


def rank_candidates(rows: Iterable[MemoryRecord], terms: Sequence[str], flt: VectorFilter,
                    limit: int) -> list[VectorHit]:
    """The SQL keyword leg's hits, with the signature and meaning of ``VectorStore.search_keyword``'s
    answer: the candidate rows the pipeline read (``keyword_candidates`` on ``like_term`` of each of
    ``terms``) filtered as ``flt`` says and ranked by BM25 on their index tokens."""
    docs = {r.memory_id: index_text(r.content, r.entities, r.context).split() for r in rows if _admitted(r, flt)}
    return [VectorHit(memory_id=mid, score=score, rank=i)
            for i, (mid, score) in enumerate(bm25_rank(terms, docs, limit))]


__all__ = ["CANDIDATES", "NOTICE", "as_of", "bm25_rank", "leg_terms", "like_term", "rank_candidates"]
