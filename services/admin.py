"""Staff operations on memories. Every function takes the signed-in principal and refuses
anyone who is not staff (``PermissionError``), whatever the page did: the page check is for
the person, this one is the rule. Every change goes through the engine with the staff
member's name as the actor, so it lands in the history table.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from memory_core import maintenance
from services import scheduler as sched
from services.auth import Principal

if TYPE_CHECKING:
    from memory_core import HistoryEntry, MemoryEngine, MemoryRecord, Page

IMPORT_FIELDS = ("user_id", "content", "at", "session_id", "importance")
MAX_IMPORT_ROWS = 100_000


def require_staff(principal: Principal | None) -> Principal:
    """The principal when it is staff; PermissionError otherwise (including nobody signed in)."""
    if principal is None or not isinstance(principal, Principal) or not principal.is_staff:
        raise PermissionError("support staff only")
    return principal


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


def browse(principal: Principal, engine: "MemoryEngine", filters: BrowseFilters) -> "Page":
    """One page of memories matching the filters (all bound parameters in SQL)."""
    from memory_core import MemoryQuery, MemoryStatus, MemoryType

    require_staff(principal)
    query = MemoryQuery(
        user_id=filters.user_id or None,
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


def users(principal: Principal, engine: "MemoryEngine") -> list[tuple[str, int]]:
    require_staff(principal)
    return engine.users()


def get_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> "MemoryRecord":
    require_staff(principal)
    return engine.get(memory_id)


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


def edit_memory(principal: Principal, engine: "MemoryEngine", memory_id: str, *, content: str | None = None,
                importance: int | None = None, memory_type: str | None = None,
                expires_at: datetime | None | Any = _KEEP, note: str = "") -> "MemoryRecord":
    """Edit fields of a memory; unchanged fields are left alone. Content edits are re-embedded."""
    require_staff(principal)
    before = engine.get(memory_id)
    kwargs: dict[str, Any] = {}
    if content is not None and content.strip() != before.content:
        kwargs["content"] = content
    if importance is not None and importance != before.importance:
        kwargs["importance"] = importance
    if memory_type is not None and memory_type != before.memory_type.value:
        kwargs["memory_type"] = memory_type
    if expires_at is not _KEEP and expires_at != before.expires_at:
        kwargs["expires_at"] = expires_at
    if not kwargs:
        return before
    return engine.update(memory_id, actor=principal.actor, note=note or "edited by staff", **kwargs)


def expire_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> "MemoryRecord":
    require_staff(principal)
    return engine.expire(memory_id, actor=principal.actor, note="expired by staff")


def restore_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> "MemoryRecord":
    require_staff(principal)
    return engine.restore(memory_id, actor=principal.actor, note="restored by staff")


def delete_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> None:
    require_staff(principal)
    engine.delete(memory_id, actor=principal.actor, note="deleted by staff")


def erase_user(principal: Principal, engine: "MemoryEngine", user_id: str, confirm: str) -> int:
    """Hard-delete everything of ``user_id`` (an erasure request). ``confirm`` must repeat the id."""
    require_staff(principal)
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


def history(principal: Principal, engine: "MemoryEngine", memory_id: str) -> list["HistoryEntry"]:
    require_staff(principal)
    return engine.history(memory_id)


def user_history(principal: Principal, engine: "MemoryEngine", user_id: str, limit: int = 200) -> list["HistoryEntry"]:
    require_staff(principal)
    return engine.user_history(user_id, limit=limit)


def provenance(principal: Principal, engine: "MemoryEngine", memory_id: str) -> list[dict[str, Any]]:
    """The chat messages a memory came from (its ``source`` ids)."""
    require_staff(principal)
    record = engine.get(memory_id)
    return engine.messages(record.source)


# ---- maintenance ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MergePlan:
    available: bool
    proposals: list[Any]
    contents: dict[str, str]  # memory id -> content, to show what each proposal merges
    message: str = ""


def merge_preview(principal: Principal, engine: "MemoryEngine", user_id: str) -> MergePlan:
    """What a merge would do for ``user_id`` (nothing is changed)."""
    require_staff(principal)
    proposals = list(maintenance.plan_merges(engine, user_id))
    ids = [mid for p in proposals for mid in getattr(p, "memory_ids", [])]
    records = engine.repo.get_many(ids)
    contents = {mid: rec.content for mid, rec in records.items()}
    message = f"{len(proposals)} merge(s) proposed." if proposals else "Nothing to merge for this user."
    return MergePlan(True, proposals, contents, message)


def merge_apply(principal: Principal, engine: "MemoryEngine", proposals: Sequence[Any]) -> int:
    """Apply previewed proposals; returns how many were applied."""
    require_staff(principal)
    applied = 0
    for proposal in proposals:
        maintenance.apply_merge(engine, proposal, actor=principal.actor)
        applied += 1
    return applied


def run_expiry(principal: Principal, engine: "MemoryEngine") -> sched.RunOutcome:
    """Expiry cleanup now, logged like a scheduled run."""
    require_staff(principal)
    return sched.run_job(engine, sched.JOB_EXPIRY, lambda: sched.expire_due(engine, actor=principal.actor))


def run_reconcile(principal: Principal, engine: "MemoryEngine") -> sched.RunOutcome:
    require_staff(principal)
    return sched.run_job(engine, sched.JOB_RECONCILE, lambda: sched.reconcile(engine))


def scheduler_status(principal: Principal, engine: "MemoryEngine", limit: int = 30) -> dict[str, Any]:
    """The scheduled jobs with next run times, and the last runs with outcome and counts."""
    require_staff(principal)
    current = sched.current_scheduler()
    jobs = current.jobs() if current is not None and current.running else []
    return {"running": bool(jobs), "jobs": jobs, "runs": engine.job_runs(limit=limit)}


# ---- import / export ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportRow:
    line: int
    user_id: str
    content: str
    at: datetime | None = None
    session_id: str | None = None
    importance: int | None = None


@dataclass(frozen=True)
class ImportReport:
    rows: int
    created: int
    deduplicated: int
    errors: list[str]


def _parse_at(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _row(line: int, data: dict[str, Any]) -> ImportRow:
    user_id = str(data.get("user_id") or "").strip()
    content = str(data.get("content") or "").strip()
    if not user_id or not content:
        raise ValueError("user_id and content are required")
    importance = data.get("importance")
    imp = int(importance) if importance not in (None, "") else None
    if imp is not None and not 1 <= imp <= 5:
        raise ValueError("importance must be 1-5")
    session = data.get("session_id")
    return ImportRow(line, user_id, content, _parse_at(data.get("at")), str(session) if session else None, imp)


def parse_import(data: bytes, filename: str) -> tuple[list[ImportRow], list[str]]:
    """Rows from JSON lines (``.jsonl``/``.json``) or CSV with a header; errors name the line."""
    text = data.decode("utf-8-sig")
    rows: list[ImportRow] = []
    errors: list[str] = []
    if filename.lower().endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text))
        missing = {"user_id", "content"} - set(reader.fieldnames or [])
        if missing:
            return [], [f"CSV header lacks {sorted(missing)}"]
        numbered: Iterable[tuple[int, Any]] = ((i + 2, r) for i, r in enumerate(reader))
    else:
        numbered = ((i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip())
    for line, raw in numbered:
        if len(rows) >= MAX_IMPORT_ROWS:
            errors.append(f"stopped at {MAX_IMPORT_ROWS:,} rows")
            break
        try:
            rows.append(_row(line, raw if isinstance(raw, dict) else json.loads(raw)))
        except (ValueError, TypeError, json.JSONDecodeError) as exc:
            errors.append(f"line {line}: {exc}")
    return rows, errors


def import_rows(principal: Principal, engine: "MemoryEngine", rows: Sequence[ImportRow],
                progress: Callable[[int, int], None] | None = None, batch_size: int = 64) -> ImportReport:
    """Write rows through the engine's batched write pipeline, reporting progress per batch."""
    from memory_core import AddItem

    require_staff(principal)
    created = deduplicated = 0
    errors: list[str] = []
    for start in range(0, len(rows), batch_size):
        batch = rows[start:start + batch_size]
        items = [AddItem(user_id=r.user_id, content=r.content, session_id=r.session_id, at=r.at,
                         metadata={"imported": True}) for r in batch]
        try:
            results = engine.add_many(items, actor=principal.actor)
        except Exception as exc:  # a bad batch is reported, the rest still imported
            errors.append(f"lines {batch[0].line}-{batch[-1].line}: {type(exc).__name__}: {exc}")
            results = []
        for row, result in zip(batch, results):
            created += len(result.created)
            deduplicated += len(result.deduplicated)
            if row.importance is not None:
                for memory_id in result.created:
                    engine.update(memory_id, actor=principal.actor, importance=row.importance,
                                  note="importance from import")
        if progress is not None:
            progress(min(start + batch_size, len(rows)), len(rows))
    return ImportReport(len(rows), created, deduplicated, errors)


def export_user_jsonl(principal: Principal, engine: "MemoryEngine", user_id: str) -> Iterator[str]:
    """Every memory of a user (all statuses) as JSON lines, page by page."""
    from memory_core import MemoryQuery

    require_staff(principal)
    offset = 0
    while True:
        page = engine.list_memories(MemoryQuery(user_id=user_id, sort_by="created_at", descending=False,
                                                offset=offset, limit=500))
        for record in page.items:
            yield json.dumps(record_to_json(record), ensure_ascii=False) + "\n"
        offset += len(page.items)
        if not page.items or offset >= page.total:
            break


def record_to_json(record: "MemoryRecord") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.__dict__.items():
        if isinstance(value, datetime):
            value = value.isoformat()
        elif hasattr(value, "value"):
            value = value.value
        out[key] = value
    return out
