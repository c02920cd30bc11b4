"""Staff operations on memories: browse, edit, expire, restore, delete, erase, history,
provenance, merges and maintenance runs. Import and export are in ``services.admin_io``
(re-exported here for the Admin page).

Every public function takes the signed-in principal and is ``@staff_only`` (``services.access``):
anyone who is not staff gets ``PermissionError``, whatever the page did: the page check is for
the person, this one is the rule. Every change goes through the engine with the staff member's
name as the actor, so it lands in the history table. Demo staff is held to demo users here,
not only on the page (see ``services.access``).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from typing import TYPE_CHECKING, Any, Sequence

from memory_core.errors import ValidationError  # noqa: F401 - the Admin page catches admin.ValidationError
from services import scheduler as sched
from services.access import demo_only, owner_in_scope, refuse_demo, require_staff, require_user_in_scope, staff_only
from services.admin_io import (
    IMPORT_FIELDS,
    MAX_IMPORT_ROWS,
    ImportReport,
    ImportRow,
    export_user_jsonl,
    import_rows,
    parse_import,
    record_to_json,
)
from services.auth import DEMO_PREFIX, Principal, is_demo_id

if TYPE_CHECKING:
    from memory_core import HistoryEntry, MemoryEngine, MemoryRecord, Page

__all__ = [
    "IMPORT_FIELDS", "MAX_IMPORT_ROWS", "BrowseFilters", "FieldChange", "ImportReport", "ImportRow", "MergeFailure",
    "MergeOutcome", "MergePlan", "browse", "day_start", "delete_memory", "diff", "edit_memory", "erase_user",
    "expire_memory", "export_user_jsonl", "get_memory", "history", "import_rows", "linked_memories", "merge_apply",
    "merge_preview", "change_text", "LINKED_FIELDS",
    "parse_import", "provenance", "record_to_json", "require_staff", "require_user_in_scope", "restore_memory",
    "run_expiry", "run_reconcile", "scheduler_status", "told_time_label", "user_history", "users", "ValidationError",
]


# ---- browse -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BrowseFilters:
    user_id: str | None = None
    memory_types: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    min_importance: int | None = None
    max_importance: int | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None  # inclusive day when built from a date picker
    text: str | None = None
    sort_by: str = "created_at"
    descending: bool = True
    page: int = 0
    page_size: int = 25


@staff_only
def browse(principal: Principal, engine: "MemoryEngine", filters: BrowseFilters) -> "Page":
    """One page of memories matching the filters (all bound parameters in SQL)."""
    from memory_core import MemoryQuery, MemoryStatus, MemoryType

    if filters.user_id:
        require_user_in_scope(principal, filters.user_id)
    query = MemoryQuery(
        user_id=filters.user_id or None,
        user_id_prefix=DEMO_PREFIX if demo_only(principal) else None,
        memory_types=tuple(MemoryType(t) for t in filters.memory_types),
        statuses=tuple(MemoryStatus(s) for s in filters.statuses),
        min_importance=filters.min_importance,
        max_importance=filters.max_importance,
        created_from=filters.created_from,
        created_to=filters.created_to,
        text=(filters.text or "").strip() or None,
        sort_by=filters.sort_by,
        descending=filters.descending,
        offset=max(0, filters.page) * filters.page_size,
        limit=filters.page_size,
    )
    return engine.list_memories(query)


def day_start(day: Any) -> datetime:
    """Midnight UTC at the start of a date (for date-range filters)."""
    return datetime.combine(day, time.min, tzinfo=timezone.utc)


@staff_only
def users(principal: Principal, engine: "MemoryEngine") -> list[tuple[str, int]]:
    found = engine.users()
    return [(u, n) for u, n in found if is_demo_id(u)] if demo_only(principal) else found


@staff_only
def get_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> "MemoryRecord":
    return engine.get(memory_id, owner_in_scope(principal, engine, memory_id))


# ---- edit ---------------------------------------------------------------------------------------
_KEEP: Any = object()


def told_time_label(record: "MemoryRecord") -> str:
    """When a memory's own words say it happened, for staff ("2023-10-03", "2023-09-01 to
    2023-09-30"), or "" when they name no time (then only its write date says when)."""
    if record.event_start is None or record.event_end is None:
        return ""
    first = record.event_start.date()
    last = (record.event_end - timedelta(microseconds=1)).date()  # the end is exclusive
    return first.isoformat() if first == last else f"{first.isoformat()} to {last.isoformat()}"


def expiry_label(engine: "MemoryEngine", record: "MemoryRecord") -> str:
    """What a memory's date means, for staff: "never", "expires 2027-03-01", "fades 2027-03-01"
    (importance that fades: it then stays searchable, when relevant only), or, for an active
    memory past its date, "expired 2026-...", "faded 2026-..."; for one no longer active, the day."""
    if record.expires_at is None:
        return "never"
    day = record.expires_at.date().isoformat()
    if record.status.value != "active":
        return day  # expired, replaced, archived: the status says it; the date is what it was
    past = record.expires_at <= engine.clock.now()
    if engine.fades(record):
        return f"faded {day}" if past else f"fades {day}"
    return f"expired {day}" if past else f"expires {day}"


@staff_only
def edit_memory(principal: Principal, engine: "MemoryEngine", memory_id: str, *, content: str | None = None,
                importance: int | None = None, memory_type: str | None = None,
                expires_at: datetime | None | Any = _KEEP, note: str = "") -> "MemoryRecord":
    """Edit fields of a memory; unchanged fields are left alone. Content edits are re-embedded."""
    owner = owner_in_scope(principal, engine, memory_id)
    before = engine.get(memory_id, owner)
    kwargs: dict[str, Any] = {}
    if content is not None and content.strip() != before.content:
        kwargs["content"] = content
    if importance is not None and importance != before.importance:
        kwargs["importance"] = importance
    if memory_type is not None and memory_type != before.memory_type.value:
        kwargs["memory_type"] = memory_type
    if expires_at is not _KEEP and not _same_expiry(expires_at, before.expires_at):
        kwargs["expires_at"] = expires_at
    if not kwargs:
        return before
    return engine.update(memory_id, actor=principal.actor, note=note or "edited by staff", user_id=owner, **kwargs)


def _same_expiry(new: datetime | None, current: datetime | None) -> bool:
    """Whether an edit leaves the expiry as it is. The edit form picks a day, so midnight UTC of
    the day the memory already expires on means "unchanged": taking it as a change would move
    the expiry earlier on every save and stop an importance edit from recomputing it."""
    if new is None or current is None:
        return new is current
    if new == current:
        return True
    if new.tzinfo is None or current.tzinfo is None:
        return False
    new_utc = new.astimezone(timezone.utc)
    return new_utc.time() == time.min and new_utc.date() == current.astimezone(timezone.utc).date()


@staff_only
def expire_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> "MemoryRecord":
    owner = owner_in_scope(principal, engine, memory_id)
    return engine.expire(memory_id, actor=principal.actor, user_id=owner, note="expired by staff")


@staff_only
def restore_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> "MemoryRecord":
    owner = owner_in_scope(principal, engine, memory_id)
    return engine.restore(memory_id, actor=principal.actor, user_id=owner, note="restored by staff")


@staff_only
def delete_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> None:
    owner = owner_in_scope(principal, engine, memory_id)
    engine.delete(memory_id, actor=principal.actor, user_id=owner, note="deleted by staff")


@staff_only
def erase_user(principal: Principal, engine: "MemoryEngine", user_id: str, confirm: str) -> int:
    """Hard-delete everything of ``user_id`` (an erasure request). ``confirm`` must repeat the id."""
    require_user_in_scope(principal, user_id)
    if confirm != user_id:
        raise ValueError("type the user id exactly to confirm the erasure")
    return engine.delete_user(user_id, actor=principal.actor)


# ---- history and provenance -----------------------------------------------------------------------
@dataclass(frozen=True)
class FieldChange:
    field: str
    before: Any
    after: Any


def diff(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[FieldChange]:
    """Fields that differ between two history snapshots (created: all of after; deleted: all of before)."""
    before, after = before or {}, after or {}
    return [FieldChange(key, before.get(key), after.get(key))
            for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]


# History fields that name other memories by id: shown with those memories' texts.
LINKED_FIELDS = ("superseded_by", "merged_from")


@staff_only
def linked_memories(principal: Principal, engine: "MemoryEngine", memory_id: str,
                    entries: Sequence["HistoryEntry"]) -> dict[str, str]:
    """id -> text of the memories a memory's history names (what replaced it, what it was merged
    from), so the history reads as words rather than ids. Only memories of the same user: an id
    of anyone else's, or of one deleted since, is left out (shown as no longer stored)."""
    record = engine.get(memory_id, owner_in_scope(principal, engine, memory_id))
    ids: list[str] = []
    for entry in entries:
        for snap in (entry.before or {}, entry.after or {}):
            for name in LINKED_FIELDS:
                value = snap.get(name)
                ids.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and v)
    if not ids:
        return {}
    return {mid: r.content for mid, r in engine.get_many(list(dict.fromkeys(ids)), user_id=record.user_id).items()}


def change_text(field_name: str, value: Any, linked: dict[str, str]) -> str:
    """One side of a history change as staff read it: a memory id named with its text
    ("“I live in Munich” · e7658052"), a date as YYYY-MM-DD HH:MM, anything else as text."""
    if value is None:
        return ""
    if field_name in LINKED_FIELDS:
        ids = value if isinstance(value, list) else [value]
        return "; ".join(f"“{_short(linked[v])}” · {str(v)[:8]}" if v in linked else f"{str(v)[:8]} (no longer stored)"
                         for v in ids)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@staff_only
def history(principal: Principal, engine: "MemoryEngine", memory_id: str) -> list["HistoryEntry"]:
    owner = owner_in_scope(principal, engine, memory_id)
    entries = engine.history(memory_id)
    return entries if owner is None else [e for e in entries if e.user_id == owner]


@staff_only
def user_history(principal: Principal, engine: "MemoryEngine", user_id: str, limit: int = 200) -> list["HistoryEntry"]:
    require_user_in_scope(principal, user_id)
    return engine.user_history(user_id, limit=limit)


@staff_only
def provenance(principal: Principal, engine: "MemoryEngine", memory_id: str) -> list[dict[str, Any]]:
    """The chat messages a memory came from (its ``source`` ids)."""
    record = engine.get(memory_id, owner_in_scope(principal, engine, memory_id))
    messages = engine.messages(record.source)
    return [m for m in messages if m.get("user_id", record.user_id) == record.user_id]


# ---- maintenance ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MergePlan:
    available: bool
    proposals: list[Any]
    contents: dict[str, str]  # memory id -> content, to show what each proposal merges
    message: str = ""


@staff_only
def merge_preview(principal: Principal, engine: "MemoryEngine", user_id: str) -> MergePlan:
    """What a merge would do for ``user_id`` (nothing is changed)."""
    require_user_in_scope(principal, user_id)
    proposals = list(engine.plan_merges(user_id))
    ids = [mid for p in proposals for mid in getattr(p, "memory_ids", [])]
    records = engine.get_many(ids, user_id=user_id)
    contents = {mid: rec.content for mid, rec in records.items()}
    message = f"{len(proposals)} merge(s) proposed." if proposals else "Nothing to merge for this user."
    return MergePlan(True, proposals, contents, message)


@dataclass(frozen=True)
class MergeFailure:
    proposal: Any
    reason: str


@dataclass(frozen=True)
class MergeOutcome:
    applied: list[str]  # ids of the new merged memories
    failed: list[MergeFailure]


@staff_only
def merge_apply(principal: Principal, engine: "MemoryEngine", proposals: Sequence[Any]) -> MergeOutcome:
    """Apply previewed proposals one by one. Each is its own transaction, so one that went stale
    since the preview (a memory expired, edited or merged meanwhile) is reported and skipped
    instead of stopping half-way with the earlier ones applied and the rest never tried."""
    applied: list[str] = []
    failed: list[MergeFailure] = []
    for proposal in proposals:
        try:
            if demo_only(principal):
                require_user_in_scope(principal, getattr(proposal, "user_id", ""))
                for memory_id in getattr(proposal, "memory_ids", ()):
                    owner_in_scope(principal, engine, memory_id)
            applied.append(engine.apply_merge(proposal, actor=principal.actor))
        except Exception as exc:  # reported per proposal; the others still apply
            failed.append(MergeFailure(proposal, str(exc) or type(exc).__name__))
    return MergeOutcome(applied, failed)


@staff_only
def run_expiry(principal: Principal, engine: "MemoryEngine") -> sched.RunOutcome:
    """Expiry cleanup now, logged like a scheduled run."""
    refuse_demo(principal, "run the expiry job")
    return sched.run_job(engine, sched.JOB_EXPIRY, lambda: sched.expire_due(engine, actor=principal.actor),
                         actor=principal.actor)


@staff_only
def run_reconcile(principal: Principal, engine: "MemoryEngine") -> sched.RunOutcome:
    refuse_demo(principal, "run reconcile")
    return sched.run_job(engine, sched.JOB_RECONCILE, lambda: sched.reconcile(engine), actor=principal.actor)


@staff_only
def run_archive(principal: Principal, engine: "MemoryEngine") -> sched.RunOutcome:
    """The archive job now (as the README promises, on demand), logged like a scheduled run with
    the staff member as ``started_by``."""
    refuse_demo(principal, "run the archive job")
    return sched.run_job(engine, sched.JOB_ARCHIVE, lambda: sched.archive_due(engine), actor=principal.actor)


@staff_only
def scheduler_status(principal: Principal, engine: "MemoryEngine", limit: int = 30) -> dict[str, Any]:
    """The scheduled jobs with next run times, and the last runs with outcome and counts."""
    refuse_demo(principal, "see the scheduler's runs")
    current = sched.current_scheduler()
    jobs = current.jobs() if current is not None and current.running else []
    return {"running": bool(jobs), "jobs": jobs, "runs": engine.job_runs(limit=limit)}
