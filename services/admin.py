"""Staff operations on memories. Every function takes the signed-in principal and refuses
anyone who is not staff (``PermissionError``), whatever the page did: the page check is for
the person, this one is the rule. Every change goes through the engine with the staff
member's name as the actor, so it lands in the history table.

Demo staff (a demo identity anyone may pick in demo mode) is held to the demo namespace here,
not only on the page: it sees and acts on demo users (``demo:...``) only, a memory of anyone
else reads as not found, and the jobs that touch every user are refused.
"""
from __future__ import annotations

import codecs
import csv
import io
import json
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from memory_core import maintenance
from memory_core.config import Settings
from memory_core.errors import NotFoundError, ValidationError
from memory_core.validation import check_user_id, clean_text
from services import scheduler as sched
from services.auth import DEMO_PREFIX, Principal, is_demo_id
from services.safe_text import neutralise_json, restore_cell

if TYPE_CHECKING:
    from memory_core import HistoryEntry, MemoryEngine, MemoryRecord, Page

IMPORT_FIELDS = ("user_id", "content", "at", "session_id", "importance")
MAX_IMPORT_ROWS = 100_000


def require_staff(principal: Principal | None) -> Principal:
    """The principal when it is staff; PermissionError otherwise (including nobody signed in)."""
    if principal is None or not isinstance(principal, Principal) or not principal.is_staff:
        raise PermissionError("support staff only")
    return principal


def _demo_only(principal: Principal) -> bool:
    return principal.via == "demo"


def require_user_in_scope(principal: Principal, user_id: str) -> str:
    """Staff may act on any user; demo staff on demo users only (PermissionError otherwise)."""
    require_staff(principal)
    if _demo_only(principal) and not (isinstance(user_id, str) and is_demo_id(user_id)):
        raise PermissionError(f"demo staff can only see and act on demo users ({DEMO_PREFIX}...)")
    return user_id


def _owner_in_scope(principal: Principal, engine: "MemoryEngine", memory_id: str) -> str | None:
    """For demo staff, the owner of ``memory_id`` when it is a demo user; a memory of anyone
    else reads as not found (its existence is not confirmed). None (no restriction) for staff."""
    require_staff(principal)
    if not _demo_only(principal):
        return None
    record = engine.get(memory_id)
    if not is_demo_id(record.user_id):
        raise NotFoundError(f"memory {memory_id!r} not found")
    return record.user_id


def _refuse_demo(principal: Principal, what: str) -> None:
    require_staff(principal)
    if _demo_only(principal):
        raise PermissionError(f"demo staff cannot {what}: it touches every user, not only demo users")


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
    if filters.user_id:
        require_user_in_scope(principal, filters.user_id)
    query = MemoryQuery(
        user_id=filters.user_id or None,
        user_id_prefix=DEMO_PREFIX if _demo_only(principal) else None,
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
    found = engine.users()
    return [(u, n) for u, n in found if is_demo_id(u)] if _demo_only(principal) else found


def get_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> "MemoryRecord":
    return engine.get(memory_id, _owner_in_scope(principal, engine, memory_id))


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
    owner = _owner_in_scope(principal, engine, memory_id)
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


def expire_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> "MemoryRecord":
    owner = _owner_in_scope(principal, engine, memory_id)
    return engine.expire(memory_id, actor=principal.actor, user_id=owner, note="expired by staff")


def restore_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> "MemoryRecord":
    owner = _owner_in_scope(principal, engine, memory_id)
    return engine.restore(memory_id, actor=principal.actor, user_id=owner, note="restored by staff")


def delete_memory(principal: Principal, engine: "MemoryEngine", memory_id: str) -> None:
    owner = _owner_in_scope(principal, engine, memory_id)
    engine.delete(memory_id, actor=principal.actor, user_id=owner, note="deleted by staff")


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


def history(principal: Principal, engine: "MemoryEngine", memory_id: str) -> list["HistoryEntry"]:
    owner = _owner_in_scope(principal, engine, memory_id)
    entries = engine.history(memory_id)
    return entries if owner is None else [e for e in entries if e.user_id == owner]


def user_history(principal: Principal, engine: "MemoryEngine", user_id: str, limit: int = 200) -> list["HistoryEntry"]:
    require_user_in_scope(principal, user_id)
    return engine.user_history(user_id, limit=limit)


def provenance(principal: Principal, engine: "MemoryEngine", memory_id: str) -> list[dict[str, Any]]:
    """The chat messages a memory came from (its ``source`` ids)."""
    record = engine.get(memory_id, _owner_in_scope(principal, engine, memory_id))
    messages = engine.messages(record.source)
    return [m for m in messages if m.get("user_id", record.user_id) == record.user_id]


# ---- maintenance ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MergePlan:
    available: bool
    proposals: list[Any]
    contents: dict[str, str]  # memory id -> content, to show what each proposal merges
    message: str = ""


def merge_preview(principal: Principal, engine: "MemoryEngine", user_id: str) -> MergePlan:
    """What a merge would do for ``user_id`` (nothing is changed)."""
    require_user_in_scope(principal, user_id)
    proposals = list(maintenance.plan_merges(engine, user_id))
    ids = [mid for p in proposals for mid in getattr(p, "memory_ids", [])]
    records = engine.repo.get_many(ids)
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


def merge_apply(principal: Principal, engine: "MemoryEngine", proposals: Sequence[Any]) -> MergeOutcome:
    """Apply previewed proposals one by one. Each is its own transaction, so one that went stale
    since the preview (a memory expired, edited or merged meanwhile) is reported and skipped
    instead of stopping half-way with the earlier ones applied and the rest never tried."""
    require_staff(principal)
    applied: list[str] = []
    failed: list[MergeFailure] = []
    for proposal in proposals:
        try:
            if _demo_only(principal):
                require_user_in_scope(principal, getattr(proposal, "user_id", ""))
                for memory_id in getattr(proposal, "memory_ids", ()):
                    _owner_in_scope(principal, engine, memory_id)
            applied.append(maintenance.apply_merge(engine, proposal, actor=principal.actor))
        except Exception as exc:  # reported per proposal; the others still apply
            failed.append(MergeFailure(proposal, str(exc) or type(exc).__name__))
    return MergeOutcome(applied, failed)


def run_expiry(principal: Principal, engine: "MemoryEngine") -> sched.RunOutcome:
    """Expiry cleanup now, logged like a scheduled run."""
    _refuse_demo(principal, "run the expiry job")
    return sched.run_job(engine, sched.JOB_EXPIRY, lambda: sched.expire_due(engine, actor=principal.actor),
                         actor=principal.actor)


def run_reconcile(principal: Principal, engine: "MemoryEngine") -> sched.RunOutcome:
    _refuse_demo(principal, "run reconcile")
    return sched.run_job(engine, sched.JOB_RECONCILE, lambda: sched.reconcile(engine), actor=principal.actor)


def run_archive(principal: Principal, engine: "MemoryEngine") -> sched.RunOutcome:
    """The archive job now (as the README promises, on demand), logged like a scheduled run with
    the staff member as ``started_by``."""
    _refuse_demo(principal, "run the archive job")
    return sched.run_job(engine, sched.JOB_ARCHIVE, lambda: sched.archive_due(engine), actor=principal.actor)


def scheduler_status(principal: Principal, engine: "MemoryEngine", limit: int = 30) -> dict[str, Any]:
    """The scheduled jobs with next run times, and the last runs with outcome and counts."""
    _refuse_demo(principal, "see the scheduler's runs")
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
    rows: int  # rows written (created or merged into an existing memory)
    created: int
    deduplicated: int
    errors: list[str]
    failed: int = 0  # rows not written (rows parse_import refused are in its own errors)


def _default_max_chars() -> int:
    return int(Settings.model_fields["max_input_chars"].default)


def _parse_at(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _importance(value: Any) -> int | None:
    """1-5, from a JSON number or a CSV string; 2.7 is refused, not silently cut to 2."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ValidationError(f"importance must be an integer from 1 to 5, got {value!r}")
    number: Any = value
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise ValidationError(f"importance must be an integer from 1 to 5, got {value!r}") from None
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if not isinstance(number, int) or not 1 <= number <= 5:
        raise ValidationError(f"importance must be an integer from 1 to 5, got {value!r}")
    return number


def _row(line: int, data: Any, max_chars: int) -> ImportRow:
    """One row, checked as the engine will check it, so a bad row is refused with its line
    number here instead of making the engine refuse the whole batch it is written in."""
    if not isinstance(data, dict):
        raise ValidationError(f"expected a JSON object, got {type(data).__name__}")
    # Our own export quotes formula-looking text (services.safe_text): undo exactly that.
    data = {key: restore_cell(value) for key, value in data.items()}
    raw_user = data.get("user_id")
    if raw_user is None or (isinstance(raw_user, int) and not isinstance(raw_user, bool)):
        raw_user = "" if raw_user is None else str(raw_user)  # missing reads "is empty"; 7 is "7"
    user_id = check_user_id(raw_user.strip() if isinstance(raw_user, str) else raw_user)
    raw_content = data.get("content")
    content = clean_text("" if raw_content is None else raw_content, max_chars)
    imp = _importance(data.get("importance"))
    session = data.get("session_id")
    return ImportRow(line, user_id, content, _parse_at(data.get("at")), str(session) if session else None, imp)


def _csv_records(text: str) -> Iterator[tuple[int, Any]]:
    """(first file line, row or csv.Error) per CSV record; the header is checked now."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        fields = reader.fieldnames or []
    except csv.Error as exc:
        raise ValidationError(f"unreadable CSV header: {exc}") from None
    missing = {"user_id", "content"} - set(fields)
    if missing:
        raise ValidationError(f"CSV header lacks {sorted(missing)}")
    return _csv_rows(reader)


def _csv_rows(reader: "csv.DictReader[str]") -> Iterator[tuple[int, Any]]:
    """A record's line is its first (a quoted field may span lines)."""
    while True:
        first = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # e.g. a field over csv's size limit; the reader goes on after it
            yield first, exc
            continue
        yield first, record


def _jsonl_records(text: str) -> Iterator[tuple[int, Any]]:
    """(line, JSON text) per non-blank line. Split on "\n" only: str.splitlines() also breaks
    on U+2028, U+2029 and U+0085, which JSON allows unescaped in strings and our own export
    (ensure_ascii=False) writes as they are."""
    for index, line in enumerate(text.split("\n")):
        line = line.removesuffix("\r")
        if line.strip():
            yield index + 1, line


def parse_import(data: bytes, filename: str, max_chars: int | None = None) -> tuple[list[ImportRow], list[str]]:
    """Rows from JSON lines (``.jsonl``/``.json``) or CSV with a header; each bad row is an error
    naming its file line. ``max_chars`` is the engine's ``max_input_chars``. Raises
    ``ValidationError`` for a file that is not UTF-8 text."""
    limit = max_chars if max_chars is not None else _default_max_chars()
    body = data.removeprefix(codecs.BOM_UTF8)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise ValidationError(f"the file must be UTF-8 text (line {line:,} is not); save it as UTF-8 "
                              "(in Excel: \"CSV UTF-8\") and import it again") from None
    rows: list[ImportRow] = []
    errors: list[str] = []
    if filename.lower().endswith(".csv"):
        try:
            numbered: Iterator[tuple[int, Any]] = _csv_records(text)
        except ValidationError as exc:
            return [], [str(exc)]
    else:
        numbered = _jsonl_records(text)
    for line, raw in numbered:
        if len(rows) >= MAX_IMPORT_ROWS:
            errors.append(f"stopped at {MAX_IMPORT_ROWS:,} rows")
            break
        try:
            if isinstance(raw, csv.Error):
                raise ValidationError(f"unreadable CSV: {raw}")
            rows.append(_row(line, json.loads(raw) if isinstance(raw, str) else raw, limit))
        except (ValueError, TypeError) as exc:  # ValidationError and JSONDecodeError are ValueErrors
            errors.append(f"line {line}: {exc}")
    return rows, errors


def _row_problem(row: ImportRow, max_chars: int) -> str | None:
    """Why the engine would refuse this row, or None (rows may be built without parse_import):
    the same checks ``_row`` applies to a parsed line."""
    try:
        _row(row.line, {"user_id": row.user_id, "content": row.content, "importance": row.importance}, max_chars)
    except ValidationError as exc:
        return str(exc)
    return None


def import_rows(principal: Principal, engine: "MemoryEngine", rows: Sequence[ImportRow],
                progress: Callable[[int, int], None] | None = None, batch_size: int = 64) -> ImportReport:
    """Write rows through the engine's batched write pipeline, reporting progress per batch.
    ``add_many`` refuses a whole batch for one bad item, so a failed batch is retried row by row:
    the good rows are written and each bad one is reported with its file line."""
    from memory_core import AddItem

    require_staff(principal)
    written = created = deduplicated = failed = 0
    errors: list[str] = []

    def item(row: ImportRow) -> Any:
        return AddItem(user_id=row.user_id, content=row.content, session_id=row.session_id, at=row.at,
                       metadata={"imported": True})

    def record(row: ImportRow, result: Any) -> None:
        nonlocal written, created, deduplicated
        written += 1
        created += len(result.created)
        deduplicated += len(result.deduplicated)
        if row.importance is None:
            return
        for memory_id in result.created:
            try:
                engine.update(memory_id, actor=principal.actor, importance=row.importance,
                              note="importance from import")
            except Exception as exc:  # stored; only its importance is missing
                errors.append(f"line {row.line}: stored, but importance not set: {exc}")

    for start in range(0, len(rows), batch_size):
        batch: list[ImportRow] = []
        for row in rows[start:start + batch_size]:
            problem = _row_problem(row, engine.settings.max_input_chars)
            if problem is None and _demo_only(principal) and not is_demo_id(row.user_id):
                problem = f"demo staff can import for demo users ({DEMO_PREFIX}...) only"
            if problem is None:
                batch.append(row)
            else:
                failed += 1
                errors.append(f"line {row.line}: {problem}")
        try:
            results = engine.add_many([item(r) for r in batch], actor=principal.actor) if batch else []
        except Exception:  # one bad item refuses its batch: find it, write the rest
            results = None
        if results is not None:
            for row, result in zip(batch, results):
                record(row, result)
        else:
            for row in batch:
                try:
                    single = engine.add_many([item(row)], actor=principal.actor)[0]
                except Exception as exc:
                    failed += 1
                    errors.append(f"line {row.line}: {type(exc).__name__}: {exc}")
                else:
                    record(row, single)
        if progress is not None:
            progress(min(start + batch_size, len(rows)), len(rows))
    return ImportReport(written, created, deduplicated, errors, failed)


def export_user_jsonl(principal: Principal, engine: "MemoryEngine", user_id: str) -> Iterator[str]:
    """Every memory of one user (all statuses) as JSON lines, page by page. The user id is
    checked first: an empty one would mean "no filter" to the engine and export everyone.
    Text that a spreadsheet would run as a formula starts with an apostrophe."""
    require_user_in_scope(principal, check_user_id(user_id))
    return _export_pages(engine, user_id)


def _export_pages(engine: "MemoryEngine", user_id: str) -> Iterator[str]:
    from memory_core import MemoryQuery

    offset = 0
    while True:
        page = engine.list_memories(MemoryQuery(user_id=user_id, sort_by="created_at", descending=False,
                                                offset=offset, limit=500))
        for record in page.items:
            # Formula-looking text gets a leading apostrophe (a spreadsheet opening a conversion
            # of this file must not run it); import_rows takes exactly that apostrophe off again.
            yield json.dumps(neutralise_json(record_to_json(record)), ensure_ascii=False) + "\n"
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
