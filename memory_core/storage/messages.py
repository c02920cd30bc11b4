"""Chat messages kept for provenance (which messages a memory came from) and session lists."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import func, select

from memory_core.storage.base import SqlBase
from memory_core.storage.rowmap import message_dict
from memory_core.storage.schema import MessageRow


class MessageStore(SqlBase):
    def add_message(self, *, message_id: str, user_id: str, session_id: str, role: str, content: str, at: datetime,
                    meta: dict[str, Any] | None = None) -> None:
        with self.session() as s:
            s.add(MessageRow(message_id=message_id, user_id=user_id, session_id=session_id, role=role,
                             content=content, created_at=at, meta=meta or None))

    def messages(self, message_ids: Sequence[str]) -> list[dict[str, Any]]:
        if not message_ids:
            return []
        with self.session() as s:
            rows = s.scalars(select(MessageRow).where(MessageRow.message_id.in_(list(message_ids))).order_by(MessageRow.created_at))
            return [message_dict(row) for row in rows]

    def session_messages(self, user_id: str, session_id: str, limit: int = 200) -> list[dict[str, Any]]:
        with self.session() as s:
            rows = s.scalars(
                select(MessageRow)
                .where(MessageRow.user_id == user_id, MessageRow.session_id == session_id)
                .order_by(MessageRow.created_at, MessageRow.message_id)
                .limit(limit)
            )
            return [message_dict(row) for row in rows]

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
