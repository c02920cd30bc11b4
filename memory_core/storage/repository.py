"""SQL access for memories, history, messages, metrics and job runs.

All queries are built with SQLAlchemy expressions and bound parameters; no SQL text is ever
assembled from input. Methods take and return plain values (``MemoryRecord`` etc.), never
ORM rows, so no caller holds a session.
"""
from __future__ import annotations

import copy
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Iterator, Sequence

from sqlalchemy import Engine, Integer, and_, case, delete, func, literal, or_, select, tuple_, union_all, update
from sqlalchemy.orm import Session, sessionmaker

from memory_core.records import HistoryEntry, JobRun, MemoryQuery, MemoryRecord, Page
from memory_core.storage.schema import (
    HistoryRow,
    JobLockRow,
    JobRunRow,
    MemoryRow,
    MessageRow,
    RetrievalMetricRow,
)
from memory_core.types import MemoryStatus, MemoryType

SORTABLE = {
    "created_at": MemoryRow.created_at,
    "updated_at": MemoryRow.updated_at,
    "importance": MemoryRow.importance,
    "access_count": MemoryRow.access_count,
    "user_id": MemoryRow.user_id,
    "expires_at": MemoryRow.expires_at,
}

# Fields that an audit snapshot records (everything a staff member can see or change).
SNAPSHOT_FIELDS = (
    "content", "summary", "importance", "memory_type", "entities", "meta", "status",
    "expires_at", "expired_at", "superseded_by", "merged_from", "source", "session_id", "context", "constraint_kind",
)


def to_record(row: MemoryRow) -> MemoryRecord:
    return MemoryRecord(
        memory_id=row.memory_id,
        user_id=row.user_id,
        session_id=row.session_id,
        content=row.content,
        summary=row.summary or "",
        importance=int(row.importance),
        memory_type=MemoryType(row.memory_type),
        entities=list(row.entities or []),
        meta=dict(row.meta or {}),
        status=MemoryStatus(row.status),
        created_at=row.created_at,
        updated_at=row.updated_at,
        expires_at=row.expires_at,
        expired_at=row.expired_at,
        source=list(row.source or []),
        access_count=int(row.access_count or 0),
        last_accessed_at=row.last_accessed_at,
        superseded_by=row.superseded_by,
        vector_written=bool(row.vector_written),
        content_hash=row.content_hash,
        merged_from=list(row.merged_from or []),
        context=row.context or "",
        event_start=row.event_start,
        event_end=row.event_end,
        constraint_kind=row.constraint_kind,
    )


def snapshot(record: MemoryRecord) -> dict[str, Any]:
    """A JSON-safe picture of a memory for the history table."""
    out: dict[str, Any] = {}
    for key in SNAPSHOT_FIELDS:
        # Only the snapshot's fields, each copied (``asdict`` deep-copied the whole record and was
        # a tenth of a batch write's SQL time).
        value = copy.deepcopy(getattr(record, key))
        if isinstance(value, datetime):
            value = value.isoformat()
        elif hasattr(value, "value"):
            value = value.value
        out[key] = value
    return out


class SqlRepository:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self._sessions.begin() as session:
            yield session

    def ping(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            return True
        except Exception:
            return False

    # ---- memories -------------------------------------------------------------------------
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

    def active_memories(self, user_id: str, limit: int) -> list[MemoryRecord]:
        """The user's active memories, oldest first (ties by id)."""
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(MemoryRow.user_id == user_id, MemoryRow.status == MemoryStatus.ACTIVE.value)
                .order_by(MemoryRow.created_at, MemoryRow.memory_id)
                .limit(limit)
            )
            return [to_record(row) for row in rows]

    def recent_active_entities(self, user_id: str, limit: int) -> list[tuple[str, list[str]]]:
        """(memory_id, entities) of the user's ``limit`` newest active memories: ids and entities
        only (full rows cost most of a write's time when thousands were loaded per add)."""
        with self.session() as s:
            rows = s.execute(
                select(MemoryRow.memory_id, MemoryRow.entities)
                .where(MemoryRow.user_id == user_id, MemoryRow.status == MemoryStatus.ACTIVE.value)
                .order_by(MemoryRow.created_at.desc())
                .limit(limit)
            )
            return [(memory_id, list(entities or [])) for memory_id, entities in rows]

    def used_due_by(self, horizon: datetime, after: str, limit: int) -> list[MemoryRecord]:
        """Active memories retrieved at least once whose expiry falls by ``horizon``: one keyset
        page (ids after ``after``, in id order), so a long scan holds no long transaction."""
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(MemoryRow.status == MemoryStatus.ACTIVE.value, MemoryRow.expires_at.is_not(None),
                       MemoryRow.expires_at <= horizon, MemoryRow.last_accessed_at.is_not(None),
                       MemoryRow.memory_id > after)
                .order_by(MemoryRow.memory_id)
                .limit(limit)
            )
            return [to_record(row) for row in rows]

    def archive_candidates(self, max_importance: int, cutoff: datetime, after: tuple[str, str],
                           limit: int) -> list[MemoryRecord]:
        """Active or expired memories of importance <= ``max_importance`` created, edited and last
        retrieved no later than ``cutoff``: one keyset page after ``(user_id, memory_id)``."""
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(
                    MemoryRow.status.in_([MemoryStatus.ACTIVE.value, MemoryStatus.EXPIRED.value]),
                    MemoryRow.importance <= max_importance,
                    MemoryRow.created_at <= cutoff,
                    MemoryRow.updated_at <= cutoff,
                    or_(MemoryRow.last_accessed_at.is_(None), MemoryRow.last_accessed_at <= cutoff),
                    or_(MemoryRow.user_id > after[0],
                        and_(MemoryRow.user_id == after[0], MemoryRow.memory_id > after[1])),
                )
                .order_by(MemoryRow.user_id, MemoryRow.memory_id)
                .limit(limit)
            )
            return [to_record(row) for row in rows]

    def count_by_user(self, status: MemoryStatus) -> list[tuple[str, int]]:
        """(user_id, count of memories with ``status``) for users that have any, by user id."""
        with self.session() as s:
            rows = s.execute(
                select(MemoryRow.user_id, func.count())
                .where(MemoryRow.status == status.value)
                .group_by(MemoryRow.user_id)
                .order_by(MemoryRow.user_id)
            ).all()
            return [(user_id, int(count)) for user_id, count in rows]

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

    def core_memory_ids(self, user_id: str, now: datetime, min_importance: int = 5, limit: int = 20) -> list[str]:
        """The user's most important active memories (the design's tiered core store)."""
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow.memory_id)
                .where(
                    MemoryRow.user_id == user_id,
                    MemoryRow.status == MemoryStatus.ACTIVE.value,
                    MemoryRow.importance >= min_importance,
                    or_(MemoryRow.expires_at.is_(None), MemoryRow.expires_at > now),
                )
                .order_by(MemoryRow.created_at.desc())
                .limit(limit)
            )
            return list(rows)

    def constraints(self, user_id: str, now: datetime, limit: int = 50) -> list[MemoryRecord]:
        """The user's active, unexpired constraints (allergies, diets, dislikes, "never ..."),
        newest first: few per user, read whole for every request they might bear on."""
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(
                    MemoryRow.user_id == user_id,
                    MemoryRow.status == MemoryStatus.ACTIVE.value,
                    MemoryRow.constraint_kind.is_not(None),
                    MemoryRow.created_at <= now,
                    or_(MemoryRow.expires_at.is_(None), MemoryRow.expires_at > now),
                )
                .order_by(MemoryRow.created_at.desc())
                .limit(limit)
            )
            return [to_record(row) for row in rows]

    def ids_with_event_in(self, user_id: str, start: datetime | None, end: datetime | None, now: datetime,
                          limit: int = 512) -> list[str]:
        """The user's active, unexpired memories whose told time (``event_start`` / ``event_end``)
        meets ``[start, end)``, written no later than ``now``; newest first, at most ``limit``.
        Retrieval's time-window legs admit them beside what was written inside the window."""
        conditions = [
            MemoryRow.user_id == user_id,
            MemoryRow.status == MemoryStatus.ACTIVE.value,
            MemoryRow.event_start.is_not(None),
            MemoryRow.created_at <= now,
            or_(MemoryRow.expires_at.is_(None), MemoryRow.expires_at > now),
        ]
        if end is not None:
            conditions.append(MemoryRow.event_start < end)
        if start is not None:
            conditions.append(MemoryRow.event_end > start)
        with self.session() as s:
            rows = s.scalars(select(MemoryRow.memory_id).where(*conditions)
                             .order_by(MemoryRow.created_at.desc(), MemoryRow.memory_id).limit(limit))
            return list(rows)

    def speakers_present(self, user_id: str, names: Sequence[str]) -> set[str]:
        """Which of ``names`` open at least one of the user's active memories as a transcript
        label ("Caroline: ..."). One UNION ALL of LIMIT 1 probes, one per name (a query names
        few people); each name is matched literally (LIKE wildcards escaped)."""
        unique = list(dict.fromkeys(names))
        if not unique:
            return set()
        mine = (MemoryRow.user_id == user_id, MemoryRow.status == MemoryStatus.ACTIVE.value)
        parts = [
            select(literal(i, Integer).label("name_index"))
            .where(*mine, MemoryRow.content.startswith(f"{name}:", autoescape=True),
                   # LIKE ignores case on SQLite; a label is matched exactly on both backends.
                   func.substr(MemoryRow.content, 1, len(name) + 1) == f"{name}:")
            .limit(1).subquery()
            for i, name in enumerate(unique)
        ]
        with self.session() as session:
            found = session.execute(union_all(*[select(p) for p in parts])).all()
        return {unique[int(index)] for (index,) in found}

    def adjacent_active(self, user_id: str, times: Sequence[datetime],
                        window: timedelta) -> list[tuple[MemoryRecord | None, MemoryRecord | None]]:
        """For each time, the user's active memory written next after it and the one written last
        before it, each within ``window`` (ties: the smaller memory_id). One UNION ALL of LIMIT 1
        subqueries, then one fetch of the rows found (neighbour expansion in retrieval)."""
        if not times:
            return []
        mine = (MemoryRow.user_id == user_id, MemoryRow.status == MemoryStatus.ACTIVE.value)
        parts = []
        for i, t in enumerate(times):
            seed, after, before = literal(i, Integer), literal(1, Integer), literal(0, Integer)
            parts.append(select(seed.label("seed"), after.label("side"), MemoryRow.memory_id)
                         .where(*mine, MemoryRow.created_at >= t + timedelta(microseconds=1),
                                MemoryRow.created_at < t + window)
                         .order_by(MemoryRow.created_at, MemoryRow.memory_id).limit(1).subquery())
            parts.append(select(seed.label("seed"), before.label("side"), MemoryRow.memory_id)
                         .where(*mine, MemoryRow.created_at >= t - window, MemoryRow.created_at < t)
                         .order_by(MemoryRow.created_at.desc(), MemoryRow.memory_id).limit(1).subquery())
        with self.session() as session:
            found = session.execute(union_all(*[select(p) for p in parts])).all()
        rows = self.get_many(sorted({str(mid) for _seed, _side, mid in found}))
        out: list[list[MemoryRecord | None]] = [[None, None] for _ in times]
        for seed_index, side, memory_id in found:
            out[int(seed_index)][0 if int(side) == 1 else 1] = rows.get(str(memory_id))
        return [(a, b) for a, b in out]

    def keyword_candidates(self, user_id: str, terms: Sequence[str], now: datetime, limit: int = 200) -> list[MemoryRecord]:
        """SQL fallback recall when the vector store is down: active memories containing any term."""
        terms = [t for t in terms if t][:16]
        if not terms:
            return []
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(
                    MemoryRow.user_id == user_id,
                    MemoryRow.status == MemoryStatus.ACTIVE.value,
                    or_(MemoryRow.expires_at.is_(None), MemoryRow.expires_at > now),
                    or_(*[func.lower(MemoryRow.content).contains(term.lower(), autoescape=True) for term in terms]),
                )
                .order_by(MemoryRow.created_at.desc())
                .limit(limit)
            )
            return [to_record(row) for row in rows]

    def user_ids(self) -> list[tuple[str, int]]:
        """Every user with memories and their count of active ones."""
        with self.session() as s:
            rows = s.execute(
                select(
                    MemoryRow.user_id,
                    func.sum(case((MemoryRow.status == MemoryStatus.ACTIVE.value, 1), else_=0)),
                )
                .group_by(MemoryRow.user_id)
                .order_by(MemoryRow.user_id)
            )
            return [(user_id, int(count or 0)) for user_id, count in rows]

    # ---- aggregates for analytics (all users; ``user_prefix`` narrows to ids starting with it) --
    def count_active_by_type_and_importance(self, user_prefix: str = "") -> list[tuple[str, str, int, int]]:
        """(user_id, memory_type, importance, count) of active memories."""
        stmt = (select(MemoryRow.user_id, MemoryRow.memory_type, MemoryRow.importance, func.count())
                .where(MemoryRow.status == MemoryStatus.ACTIVE.value)
                .group_by(MemoryRow.user_id, MemoryRow.memory_type, MemoryRow.importance))
        with self.session() as s:
            return [tuple(row) for row in s.execute(_with_prefix(stmt, user_prefix)).all()]  # type: ignore[misc]

    def count_by_user_and_status(self, user_prefix: str = "") -> list[tuple[str, str, int]]:
        """(user_id, status, count) over every memory."""
        stmt = select(MemoryRow.user_id, MemoryRow.status, func.count()).group_by(MemoryRow.user_id, MemoryRow.status)
        with self.session() as s:
            return [tuple(row) for row in s.execute(_with_prefix(stmt, user_prefix)).all()]  # type: ignore[misc]

    def created_and_expired_times(self) -> tuple[list[datetime], list[datetime]]:
        """Every memory's ``created_at``, and the ``expired_at`` of those that expired (growth)."""
        with self.session() as s:
            created = list(s.scalars(select(MemoryRow.created_at)))
            expired = list(s.scalars(select(MemoryRow.expired_at).where(MemoryRow.expired_at.is_not(None))))
        return created, expired

    def due_for_expiry(self, now: datetime, limit: int = 1000) -> list[MemoryRecord]:
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(MemoryRow.status == MemoryStatus.ACTIVE.value, MemoryRow.expires_at.is_not(None),
                       MemoryRow.expires_at <= now)
                .limit(limit)
            )
            return [to_record(row) for row in rows]

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
        session.execute(delete(MessageRow).where(MessageRow.user_id == user_id))
        return ids

    # ---- history --------------------------------------------------------------------------
    def add_history(
        self,
        session: Session,
        *,
        memory_id: str,
        user_id: str,
        action: str,
        actor: str,
        at: datetime,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        note: str = "",
    ) -> None:
        session.add(HistoryRow(memory_id=memory_id, user_id=user_id, action=action, actor=actor, at=at,
                               before=before, after=after, note=note))

    def erase_history_content(self, session: Session, user_id: str) -> None:
        """Legal erasure is the one exception to append-only: the user's content leaves the
        history too; who did what, and when, stays."""
        session.execute(update(HistoryRow).where(HistoryRow.user_id == user_id)
                        .values(before=None, after=None, note="content erased on request"))

    def history(self, memory_id: str) -> list[HistoryEntry]:
        with self.session() as s:
            rows = s.scalars(select(HistoryRow).where(HistoryRow.memory_id == memory_id).order_by(HistoryRow.id))
            return [_history(row) for row in rows]

    def history_for_user(self, user_id: str, limit: int = 500) -> list[HistoryEntry]:
        with self.session() as s:
            rows = s.scalars(
                select(HistoryRow).where(HistoryRow.user_id == user_id).order_by(HistoryRow.id.desc()).limit(limit)
            )
            return [_history(row) for row in rows]

    def recent_history(self, limit: int = 200, actions: Sequence[str] = ()) -> list[HistoryEntry]:
        with self.session() as s:
            stmt = select(HistoryRow).order_by(HistoryRow.id.desc()).limit(limit)
            if actions:
                stmt = stmt.where(HistoryRow.action.in_(list(actions)))
            return [_history(row) for row in s.scalars(stmt)]

    # ---- messages -------------------------------------------------------------------------
    def add_message(self, *, message_id: str, user_id: str, session_id: str, role: str, content: str, at: datetime) -> None:
        with self.session() as s:
            s.add(MessageRow(message_id=message_id, user_id=user_id, session_id=session_id, role=role,
                             content=content, created_at=at))

    def messages(self, message_ids: Sequence[str]) -> list[dict[str, Any]]:
        if not message_ids:
            return []
        with self.session() as s:
            rows = s.scalars(select(MessageRow).where(MessageRow.message_id.in_(list(message_ids))).order_by(MessageRow.created_at))
            return [_message(row) for row in rows]

    def session_messages(self, user_id: str, session_id: str, limit: int = 200) -> list[dict[str, Any]]:
        with self.session() as s:
            rows = s.scalars(
                select(MessageRow)
                .where(MessageRow.user_id == user_id, MessageRow.session_id == session_id)
                .order_by(MessageRow.created_at, MessageRow.message_id)
                .limit(limit)
            )
            return [_message(row) for row in rows]

    def user_sessions(self, user_id: str, limit: int = 50) -> list[dict[str, Any]]:
        with self.session() as s:
            rows = s.execute(
                select(MessageRow.session_id, func.min(MessageRow.created_at), func.max(MessageRow.created_at), func.count())
                .where(MessageRow.user_id == user_id)
                .group_by(MessageRow.session_id)
                .order_by(func.max(MessageRow.created_at).desc())
                .limit(limit)
            )
            return [
                {"session_id": sid, "started_at": first, "last_at": last, "messages": int(n)}
                for sid, first, last, n in rows
            ]

    # ---- metrics and jobs -----------------------------------------------------------------
    def record_telemetry(self, metrics: Sequence[dict[str, Any]],
                         accesses: Sequence[tuple[Sequence[str], datetime]]) -> None:
        """Latency rows and access bumps queued by searches, in one transaction (one commit for a
        burst of searches instead of two per search). An id bumped twice counts twice and keeps
        the later time, whatever order the bumps arrive in (searches on several threads queue
        them out of order; a late older bump must not move ``last_accessed_at`` back)."""
        with self.session() as s:
            s.add_all(RetrievalMetricRow(**values) for values in metrics)
            for memory_ids, at in accesses:
                if memory_ids:
                    s.execute(
                        update(MemoryRow)
                        .where(MemoryRow.memory_id.in_(list(memory_ids)))
                        .values(access_count=MemoryRow.access_count + 1,
                                last_accessed_at=case((MemoryRow.last_accessed_at > at, MemoryRow.last_accessed_at),
                                                      else_=at))
                    )

    def metrics(self, since: datetime | None = None, limit: int = 100_000) -> list[dict[str, Any]]:
        with self.session() as s:
            stmt = select(RetrievalMetricRow).order_by(RetrievalMetricRow.id.desc()).limit(limit)
            if since is not None:
                stmt = stmt.where(RetrievalMetricRow.at >= since)
            return [
                {c: getattr(row, c) for c in (
                    "at", "user_id", "cache_hit", "degraded", "results", "rewrite_ms", "embed_ms",
                    "search_ms", "rerank_ms", "fetch_ms", "total_ms")}
                for row in s.scalars(stmt)
            ]

    def start_job(self, job: str, at: datetime) -> int:
        with self.session() as s:
            row = JobRunRow(job=job, started_at=at, outcome="running", counts={}, detail="")
            s.add(row)
            s.flush()
            return int(row.id)

    def finish_job(self, run_id: int, at: datetime, outcome: str, counts: dict[str, Any], detail: str = "") -> None:
        with self.session() as s:
            s.execute(update(JobRunRow).where(JobRunRow.id == run_id).values(
                finished_at=at, outcome=outcome, counts=counts, detail=detail[:4000]))

    def job_runs(self, job: str | None = None, limit: int = 100) -> list[JobRun]:
        with self.session() as s:
            stmt = select(JobRunRow).order_by(JobRunRow.id.desc()).limit(limit)
            if job:
                stmt = stmt.where(JobRunRow.job == job)
            return [
                JobRun(id=int(r.id), job=r.job, started_at=r.started_at, finished_at=r.finished_at,
                       outcome=r.outcome, counts=dict(r.counts or {}), detail=r.detail or "")
                for r in s.scalars(stmt)
            ]

    def try_lock(self, name: str, holder: str, now: datetime, until: datetime) -> bool:
        """Take or renew a lease; True when ``holder`` has it. Atomic on SQLite and PostgreSQL."""
        with self.session() as s:
            taken = s.execute(
                update(JobLockRow)
                .where(JobLockRow.name == name, or_(JobLockRow.holder == holder, JobLockRow.expires_at <= now))
                .values(holder=holder, expires_at=until)
            ).rowcount
            if taken:
                return True
        try:
            with self.session() as s:
                s.add(JobLockRow(name=name, holder=holder, expires_at=until))
            return True
        except Exception:  # another holder inserted it first (unique violation)
            return False

    def release_lock(self, name: str, holder: str) -> None:
        with self.session() as s:
            s.execute(delete(JobLockRow).where(JobLockRow.name == name, JobLockRow.holder == holder))


def _with_prefix(stmt: Any, user_prefix: str) -> Any:
    return stmt.where(MemoryRow.user_id.startswith(user_prefix, autoescape=True)) if user_prefix else stmt


def _history(row: HistoryRow) -> HistoryEntry:
    return HistoryEntry(id=int(row.id), memory_id=row.memory_id, user_id=row.user_id, action=row.action,
                        actor=row.actor, at=row.at, before=row.before, after=row.after, note=row.note or "")


def _message(row: MessageRow) -> dict[str, Any]:
    return {"message_id": row.message_id, "user_id": row.user_id, "session_id": row.session_id,
            "role": row.role, "content": row.content, "created_at": row.created_at}
