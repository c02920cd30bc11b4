"""The audit history: append-only entries with before/after snapshots, erased only on request."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from memory_core.records import HistoryEntry
from memory_core.storage.base import SqlBase
from memory_core.storage.rowmap import history_entry
from memory_core.storage.schema import HistoryRow


class HistoryStore(SqlBase):
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
            return [history_entry(row) for row in rows]

    def history_for_user(self, user_id: str, limit: int = 500) -> list[HistoryEntry]:
        with self.session() as s:
            rows = s.scalars(
                select(HistoryRow).where(HistoryRow.user_id == user_id).order_by(HistoryRow.id.desc()).limit(limit)
            )
            return [history_entry(row) for row in rows]

    def recent_history(self, limit: int = 200, actions: Sequence[str] = ()) -> list[HistoryEntry]:
        with self.session() as s:
            stmt = select(HistoryRow).order_by(HistoryRow.id.desc()).limit(limit)
            if actions:
                stmt = stmt.where(HistoryRow.action.in_(list(actions)))
            return [history_entry(row) for row in s.scalars(stmt)]
