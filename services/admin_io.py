"""Staff import and export of memories: JSON lines or CSV in, JSON lines out.

Import checks every row as the engine will (user id, text length, importance 1-5) and names
the file line of each bad one; it writes through the engine's batched write pipeline, so rows
are redacted, deduplicated and dated like any other write, with the staff member as the
actor. Export pages through one user's memories (all statuses). Text a spreadsheet would run
as a formula is quoted on export and unquoted on import (``services.safe_text``).

Every public function takes the signed-in principal first and is ``@staff_only``; demo staff
imports and exports demo users only.
"""
from __future__ import annotations

import codecs
import csv
import io
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from memory_core.config import Settings
from memory_core.errors import ValidationError
from memory_core.records import json_value
from memory_core.validation import check_user_id, clean_text
from services.access import demo_only, require_user_in_scope, staff_only
from services.auth import DEMO_PREFIX, Principal, is_demo_id
from services.safe_text import neutralise_json, restore_cell

if TYPE_CHECKING:
    from memory_core import MemoryEngine, MemoryRecord

IMPORT_FIELDS = ("user_id", "content", "at", "session_id", "importance")
MAX_IMPORT_ROWS = 100_000


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


@staff_only
def import_rows(principal: Principal, engine: "MemoryEngine", rows: Sequence[ImportRow],
                progress: Callable[[int, int], None] | None = None, batch_size: int = 64) -> ImportReport:
    """Write rows through the engine's batched write pipeline, reporting progress per batch.
    ``add_many`` refuses a whole batch for one bad item, so a failed batch is retried row by row:
    the good rows are written and each bad one is reported with its file line."""
    from memory_core import AddItem

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
            if problem is None and demo_only(principal) and not is_demo_id(row.user_id):
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


@staff_only
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
    """Every field of a memory, JSON-safe (the export's row), but its sealed PII: staff export
    the placeholders, never the ciphertext of the user's own numbers."""
    return {key: json_value(value) for key, value in record.__dict__.items() if key != "sealed"}
