"""Memory rows: insert, read by id, conditional updates, the vector-written flag, deletion, listing.

Every update that races another writer is conditional on what was read (status, updated_at,
content hash) and says whether it applied, so callers never overwrite a change they did not see.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import and_, delete, func, or_, select, tuple_, update
from sqlalchemy.orm import Session

from memory_core.records import MemoryQuery, MemoryRecord, Page
from memory_core.storage.base import SqlBase
from memory_core.storage.rowmap import SORTABLE, to_record
from memory_core.storage.english_vectors import EnglishVectorStore
from memory_core.storage.schema import MemoryRow, MessageRow
from memory_core.types import MemoryStatus


class MemoryStore(EnglishVectorStore, SqlBase):
    def insert(self, session: Session, values: dict[str, Any]) -> MemoryRecord:
        """Add a memory row to the session; returns it as a record (what it will read back as)."""
        row = MemoryRow(**values)
        session.add(row)
        return to_record(row)

    def get(self, memory_id: str, session: Session | None = None) -> MemoryRecord | None:
        if session is not None:
            row = session.get(MemoryRow, memory_id)
            return to_record(row) if row else None
        with self.session() as s:
            row = s.get(MemoryRow, memory_id)
            return to_record(row) if row else None

    def get_many(self, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        if not memory_ids:
            return {}
        with self.session() as s:
            rows = s.scalars(select(MemoryRow).where(MemoryRow.memory_id.in_(list(memory_ids))))
            return {row.memory_id: to_record(row) for row in rows}

    def update_fields(self, session: Session, memory_id: str, **fields: Any) -> None:
        session.execute(update(MemoryRow).where(MemoryRow.memory_id == memory_id).values(**fields))

    def update_if_status(self, session: Session, memory_id: str, expected: MemoryStatus, **fields: Any) -> bool:
        """Update only while the row still has status ``expected``; False when someone changed it first."""
        result = session.execute(update(MemoryRow).where(MemoryRow.memory_id == memory_id,
                                                         MemoryRow.status == expected.value).values(**fields))
        return bool(result.rowcount)

    def set_vector_written(self, memory_ids: Sequence[str], written: bool, content_hashes: dict[str, str] | None = None) -> None:
        """Mark vectors written, but only where the row still has the hash that was embedded.

        An edit that lands between the embed and this call changes the hash, so the row stays
        pending and reconcile embeds the newer text: no stale vector is ever marked current.
        """
        if not memory_ids:
            return
        # Only an active row has a vector to be current (one retired meanwhile is not "written").
        active_only = [MemoryRow.status == MemoryStatus.ACTIVE.value] if written else []
        with self.session() as s:
            if content_hashes:
                # One statement per 500 rows: (id, hash) pairs, so an edited row is left alone. The
                # plain id list is what lets SQLite use the primary key (a row-value IN alone made
                # it scan the whole table); PostgreSQL plans an index scan either way.
                pairs = [(memory_id, content_hashes[memory_id]) for memory_id in memory_ids]
                for start in range(0, len(pairs), 500):
                    part = pairs[start:start + 500]
                    s.execute(
                        update(MemoryRow)
                        .where(MemoryRow.memory_id.in_([mid for mid, _ in part]),
                               tuple_(MemoryRow.memory_id, MemoryRow.content_hash).in_(part),
                               *active_only)
                        .values(vector_written=written)
                    )
            else:
                ids = list(memory_ids)
                for start in range(0, len(ids), 500):
                    s.execute(update(MemoryRow).where(MemoryRow.memory_id.in_(ids[start:start + 500]), *active_only)
                              .values(vector_written=written))

    def update_if_unchanged(self, session: Session, memory_id: str, expected: MemoryStatus,
                            expected_updated_at: datetime, **fields: Any) -> bool:
        """Update only while the row still has the status and ``updated_at`` it was read with
        (untouched since: not edited, expired, merged or restored); False otherwise."""
        result = session.execute(update(MemoryRow).where(MemoryRow.memory_id == memory_id,
                                                         MemoryRow.status == expected.value,
                                                         MemoryRow.updated_at == expected_updated_at)
                                 .values(**fields))
        return bool(result.rowcount)

    def update_active_with_hashes(self, session: Session, pairs: Sequence[tuple[str, str]], **fields: Any) -> int:
        """Update the rows of these ``(memory_id, content_hash)`` pairs that are still active with
        that hash; returns how many matched (a merge applies only if all its originals did)."""
        if not pairs:
            return 0
        result = session.execute(
            update(MemoryRow)
            .where(or_(*(and_(MemoryRow.memory_id == memory_id, MemoryRow.content_hash == hash_)
                         for memory_id, hash_ in pairs)),
                   MemoryRow.status == MemoryStatus.ACTIVE.value)
            .values(**fields))
        return int(result.rowcount)

    def delete_row(self, session: Session, memory_id: str) -> None:
        """Remove one memory row (the caller writes the history entry in the same session)."""
        row = session.get(MemoryRow, memory_id)
        if row is not None:
            session.delete(row)
        self._delete_english_vectors(session, memory_id=memory_id)

    def status_and_content(self, memory_ids: Sequence[str]) -> dict[str, tuple[MemoryStatus, str]]:
        """memory_id -> (status, content) for the rows that exist, without loading whole rows."""
        if not memory_ids:
            return {}
        with self.session() as s:
            rows = s.execute(select(MemoryRow.memory_id, MemoryRow.status, MemoryRow.content)
                             .where(MemoryRow.memory_id.in_(list(memory_ids))))
            return {memory_id: (MemoryStatus(status), content) for memory_id, status, content in rows}

    def hashes_to_ids(self, user_id: str, hashes: Sequence[str]) -> dict[str, str]:
        """content_hash -> id of an active memory of ``user_id`` with that hash (one query per 500
        hashes; the batched form of ``find_by_hash``); the smallest id when several share one."""
        wanted = sorted(set(hashes))
        found: dict[str, str] = {}
        if not wanted:
            return found
        with self.session() as s:
            for start in range(0, len(wanted), 500):
                rows = s.execute(
                    select(MemoryRow.content_hash, MemoryRow.memory_id)
                    .where(MemoryRow.user_id == user_id, MemoryRow.status == MemoryStatus.ACTIVE.value,
                           MemoryRow.content_hash.in_(wanted[start:start + 500]))
                    .order_by(MemoryRow.memory_id)
                )
                for content_hash, memory_id in rows:
                    found.setdefault(content_hash, memory_id)
        return found

    def find_by_hash(self, user_id: str, content_hash: str) -> MemoryRecord | None:
        with self.session() as s:
            row = s.scalars(
                select(MemoryRow)
                .where(MemoryRow.user_id == user_id, MemoryRow.content_hash == content_hash,
                       MemoryRow.status == MemoryStatus.ACTIVE.value)
                .limit(1)
            ).first()
            return to_record(row) if row else None

    def replaced_by(self, session: Session, user_id: str, memory_id: str) -> list[MemoryRecord]:
        """The user's memories that ``memory_id`` superseded (newer wins) or merged."""
        rows = session.scalars(
            select(MemoryRow).where(MemoryRow.user_id == user_id, MemoryRow.superseded_by == memory_id,
                                    MemoryRow.status == MemoryStatus.SUPERSEDED.value)
            .order_by(MemoryRow.created_at)
        )
        return [to_record(row) for row in rows]

    def pending_vectors(self, limit: int = 500, user_id: str | None = None) -> list[MemoryRecord]:
        """Active memories whose vector is not (or no longer) written."""
        conditions = [MemoryRow.vector_written.is_(False), MemoryRow.status == MemoryStatus.ACTIVE.value]
        if user_id is not None:
            conditions.append(MemoryRow.user_id == user_id)
        with self.session() as s:
            rows = s.scalars(select(MemoryRow).where(*conditions).order_by(MemoryRow.created_at).limit(limit))
            return [to_record(row) for row in rows]

    def active_hashes(self, user_id: str) -> dict[str, str]:
        with self.session() as s:
            rows = s.execute(
                select(MemoryRow.memory_id, MemoryRow.content_hash).where(
                    MemoryRow.user_id == user_id, MemoryRow.status == MemoryStatus.ACTIVE.value
                )
            )
            return {memory_id: content_hash for memory_id, content_hash in rows}

    def list(self, query: MemoryQuery) -> Page:
        conditions: list[Any] = []
        if query.user_id:
            conditions.append(MemoryRow.user_id == query.user_id)
        if query.user_id_prefix:
            conditions.append(MemoryRow.user_id.startswith(query.user_id_prefix, autoescape=True))
        if query.memory_types:
            conditions.append(MemoryRow.memory_type.in_([t.value for t in query.memory_types]))
        if query.statuses:
            conditions.append(MemoryRow.status.in_([s.value for s in query.statuses]))
        if query.min_importance is not None:
            conditions.append(MemoryRow.importance >= query.min_importance)
        if query.max_importance is not None:
            conditions.append(MemoryRow.importance <= query.max_importance)
        if query.created_from is not None:
            conditions.append(MemoryRow.created_at >= query.created_from)
        if query.created_to is not None:
            conditions.append(MemoryRow.created_at < query.created_to)
        if query.text:
            conditions.append(func.lower(MemoryRow.content).contains(query.text.lower(), autoescape=True))
        column = SORTABLE.get(query.sort_by, MemoryRow.created_at)
        order = column.desc() if query.descending else column.asc()
        where = and_(*conditions) if conditions else and_(True)
        limit = max(1, min(int(query.limit), 1000))
        with self.session() as s:
            total = s.scalar(select(func.count()).select_from(MemoryRow).where(where)) or 0
            rows = s.scalars(
                select(MemoryRow).where(where).order_by(order, MemoryRow.memory_id).offset(max(0, query.offset)).limit(limit)
            )
            return Page(items=[to_record(row) for row in rows], total=int(total))

    def delete_user_rows(self, session: Session, user_id: str) -> list[str]:
        ids = list(session.scalars(select(MemoryRow.memory_id).where(MemoryRow.user_id == user_id)))
        session.execute(delete(MemoryRow).where(MemoryRow.user_id == user_id))
        self._delete_english_vectors(session, user_id=user_id)
        session.execute(delete(MessageRow).where(MessageRow.user_id == user_id))
        return ids
