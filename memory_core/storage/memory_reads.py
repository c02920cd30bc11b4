"""Read-only memory queries: what retrieval admits (core memories, constraints, told-time windows,
speakers, neighbours, keyword fallback), what the maintenance jobs scan (keyset pages), and the
aggregates analytics draws.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Sequence

from sqlalchemy import CompoundSelect, Integer, Text, and_, bindparam, case, cast, func, literal, or_, select, union_all

from memory_core.records import MemoryRecord
from memory_core.storage.memories import MemoryStore
from memory_core.storage.rowmap import to_record, with_prefix
from memory_core.storage.schema import MemoryRow
from memory_core.types import MemoryStatus


def _alive(user_id: str, now: datetime, fade_from: int = 0) -> tuple:
    """The user's active memories not expired at ``now`` (with ``fade_from`` > 0, also those of that
    importance or more past their date: faded, still searchable): where every read below starts."""
    dated = [MemoryRow.expires_at.is_(None), MemoryRow.expires_at > now]
    if fade_from > 0:
        dated.append(MemoryRow.importance >= fade_from)
    return (MemoryRow.user_id == user_id, MemoryRow.status == MemoryStatus.ACTIVE.value, or_(*dated))


class MemoryReads(MemoryStore):
    def core_memory_ids(self, user_id: str, now: datetime, min_importance: int = 5, limit: int = 20,
                        fade_from: int = 0) -> list[str]:
        """The user's most important active memories (the design's tiered core store; faded ones
        too with ``fade_from``)."""
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow.memory_id)
                .where(
                    *_alive(user_id, now, fade_from),
                    MemoryRow.importance >= min_importance,
                )
                .order_by(MemoryRow.created_at.desc())
                .limit(limit)
            )
            return list(rows)

    def constraints(self, user_id: str, now: datetime, limit: int = 50, fade_from: int = 0) -> list[MemoryRecord]:
        """The user's active, unexpired constraints (allergies, diets, dislikes, "never ..."),
        newest first: few per user, read whole for every request they might bear on. With
        ``fade_from``, faded ones too: a dislike holds until the user says otherwise."""
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(
                    *_alive(user_id, now, fade_from),
                    MemoryRow.constraint_kind.is_not(None),
                    MemoryRow.created_at <= now,
                )
                .order_by(MemoryRow.created_at.desc())
                .limit(limit)
            )
            return [to_record(row) for row in rows]

    def ids_with_event_in(self, user_id: str, start: datetime | None, end: datetime | None, now: datetime,
                          limit: int = 512, fade_from: int = 0) -> list[str]:
        """The user's active, unexpired (or, with ``fade_from``, faded) memories whose told time
        (``event_start`` / ``event_end``) meets ``[start, end)``, written no later than ``now``;
        newest first, at most ``limit``. Retrieval's time-window legs admit them beside what was
        written inside the window."""
        conditions = [
            *_alive(user_id, now, fade_from),
            MemoryRow.event_start.is_not(None),
            MemoryRow.created_at <= now,
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
        params: dict[str, object] = {"user_id": user_id}
        for i, t in enumerate(times):
            params.update({f"next_from_{i}": t + timedelta(microseconds=1), f"next_to_{i}": t + window,
                           f"prev_from_{i}": t - window, f"prev_to_{i}": t})
        with self.session() as session:
            found = session.execute(_adjacent_statement(len(times)), params).all()
        rows = self.get_many(sorted({str(mid) for _seed, _side, mid in found}))
        out: list[list[MemoryRecord | None]] = [[None, None] for _ in times]
        for seed_index, side, memory_id in found:
            out[int(seed_index)][0 if int(side) == 1 else 1] = rows.get(str(memory_id))
        return [(a, b) for a, b in out]

    def keyword_candidates(self, user_id: str, terms: Sequence[str], now: datetime, limit: int = 200,
                           fade_from: int = 0) -> list[MemoryRecord]:
        """SQL fallback recall when the vector store is down: active memories containing any term
        (faded ones too with ``fade_from``)."""
        terms = [t for t in terms if t][:16]
        if not terms:
            return []
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(
                    *_alive(user_id, now, fade_from),
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

    def active_memories(self, user_id: str, limit: int) -> list[MemoryRecord]:
        """The user's ``limit`` newest active memories, returned oldest first (ties by id).

        The newest, because memories that fade stay active for good: an oldest-first window
        would fill with years-old memories and never reach what the user said this week."""
        with self.session() as s:
            rows = list(s.scalars(
                select(MemoryRow)
                .where(MemoryRow.user_id == user_id, MemoryRow.status == MemoryStatus.ACTIVE.value)
                .order_by(MemoryRow.created_at.desc(), MemoryRow.memory_id.desc())
                .limit(limit)
            ))
            return [to_record(row) for row in reversed(rows)]

    def recent_active_entities(self, user_id: str, limit: int) -> list[tuple[str, Sequence[str]]]:
        """(memory_id, entities) of the user's ``limit`` newest active memories: ids and entities
        only (full rows cost most of a write's time when thousands were loaded per add).

        Every add reads the same rows again, so the entities come as their stored JSON text and
        each distinct text is decoded once (``_entity_list``), and the rows are fetched at once
        rather than one by one: at 1,000 memories a user this read was a quarter of an add."""
        with self.session() as s:
            rows = s.execute(
                select(MemoryRow.memory_id, cast(MemoryRow.entities, Text))
                .where(MemoryRow.user_id == user_id, MemoryRow.status == MemoryStatus.ACTIVE.value)
                .order_by(MemoryRow.created_at.desc())
                .limit(limit)
            ).all()
        return [(memory_id, _entity_list(raw)) for memory_id, raw in rows]

    def used_due_by(self, horizon: datetime, after: str, limit: int,
                    accessed_since: datetime | None = None) -> list[MemoryRecord]:
        """Active memories retrieved at least once (at or after ``accessed_since`` when given)
        whose expiry falls by ``horizon``: one keyset page (ids after ``after``, in id order), so a
        long scan holds no long transaction."""
        conditions = [MemoryRow.status == MemoryStatus.ACTIVE.value, MemoryRow.expires_at.is_not(None),
                      MemoryRow.expires_at <= horizon, MemoryRow.last_accessed_at.is_not(None),
                      MemoryRow.memory_id > after]
        if accessed_since is not None:
            conditions.append(MemoryRow.last_accessed_at >= accessed_since)
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(*conditions)
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

    def due_for_expiry(self, now: datetime, limit: int = 1000, fade_from: int = 0) -> list[MemoryRecord]:
        """Active memories past their date, except (``fade_from`` > 0) those of that importance or
        more, which fade instead of expiring."""
        conditions = [MemoryRow.status == MemoryStatus.ACTIVE.value, MemoryRow.expires_at.is_not(None),
                      MemoryRow.expires_at <= now]
        if fade_from > 0:
            conditions.append(MemoryRow.importance < fade_from)
        with self.session() as s:
            rows = s.scalars(
                select(MemoryRow)
                .where(*conditions)
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

    def count_active_by_type_and_importance(self, user_prefix: str = "") -> list[tuple[str, str, int, int]]:
        """(user_id, memory_type, importance, count) of active memories."""
        stmt = (select(MemoryRow.user_id, MemoryRow.memory_type, MemoryRow.importance, func.count())
                .where(MemoryRow.status == MemoryStatus.ACTIVE.value)
                .group_by(MemoryRow.user_id, MemoryRow.memory_type, MemoryRow.importance))
        with self.session() as s:
            return [tuple(row) for row in s.execute(with_prefix(stmt, user_prefix)).all()]  # type: ignore[misc]

    def count_faded(self, now: datetime, fade_from: int, user_prefix: str = "") -> int:
        """Active memories past their date that fade instead of expiring (importance >= ``fade_from``,
        which 0 turns off): searchable, returned only when relevant (``memory_core.lifecycle``)."""
        if fade_from <= 0:
            return 0
        stmt = (select(func.count()).select_from(MemoryRow)
                .where(MemoryRow.status == MemoryStatus.ACTIVE.value, MemoryRow.importance >= fade_from,
                       MemoryRow.expires_at.is_not(None), MemoryRow.expires_at <= now))
        with self.session() as s:
            return int(s.execute(with_prefix(stmt, user_prefix)).scalar_one())

    def count_by_user_and_status(self, user_prefix: str = "") -> list[tuple[str, str, int]]:
        """(user_id, status, count) over every memory."""
        stmt = select(MemoryRow.user_id, MemoryRow.status, func.count()).group_by(MemoryRow.user_id, MemoryRow.status)
        with self.session() as s:
            return [tuple(row) for row in s.execute(with_prefix(stmt, user_prefix)).all()]  # type: ignore[misc]

    def created_and_expired_times(self) -> tuple[list[datetime], list[datetime]]:
        """Every memory's ``created_at``, and the ``expired_at`` of those that expired (growth)."""
        with self.session() as s:
            created = list(s.scalars(select(MemoryRow.created_at)))
            expired = list(s.scalars(select(MemoryRow.expired_at).where(MemoryRow.expired_at.is_not(None))))
        return created, expired


@lru_cache(maxsize=64)
def _adjacent_statement(count: int) -> CompoundSelect:
    """``adjacent_active``'s UNION ALL for ``count`` times, with the user and the time bounds as
    parameters: built once per count, since building and keying a statement of 16 subqueries
    cost ~3 ms of every search, many times what SQLite takes to answer it."""
    mine = (MemoryRow.user_id == bindparam("user_id"), MemoryRow.status == MemoryStatus.ACTIVE.value)
    parts = []
    for i in range(count):
        seed, after, before = literal(i, Integer), literal(1, Integer), literal(0, Integer)
        parts.append(select(seed.label("seed"), after.label("side"), MemoryRow.memory_id)
                     .where(*mine, MemoryRow.created_at >= bindparam(f"next_from_{i}"),
                            MemoryRow.created_at < bindparam(f"next_to_{i}"))
                     .order_by(MemoryRow.created_at, MemoryRow.memory_id).limit(1).subquery())
        parts.append(select(seed.label("seed"), before.label("side"), MemoryRow.memory_id)
                     .where(*mine, MemoryRow.created_at >= bindparam(f"prev_from_{i}"),
                            MemoryRow.created_at < bindparam(f"prev_to_{i}"))
                     .order_by(MemoryRow.created_at.desc(), MemoryRow.memory_id).limit(1).subquery())
    return union_all(*[select(p) for p in parts])


@lru_cache(maxsize=16384)
def _entity_list(raw: str | None) -> tuple[str, ...]:
    """A stored ``entities`` JSON text as the values the column type would give (a pure function
    of the text; memories share few distinct entity lists)."""
    return tuple(json.loads(raw) or ()) if raw is not None else ()
