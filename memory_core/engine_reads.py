"""The facade's reads for the app's pages and the API besides search: memories by id, chat
sessions and their messages, and the aggregates the analytics page draws.

Why here and not in ``engine.py``: they are thin, validated delegations to the SQL port that
services used to make themselves (``engine.repo.*``), reaching past the facade; collected in a
mixin so ``MemoryEngine`` offers them without ``engine.py`` growing past the size guide.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from memory_core.errors import ValidationError
from memory_core.lifecycle import faded, fades
from memory_core.parts import EngineParts
from memory_core.records import MemoryRecord
from memory_core.validation import check_datetime, check_limit, check_memory_id, check_session_id, check_user_id


def _id_list(memory_ids: object) -> list[str]:
    """A list of checked memory ids; a bare string is refused (it would be read letter by letter)."""
    if isinstance(memory_ids, (str, bytes)) or not isinstance(memory_ids, Sequence):
        raise ValidationError(f"memory_ids must be a list of ids, got {type(memory_ids).__name__}")
    return [check_memory_id(m) for m in memory_ids]


def _prefix(user_prefix: object) -> str:
    if not isinstance(user_prefix, str):
        raise ValidationError(f"user_prefix must be a string, got {type(user_prefix).__name__}")
    return user_prefix


class EngineReads:
    """Mixed into ``MemoryEngine``; uses only ``self.parts``."""

    parts: EngineParts

    # ---- memories by id -----------------------------------------------------------------------
    def get_many(self, memory_ids: Sequence[str], user_id: str | None = None) -> dict[str, MemoryRecord]:
        """memory_id -> record for the ids that exist, whatever their status (a chat turn shows
        what it stored and what that replaced). With ``user_id``, only that user's memories: an id
        of someone else's memory is left out, as a missing one is (no existence leak)."""
        ids = _id_list(memory_ids)
        owner = check_user_id(user_id) if user_id is not None else None
        records = self.parts.repo.get_many(ids)
        if owner is None:
            return records
        return {mid: record for mid, record in records.items() if record.user_id == owner}

    def fades(self, record: MemoryRecord) -> bool:
        """Whether ``record``'s date is when it fades (stays searchable, when relevant only)
        rather than expires: its importance is at least ``Settings.fade_from_importance``. Pages
        say "fades on" or "expires on" by it."""
        return fades(record.importance, self.parts.settings.fade_from_importance)

    def faded(self, record: MemoryRecord, at: datetime | None = None) -> bool:
        """Whether ``record`` is faded at ``at`` (default now): active, past its date, and it fades."""
        return faded(record, at or self.parts.clock.now(), self.parts.settings.fade_from_importance)

    # ---- chat sessions ------------------------------------------------------------------------
    def sessions(self, user_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The user's chat sessions, most recent first: ``session_id``, ``started_at``,
        ``last_at`` and ``messages`` (how many)."""
        return self.parts.repo.user_sessions(check_user_id(user_id), limit=check_limit(limit))

    def session_messages(self, user_id: str, session_id: str, limit: int = 200) -> list[dict[str, Any]]:
        """The first ``limit`` messages of one of the user's sessions, oldest first (another
        user's session reads as empty)."""
        session = check_session_id(session_id)
        if session is None:
            raise ValidationError("session_id is required")
        return self.parts.repo.session_messages(check_user_id(user_id), session, limit=check_limit(limit))

    # ---- aggregates for analytics (every user, or those whose id starts with ``user_prefix``) --
    def count_active_by_type_and_importance(self, user_prefix: str = "") -> list[tuple[str, str, int, int]]:
        """(user_id, memory_type, importance, count) of active memories, counted in SQL."""
        return self.parts.repo.count_active_by_type_and_importance(_prefix(user_prefix))

    def count_by_user_and_status(self, user_prefix: str = "") -> list[tuple[str, str, int]]:
        """(user_id, status, count) over every memory, counted in SQL."""
        return self.parts.repo.count_by_user_and_status(_prefix(user_prefix))

    def count_faded(self, user_prefix: str = "") -> int:
        """Active memories that have faded (past their date, kept and returned only when relevant), now."""
        return self.parts.repo.count_faded(self.parts.clock.now(), self.parts.settings.fade_from_importance,
                                           _prefix(user_prefix))

    def created_and_expired_times(self) -> tuple[list[datetime], list[datetime]]:
        """Every memory's ``created_at``, and the ``expired_at`` of those that expired (growth)."""
        return self.parts.repo.created_and_expired_times()

    def retrieval_metrics(self, since: datetime | None = None) -> list[dict[str, Any]]:
        """One dict per recorded search (time, user, cache hit, degraded, stage timings in ms),
        newest first. Searches still queued in the telemetry recorder are not in it yet
        (``flush()`` writes them)."""
        since = check_datetime(since, "since")
        return self.parts.repo.metrics(since=since)
