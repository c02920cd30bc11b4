"""Input checks shared by every entry point: clear errors before anything is stored.

Each check names the argument and what it must be, so a caller's mistake (a date given as a
string, a filter as a bare word, a NUL in a session id) is a ``ValidationError`` at the facade,
not a driver error, an ``AttributeError`` deep inside, or a vector-store "outage".
"""
from __future__ import annotations

import json
import operator
import re
import unicodedata
from dataclasses import replace
from datetime import date, datetime, timezone
from typing import Any

from memory_core.errors import ValidationError

# C0/C1 control characters except tab and newline; PostgreSQL refuses NUL in text outright.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_MEMORY_ID = re.compile(r"[A-Za-z0-9._:-]+")

MAX_USER_ID = 256
MAX_MEMORY_ID = 64


def clean_text(text: object, max_chars: int, what: str = "content") -> str:
    """NFC-normalised text with control characters removed; rejects empty and oversized input."""
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be text, got {type(text).__name__}")
    if len(text) > max_chars:
        raise ValidationError(f"{what} is too long: {len(text):,} characters (the limit is {max_chars:,})")
    cleaned = _CONTROL.sub("", unicodedata.normalize("NFC", text)).replace("\r\n", "\n").replace("\r", "\n")
    # Lone surrogates cannot be stored or encoded; drop them rather than fail later half-way.
    cleaned = cleaned.encode("utf-8", "ignore").decode("utf-8").strip().lstrip("\ufeff").strip()
    if not cleaned:
        raise ValidationError(f"{what} is empty")
    if all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in cleaned):
        # Zero-width spaces, joiners, BOMs and direction marks alone say nothing (kept inside
        # text: emoji sequences and Persian need them).
        raise ValidationError(f"{what} is empty: it has no visible character")
    return cleaned


MAX_TOP_K = 100


def check_top_k(value: object) -> int:
    """How many results a search returns: an integer in 1..100 (not a bool, float or None)."""
    try:
        k = operator.index(value) if not isinstance(value, bool) else None  # numpy integers pass
    except TypeError:
        k = None
    if k is None or not 1 <= k <= MAX_TOP_K:
        raise ValidationError(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {value!r}")
    return k


def check_min_relevance(value: object) -> float:
    """A relevance threshold: a real number from 0 to 1 (0 keeps every result)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValidationError(f"min_relevance must be a number from 0 to 1, got {value!r}")
    return float(value)


def check_user_id(value: object, what: str = "user_id", *, new: bool = False) -> str:
    """User ids may hold quotes, backslashes, spaces and any printable Unicode (they are
    escaped wherever they go); not control characters (Cc: NUL, tab, newline, DEL, C1), lone
    surrogates, blank or over-long values, which cannot be stored or quoted faithfully.

    Every id is NFKC-normalised ("ａｌｉｃｅ" is "alice"; ordinary ids are left as they are, so
    stored ones still match). Ids that writes create (``new=True``) must also be tellable apart
    by eye: no invisible characters (zero-width space, joiners, direction marks), no spaces at
    either end, and no Latin, Cyrillic and Greek letters mixed in one id ("аlice" with a
    Cyrillic "а" is not a second "alice"). Reads accept any storable id, so data stored under
    such an id before these rules can still be found and erased."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    value = unicodedata.normalize("NFKC", value)
    if new:
        _check_visible_id(value, what)
    if not value.strip():
        raise ValidationError(f"{what} is empty")
    if len(value) > MAX_USER_ID:
        raise ValidationError(f"{what} is too long ({len(value)} characters, the limit is {MAX_USER_ID})")
    for ch in value:
        category = unicodedata.category(ch)
        if category == "Cc":
            raise ValidationError(f"{what} contains a control character (U+{ord(ch):04X})")
        if category == "Cs":
            raise ValidationError(f"{what} contains an invalid character (U+{ord(ch):04X})")
    return value


# Characters that show nothing (format, private-use, unassigned, line/paragraph separators) and
# spaces other than U+0020 (NFKC has already turned most of those into U+0020).
_INVISIBLE = {"Cf", "Co", "Cn", "Zl", "Zp", "Zs", "Mn", "Me"}
_LOOKALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


def _check_visible_id(value: str, what: str) -> None:
    if value != value.strip():
        raise ValidationError(f"{what} must not start or end with a space")
    scripts: set[str] = set()
    previous = ""
    for ch in value:
        category = unicodedata.category(ch)
        if ch != " " and category in _INVISIBLE and not (category in ("Mn", "Me") and previous.strip()):
            # a combining mark is visible on the letter it follows ("é"), not on its own
            raise ValidationError(f"{what} contains an invisible or look-alike character (U+{ord(ch):04X}), "
                                  "which would make it look like another id")
        if category.startswith("L"):
            script = unicodedata.name(ch, "").split(" ", 1)[0]
            if script in _LOOKALIKE_SCRIPTS:
                scripts.add(script)
        previous = ch
    if len(scripts) > 1:
        raise ValidationError(f"{what} mixes {' and '.join(sorted(s.title() for s in scripts))} letters, "
                              "which would let it pass for another id")


def check_memory_id(value: object, what: str = "memory_id") -> str:
    """Memory (and message) ids are generated by the engine: ``[A-Za-z0-9._:-]``, at most 64.
    Why so strict: Milvus Lite 2.5.1 puts string primary keys unescaped into its own SQLite
    statements, so a quote in a key breaks its writes and a balanced one injects SQL."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise ValidationError(f"{what} is empty")
    if len(value) > MAX_MEMORY_ID:
        raise ValidationError(f"{what} is too long ({len(value)} characters, the limit is {MAX_MEMORY_ID})")
    if not _MEMORY_ID.fullmatch(value):
        raise ValidationError(f"{what} may only contain letters, digits, '.', '_', ':' and '-'")
    return value


def check_importance(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ValidationError(f"importance must be an integer from 1 to 5, got {value!r}")
    return value


# ---- the facade's other arguments ------------------------------------------------------------
MAX_SESSION_ID = 256
# Dates the engine stores and computes with: wide enough for any real conversation, far enough
# from datetime's limits (year 1 and 9999) that adding a day or a lifetime cannot overflow.
MIN_AT = datetime(1970, 1, 1, tzinfo=timezone.utc)
MAX_AT = datetime(3000, 1, 1, tzinfo=timezone.utc)
MESSAGE_ROLES = ("user", "assistant")
MAX_LIMIT = 100_000


def check_session_id(value: object, what: str = "session_id") -> str | None:
    """None, or text of at most 256 characters without control characters (a NUL is refused by
    PostgreSQL with a raw driver error, and the id is shown back to people)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string or None, got {type(value).__name__}")
    if len(value) > MAX_SESSION_ID:
        raise ValidationError(f"{what} is too long ({len(value)} characters, the limit is {MAX_SESSION_ID})")
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cs"):
            raise ValidationError(f"{what} contains a control or invalid character (U+{ord(ch):04X})")
    return value


def check_datetime(value: object, what: str = "at", *, optional: bool = True) -> datetime | None:
    """A ``datetime`` (naive is read as UTC) between 1970 and 2999, returned in aware UTC.
    A string, a bare date or a number is refused with its type named."""
    if value is None and optional:
        return None
    if not isinstance(value, datetime):
        hint = " (parse it first, e.g. datetime.fromisoformat)" if isinstance(value, str) else ""
        kind = "a date without a time" if isinstance(value, date) else type(value).__name__
        raise ValidationError(f"{what} must be a datetime, got {kind}{hint}")
    try:
        aware = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    except (OverflowError, ValueError) as exc:
        raise ValidationError(f"{what} is out of range: {value!r}") from exc
    if not MIN_AT <= aware < MAX_AT:
        raise ValidationError(f"{what} must be between {MIN_AT.year} and {MAX_AT.year - 1}, got {aware.isoformat()}")
    return aware


def check_role(value: object) -> str:
    """Stored messages are what a person or the assistant said; nothing else (a "system" row
    would later read as an instruction)."""
    if value not in MESSAGE_ROLES:
        raise ValidationError(f"role must be one of {MESSAGE_ROLES}, got {value!r}")
    return str(value)


def check_metadata(value: object, max_bytes: int, what: str = "metadata") -> dict[str, Any] | None:
    """None or a JSON-serialisable dict with string keys, at most ``max_bytes`` as UTF-8 JSON."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValidationError(f"{what} must be a dict, got {type(value).__name__}")
    if any(not isinstance(key, str) for key in value):
        raise ValidationError(f"{what} keys must be strings")
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what} must be JSON-serialisable: {exc}") from None
    if size > max_bytes:
        raise ValidationError(f"{what} is too large: {size:,} bytes as JSON (the limit is {max_bytes:,})")
    return value


def check_importance_bound(value: object, what: str = "min_importance") -> int | None:
    """None or an integer from 1 to 5 (not "3", not True, not 2**70)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ValidationError(f"{what} must be an integer from 1 to 5 or None, got {value!r}")
    return value


def check_limit(value: object, what: str = "limit", minimum: int = 1, maximum: int = MAX_LIMIT) -> int:
    try:
        number = operator.index(value) if not isinstance(value, bool) else None
    except TypeError:
        number = None
    if number is None or not minimum <= number <= maximum:
        raise ValidationError(f"{what} must be an integer from {minimum} to {maximum:,}, got {value!r}")
    return number


def _enum_tuple(values: object, enum: Any, what: str) -> tuple[Any, ...]:
    """A tuple of ``enum`` members from members or their values; a bare string is refused (it
    would be read letter by letter)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (tuple, list, set, frozenset)):
        raise ValidationError(f"{what} must be a tuple of {enum.__name__} values, got {type(values).__name__} "
                              f"{values!r}" + (f" (write ({values!r},))" if isinstance(values, str) else ""))
    out = []
    for item in values:
        try:
            out.append(enum(item))
        except ValueError:
            raise ValidationError(f"{what}: unknown {enum.__name__} {item!r}; use one of "
                                  f"{[m.value for m in enum]}") from None
    return tuple(out)


def check_search_filters(filters: object) -> Any:
    """A ``SearchFilters`` whose fields have the types retrieval relies on (types converted from
    their names; an importance bound that is not 1-5 refused rather than mistaken for a vector-store
    failure further down)."""
    from memory_core.records import SearchFilters
    from memory_core.types import MemoryType, TimeRange

    if filters is None:
        return SearchFilters()
    if not isinstance(filters, SearchFilters):
        raise ValidationError(f"filters must be a SearchFilters, got {type(filters).__name__}")
    if filters.time_range is not None and not isinstance(filters.time_range, TimeRange):
        raise ValidationError(f"filters.time_range must be a TimeRange, got {type(filters.time_range).__name__}")
    if filters.time_range is not None:
        for bound in (filters.time_range.start, filters.time_range.end):
            check_datetime(bound, "time_range bounds")
    entities = filters.entities
    if isinstance(entities, str) or not isinstance(entities, (tuple, list)) or \
            not all(isinstance(e, str) for e in entities):
        raise ValidationError(f"filters.entities must be a tuple of strings, got {entities!r}")
    return replace(filters, memory_types=_enum_tuple(filters.memory_types, MemoryType, "filters.memory_types"),
                   min_importance=check_importance_bound(filters.min_importance, "filters.min_importance"),
                   entities=tuple(entities))



def check_filter_time_range(filters: Any) -> Any:
    """``filters`` (a ``SearchFilters``) with its explicit time range in aware UTC (a naive
    datetime is read as UTC, like everywhere in the engine; comparing it with the query's own
    aware window raised TypeError), start before end."""
    from memory_core.clock import as_utc
    from memory_core.types import TimeRange

    tr = filters.time_range
    if tr is None:
        return filters
    for bound in (tr.start, tr.end):
        if bound is not None and not isinstance(bound, datetime):
            raise ValidationError(f"time_range bounds must be datetimes, got {type(bound).__name__}")
    start = as_utc(tr.start) if tr.start is not None else None
    end = as_utc(tr.end) if tr.end is not None else None
    if start is not None and end is not None and start >= end:
        raise ValidationError(f"time_range must start before it ends: {start.isoformat()} >= {end.isoformat()}")
    return replace(filters, time_range=TimeRange(start=start, end=end, label=tr.label))

def check_memory_query(query: object) -> Any:
    """A ``MemoryQuery`` with checked ids, enums, bounds and paging."""
    from memory_core.records import MemoryQuery
    from memory_core.types import MemoryStatus, MemoryType

    if not isinstance(query, MemoryQuery):
        raise ValidationError(f"query must be a MemoryQuery, got {type(query).__name__}")
    if query.text is not None and not isinstance(query.text, str):
        raise ValidationError(f"query.text must be a string or None, got {type(query.text).__name__}")
    if query.user_id_prefix is not None and not isinstance(query.user_id_prefix, str):
        raise ValidationError("query.user_id_prefix must be a string or None")
    return replace(
        query,
        user_id=check_user_id(query.user_id) if query.user_id else query.user_id,
        memory_types=_enum_tuple(query.memory_types, MemoryType, "query.memory_types"),
        statuses=_enum_tuple(query.statuses, MemoryStatus, "query.statuses"),
        min_importance=check_importance_bound(query.min_importance, "query.min_importance"),
        max_importance=check_importance_bound(query.max_importance, "query.max_importance"),
        created_from=check_datetime(query.created_from, "query.created_from"),
        created_to=check_datetime(query.created_to, "query.created_to"),
        offset=check_limit(query.offset, "query.offset", minimum=0, maximum=10**9),
        limit=check_limit(query.limit, "query.limit", maximum=1000),
    )


def check_add_items(items: object, max_metadata_bytes: int) -> list[Any]:
    """The write facade's argument checks, for every item before any is written: each is an
    ``AddItem`` (or a dict of its fields), its user id one a person can tell apart
    (``check_user_id(new=True)``), and its session id, date and metadata what they must be.
    Content is checked by the write pipeline."""
    from collections.abc import Sequence

    from memory_core.records import AddItem

    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Sequence):
        raise ValidationError(f"items must be a list of AddItem, got {type(items).__name__}")
    out = []
    for index, item in enumerate(items):
        try:
            if isinstance(item, dict):
                try:
                    item = AddItem(**item)
                except TypeError as exc:  # an unknown or missing field
                    raise ValidationError(str(exc)) from None
            if not isinstance(item, AddItem):
                raise ValidationError(f"must be an AddItem or a dict, got {type(item).__name__}")
            out.append(replace(item, user_id=check_user_id(item.user_id, new=True),
                               session_id=check_session_id(item.session_id),
                               at=check_datetime(item.at, "at"),
                               metadata=check_metadata(item.metadata, max_metadata_bytes)))
        except ValidationError as exc:
            raise ValidationError(f"item {index}: {exc}" if len(items) > 1 else str(exc)) from None
    return out
