"""``VectorStore`` held in this process's memory: exact cosine search and BM25 without Milvus.

Why: opening Milvus Lite starts a child process and creating a user's collection costs about a
second, which dominated the fast test lane; an application that embeds the engine in its own
tests, or a one-off script, has the same need. Nothing is written to disk: the vectors live as
long as the store object (``reopen`` gives a second handle on the same rows, as opening the same
Lite file again in one process would).

Held to the Milvus store by ``tests/test_vector_store_contract.py``, which runs the same
assertions against both. What is the same: every input is validated by the functions the Milvus
adapter uses (``filters.build_filter``, ``validate_id``, ``checked_int``...), so a hostile id or a
bad filter is refused here exactly as there; a write is validated in full before anything is
stored; filters mean what ``build_filter`` says (dense search applies them through the same
``UserVectors.search`` the Milvus adapter's per-user cache uses); the stored text is cut to the
same byte limit. Known differences from Milvus BM25: text is analysed by the engine's own
``keyword_tokens`` (jieba search mode, lowercase, the light stemmer, stop words dropped) rather
than Milvus' jieba + Porter2 analyzer, which the engine already feeds pre-segmented text; and
document frequencies come from the whole store (Lite counts per shard collection). Scores are
therefore BM25 scores, not Milvus' to the digit; rankings agree on the contract's cases.
"""
from __future__ import annotations

import math
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from memory_core.errors import BackendUnavailable, ValidationError
from memory_core.text.keywords import keyword_tokens
from memory_core.vectors.base import VectorFilter, VectorHit, VectorRecord, VectorStore
from memory_core.vectors.filters import build_filter, checked_int, checked_memory_type, validate_id
from memory_core.vectors.checks import checked_limit, checked_vector, truncate_utf8
from memory_core.vectors.schema import TEXT_MAX_BYTES
from memory_core.vectors.user_cache import UserVectors

K1, B = 1.2, 0.75  # Milvus' BM25 defaults


@dataclass(frozen=True)
class _Row:
    memory_id: str
    user_id: str
    vector: np.ndarray  # float32, unit length
    importance: int
    created_at: int
    expires_at: int
    memory_type: str
    content_hash: str
    terms: Counter  # analysed stored text (BM25)

    @property
    def length(self) -> int:
        return sum(self.terms.values())


class _Rows:
    """The data behind one or more store handles: rows by user, and BM25 statistics."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.by_user: dict[str, dict[str, _Row]] = {}
        self.owner: dict[str, str] = {}  # memory_id -> user_id (the primary key, as in Milvus)
        self.df: Counter = Counter()  # term -> documents holding it, over the whole store
        self.total_length = 0
        self.matrices: dict[str, UserVectors] = {}  # per-user dense search arrays, rebuilt after writes

    def put(self, row: _Row) -> None:
        self.remove(row.memory_id)
        self.by_user.setdefault(row.user_id, {})[row.memory_id] = row
        self.owner[row.memory_id] = row.user_id
        self.df.update(row.terms.keys())
        self.total_length += row.length
        self.matrices.pop(row.user_id, None)

    def remove(self, memory_id: str, user_id: str | None = None) -> None:
        owner = self.owner.get(memory_id)
        if owner is None or (user_id is not None and owner != user_id):
            return
        row = self.by_user[owner].pop(memory_id)
        del self.owner[memory_id]
        if not self.by_user[owner]:
            del self.by_user[owner]
        for term in row.terms:
            self.df[term] -= 1
            if self.df[term] <= 0:
                del self.df[term]
        self.total_length -= row.length
        self.matrices.pop(owner, None)

    def matrix(self, user_id: str, dim: int) -> UserVectors | None:
        rows = self.by_user.get(user_id)
        if not rows:
            return None
        entry = self.matrices.get(user_id)
        if entry is None:
            entry = self.matrices[user_id] = UserVectors.from_rows([
                {"memory_id": r.memory_id, "embedding": r.vector, "importance": r.importance,
                 "created_at": r.created_at, "expires_at": r.expires_at, "memory_type": r.memory_type}
                for r in rows.values()], dim)
        return entry


def admits(row: _Row, flt: VectorFilter) -> bool:
    """``filters.build_filter``'s meaning on one row (the filter is already validated)."""
    if row.user_id != flt.user_id:
        return False
    if (flt.now is not None and 0 < row.expires_at <= int(flt.now)
            and not (flt.fade_from and row.importance >= int(flt.fade_from))):
        return False
    if flt.memory_types and row.memory_type not in {str(getattr(t, "value", t)) for t in flt.memory_types}:
        return False
    if flt.min_importance is not None and row.importance < int(flt.min_importance):
        return False
    window = flt.created_from is not None or flt.created_to is not None
    in_window = ((flt.created_from is None or row.created_at >= int(flt.created_from))
                 and (flt.created_to is None or row.created_at < int(flt.created_to)))
    if window and not in_window and row.memory_id not in flt.or_memory_ids:
        return False
    return not flt.memory_ids or row.memory_id in flt.memory_ids


class InMemoryVectorStore(VectorStore):
    """Vectors of active memories in a dict, searched exactly; thread-safe."""

    def __init__(self, dim: int, *, _rows: _Rows | None = None) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 32_768:
            raise ValidationError(f"dim must be an integer in 1..32768, got {dim!r}")
        self.dim = dim
        self._rows = _rows if _rows is not None else _Rows()
        self._closed = False

    def reopen(self) -> "InMemoryVectorStore":
        """A new open handle on the same rows (this one may be closed)."""
        return InMemoryVectorStore(self.dim, _rows=self._rows)

    # ---- checks shared with the Milvus adapter's meaning ------------------------------------------
    def _open(self, op: str) -> _Rows:
        if self._closed:
            raise BackendUnavailable(f"vector store is closed (during {op})")
        return self._rows

    def _checked_vector(self, vector: np.ndarray, what: str) -> np.ndarray:
        return checked_vector(vector, self.dim, what)

    @staticmethod
    def _limit(limit: int) -> int:
        return checked_limit(limit)

    def _row(self, record: VectorRecord) -> _Row:
        content_hash = record.content_hash
        if not isinstance(content_hash, str) or len(content_hash.encode("utf-8")) > 128:
            raise ValidationError("content_hash must be a string of at most 128 bytes")
        if not isinstance(record.text, str):
            raise ValidationError("text must be a string")
        vector = self._checked_vector(record.vector, f"vector of {record.memory_id!r}")
        return _Row(
            memory_id=validate_id(record.memory_id, "memory_id"),
            user_id=validate_id(record.user_id, "user_id"),
            vector=(vector / np.linalg.norm(vector)).astype(np.float32),
            importance=checked_int(record.importance, "importance"),
            created_at=checked_int(record.created_at, "created_at"),
            expires_at=checked_int(record.expires_at, "expires_at"),
            memory_type=checked_memory_type(record.memory_type),
            content_hash=content_hash,
            terms=Counter(keyword_tokens(truncate_utf8(record.text, TEXT_MAX_BYTES))),
        )

    # ---- writes -----------------------------------------------------------------------------------
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by ``memory_id``; validated in full before anything is stored; a
        repeated id in one call: the last one wins."""
        rows = [self._row(r) for r in records]
        data = self._open("upsert")
        with data.lock:
            for row in rows:
                data.put(row)

    def delete(self, memory_ids: Sequence[str], user_id: str | None = None) -> None:
        ids = list(dict.fromkeys(validate_id(m, "memory_id") for m in memory_ids))
        owner = validate_id(user_id, "user_id") if user_id is not None else None
        data = self._open("delete")
        with data.lock:
            for memory_id in ids:
                data.remove(memory_id, owner)

    def delete_user(self, user_id: str) -> None:
        user = validate_id(user_id, "user_id")
        data = self._open("delete_user")
        with data.lock:
            for memory_id in list(data.by_user.get(user, {})):
                data.remove(memory_id)

    # ---- searches ---------------------------------------------------------------------------------
    def search_dense(self, vector: np.ndarray, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """Exact cosine search; ``score`` is the cosine similarity in [-1, 1]."""
        return self.search_dense_many([vector], flt, limit)[0]

    def search_dense_many(self, vectors: Sequence[np.ndarray], flt: VectorFilter, limit: int) -> list[list[VectorHit]]:
        checked = [self._checked_vector(v, f"query vector {i}") for i, v in enumerate(vectors)]
        build_filter(flt)  # validates every literal exactly as the Milvus adapter does
        limit = self._limit(limit)
        if not checked:
            return []
        data = self._open("search_dense")
        with data.lock:
            entry = data.matrix(flt.user_id, self.dim)
        if entry is None:
            return [[] for _ in checked]
        return entry.search_many(np.stack(checked), flt, limit)

    def search_keyword(self, text: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """BM25 over the stored text within one user's rows; ``[]`` for text with no token."""
        if not isinstance(text, str):
            raise ValidationError("keyword query must be a string")
        build_filter(flt)
        limit = self._limit(limit)
        terms = list(dict.fromkeys(keyword_tokens(truncate_utf8(text, TEXT_MAX_BYTES))))
        if not terms:
            return []
        data = self._open("search_keyword")
        with data.lock:
            docs = len(data.owner)
            avg = data.total_length / docs if docs else 1.0
            idf = {t: math.log(1 + (docs - data.df[t] + 0.5) / (data.df[t] + 0.5)) for t in terms}
            scored: list[tuple[float, str]] = []
            for row in data.by_user.get(flt.user_id, {}).values():
                if not admits(row, flt):
                    continue
                norm = K1 * (1 - B + B * row.length / (avg or 1.0))
                score = sum(idf[t] * tf * (K1 + 1) / (tf + norm) for t in terms if (tf := row.terms.get(t, 0)))
                if score > 0:
                    scored.append((score, row.memory_id))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [VectorHit(memory_id=mid, score=score, rank=i) for i, (score, mid) in enumerate(scored[:limit])]

    # ---- scans ------------------------------------------------------------------------------------
    def user_hashes(self, user_id: str) -> dict[str, str]:
        user = validate_id(user_id, "user_id")
        data = self._open("user_hashes")
        with data.lock:
            return {r.memory_id: r.content_hash for r in data.by_user.get(user, {}).values()}

    def all_user_ids(self) -> Iterable[str]:
        data = self._open("all_user_ids")
        with data.lock:
            return sorted(data.by_user)

    def count(self) -> int:
        data = self._open("count")
        with data.lock:
            return len(data.owner)

    def ping(self) -> bool:
        return not self._closed

    def prepare_user(self, user_id: str, wait: bool = False) -> bool:
        """Every user is in memory already: ready."""
        validate_id(user_id, "user_id")
        return not self._closed

    def backend_info(self) -> dict[str, object]:
        return {"vector_backend": "in-memory", "vector_server_version": "", "keyword_search": "in-memory-bm25"}

    def close(self) -> None:
        """This handle stops answering (as a closed Milvus store does); the rows stay for ``reopen``."""
        self._closed = True


__all__ = ["InMemoryVectorStore", "admits"]
