"""What the vector store is given for one memory: the vector, and the text its BM25 index sees.

Kept in one place so the write pipeline, edits, restores and reconcile all index a memory the
same way (a difference would show up as drift in reconcile).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from memory_core.lifecycle import epoch
from memory_core.text.pii import masked
from memory_core.records import MemoryRecord
from memory_core.text.intent import asks_anything
from memory_core.text.keywords import bm25_tokens, keyword_tokens
from memory_core.vectors.base import VectorRecord


def context_key(context: str) -> str:
    """The part of the previous turn a memory is keyed with: all of it when that turn asked
    something (one of its sentences is a question: "Do you have pets? Call me later." asks), so
    "Yes, two of them" is found by "pets?" through the question; nothing otherwise, so a
    statement after a statement is keyed by its own words.

    Measured (``python -m bench.quality --datasets locomo``, cat 1-4 recall@10, tune / validate
    half): previous turn always .769 / .752, only when it asks .776 / .751, never .725 / .711.
    On two held-out sets the always-on key had cost recall (-.025 and -.049 at recall@5): most of
    their previous turns were not questions. The truth benchmark is unchanged (278/342)."""
    return context if asks_anything(context) else ""


def embed_text(content: str, context: str = "") -> str:
    """The text whose embedding is stored: the memory, after the conversation turn it answered
    when there is one (a contextual key: measured on LoCoMo, recall@10 .677 -> .721)."""
    # A PII tag is no word: "[PHONE#3f2a9c]" is read as "[PHONE]" (the context may hold one too:
    # a correction is keyed with the statement it replaced).
    content, context = masked(content), masked(context)
    return f"{context}\n{content}" if context else content


def index_text(content: str, entities: Sequence[str], context: str = "") -> str:
    """Keyword-index text: context and content pre-segmented (jieba + stemmed English) plus the
    entities, so the Milvus analyzer sees words in both languages and entity names act as keys.
    The parts are tokenised apart (no token spans a line break, so the words are the same as for
    the joined text): the memory's own words are then the cached tokens its analysis computed."""
    return " ".join(bm25_tokens(embed_text(content, context)) + keyword_tokens(" ".join(entities)))


def vector_record(record: MemoryRecord, vector: np.ndarray) -> VectorRecord:
    return VectorRecord(
        memory_id=record.memory_id,
        user_id=record.user_id,
        vector=vector,
        text=index_text(record.content, record.entities, record.context),
        importance=record.importance,
        created_at=epoch(record.created_at),
        expires_at=epoch(record.expires_at),
        memory_type=record.memory_type.value,
        content_hash=record.content_hash,
    )
