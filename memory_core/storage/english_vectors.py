"""The English encoder's vectors, one row per memory (``schema.EnglishVectorRow``; the leg that
reads them is ``memory_core/english_leg.py``).

A row says which model made it from which text (``content_hash``), so an edited memory or a new
model never serves an old vector: readers ask for the pair and get only matching rows.
"""
from __future__ import annotations

from typing import Sequence

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from memory_core.storage.base import SqlBase
from memory_core.storage.schema import EnglishVectorRow

_CHUNK = 500  # ids per IN (...) list


class EnglishVectorStore(SqlBase):
    def english_vectors(self, model: str, wanted: Sequence[tuple[str, str]]) -> dict[str, bytes]:
        """memory_id -> stored vector bytes, for the ``(memory_id, content_hash)`` pairs whose
        row was made by ``model`` from that very text."""
        hashes = dict(wanted)
        found: dict[str, bytes] = {}
        ids = list(hashes)
        with self.session() as s:
            for start in range(0, len(ids), _CHUNK):
                rows = s.execute(select(EnglishVectorRow.memory_id, EnglishVectorRow.content_hash,
                                        EnglishVectorRow.vector)
                                 .where(EnglishVectorRow.memory_id.in_(ids[start:start + _CHUNK]),
                                        EnglishVectorRow.model == model))
                for memory_id, content_hash, vector in rows:
                    if hashes.get(memory_id) == content_hash:
                        found[memory_id] = bytes(vector)
        return found

    def save_english_vectors(self, model: str, rows: Sequence[tuple[str, str, str, bytes]]) -> None:
        """Store ``(memory_id, user_id, content_hash, vector bytes)`` rows, replacing any older row
        of those memories (another model's, or one made from an earlier text)."""
        if not rows:
            return
        with self.session() as s:
            ids = [row[0] for row in rows]
            for start in range(0, len(ids), _CHUNK):
                s.execute(delete(EnglishVectorRow).where(EnglishVectorRow.memory_id.in_(ids[start:start + _CHUNK])))
            s.add_all([EnglishVectorRow(memory_id=memory_id, user_id=user_id, model=model, content_hash=content_hash,
                                        vector=vector) for memory_id, user_id, content_hash, vector in rows])

    @staticmethod
    def _delete_english_vectors(session: Session, *, memory_id: str | None = None, user_id: str | None = None) -> None:
        """Remove one memory's row or a user's rows, in the caller's session (the memory rows go in
        the same transaction)."""
        if memory_id is not None:
            session.execute(delete(EnglishVectorRow).where(EnglishVectorRow.memory_id == memory_id))
        if user_id is not None:
            session.execute(delete(EnglishVectorRow).where(EnglishVectorRow.user_id == user_id))
