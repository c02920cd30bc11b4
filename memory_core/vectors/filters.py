"""The only place Milvus filter expressions are built.

Why this module exists: Milvus Lite 2.5.1 does not support ``filter_params`` templates, so
every filter is a string, and a naively formatted one is injectable (measured: a crafted
user id returned every user's rows). Every literal that reaches a filter therefore passes
through this module: strings are validated (no NUL / control characters, bounded length,
valid UTF-8) and written as double-quoted literals with ``\\`` and ``"`` escaped; integers
must be real ints in the int64 range; memory types must be ``MemoryType`` values.
Nothing else in the code base may format a filter string.
"""
from __future__ import annotations

import numbers
from typing import Iterable

from memory_core.errors import ValidationError
from memory_core.validation import MAX_MEMORY_ID, MAX_USER_ID, check_memory_id, check_user_id
from memory_core.types import MemoryType
from memory_core.vectors.base import VectorFilter

# Limits in characters. Milvus sizes VARCHAR in bytes: the user_id column is 4x this limit so
# any valid id fits whatever its script (an emoji is 4 UTF-8 bytes); memory ids are ASCII.
MAX_USER_ID_CHARS = MAX_USER_ID
MAX_MEMORY_ID_CHARS = MAX_MEMORY_ID
MAX_IDS_PER_FILTER = 16_384  # keeps one expression bounded; callers batch above this

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_MEMORY_TYPES = frozenset(member.value for member in MemoryType)


def validate_id(value: str, what: str) -> str:
    """Return ``value`` unchanged if it is a safe id, else raise ``ValidationError``.

    ``what`` names the id in error messages and picks the rule: a name containing "memory" is
    a memory id, anything else a user id. The rules live in ``memory_core.validation`` so the
    engine refuses at the door exactly what this store would refuse later (a mismatch would
    leave rows that SQL accepts and Milvus never indexes).
    """
    if "memory" in what.lower():
        return check_memory_id(value, what)
    return check_user_id(value, what)


def quote_string(value: str) -> str:
    """A Milvus double-quoted string literal for an already validated string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def checked_int(value: object, what: str) -> int:
    """``value`` as a plain int, if it is an integer (numpy ints included) in the int64 range.

    bool is rejected although it subclasses int: ``True`` as a timestamp is a bug, not a value.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValidationError(f"{what} must be an integer, got {type(value).__name__}")
    result = int(value)
    if not _INT64_MIN <= result <= _INT64_MAX:
        raise ValidationError(f"{what} is out of the int64 range")
    return result


def checked_memory_type(value: object) -> str:
    """The string value of a ``MemoryType`` (member or its value), else ``ValidationError``."""
    raw = value.value if isinstance(value, MemoryType) else value
    if not isinstance(raw, str) or raw not in _MEMORY_TYPES:
        raise ValidationError(f"unknown memory type {value!r}; expected one of {sorted(_MEMORY_TYPES)}")
    return raw


def _id_list(values: Iterable[str], what: str) -> str:
    if isinstance(values, str):  # a bare string would iterate as single-character ids
        raise ValidationError(f"{what}s must be a sequence of ids, not one string")
    items = [quote_string(validate_id(v, what)) for v in values]
    if len(items) > MAX_IDS_PER_FILTER:
        raise ValidationError(f"too many {what}s in one filter ({len(items)} > {MAX_IDS_PER_FILTER})")
    return "[" + ", ".join(items) + "]"


def user_filter(user_id: str) -> str:
    """``user_id == "<escaped>"``: every row of one user (delete_user, user_hashes)."""
    return f"user_id == {quote_string(validate_id(user_id, 'user_id'))}"


def ids_filter(memory_ids: Iterable[str]) -> str:
    """``memory_id in [...]`` with every id validated and escaped (delete by id)."""
    return f"memory_id in {_id_list(memory_ids, 'memory_id')}"


def owned_ids_filter(memory_ids: Iterable[str], user_id: str) -> str:
    """``user_id == "<escaped>" and memory_id in [...]``: delete by id within one user's rows."""
    return f"{user_filter(user_id)} and {ids_filter(memory_ids)}"


def build_filter(flt: VectorFilter) -> str:
    """Turn a structured ``VectorFilter`` into a Milvus boolean expression.

    The user clause always comes first and is always present: a search can never cross
    users. Expiry keeps rows with ``expires_at == 0`` (never) or ``expires_at > now``, or, with
    ``fade_from``, ``importance >= fade_from`` (faded memories).
    ``created_from`` is inclusive and ``created_to`` exclusive, matching ``TimeRange``;
    ``or_memory_ids`` are admitted outside those two clauses only (all others still apply).
    """
    if not isinstance(flt, VectorFilter):
        raise ValidationError("filter must be a VectorFilter")
    clauses = [user_filter(flt.user_id)]
    if flt.now is not None:
        now = checked_int(flt.now, "now")
        fading = f" or importance >= {checked_int(flt.fade_from, 'fade_from')}" if flt.fade_from else ""
        clauses.append(f"(expires_at == 0 or expires_at > {now}{fading})")
    if isinstance(flt.memory_types, str):
        raise ValidationError("memory_types must be a sequence of types, not one string")
    if flt.memory_types:
        types = sorted({checked_memory_type(t) for t in flt.memory_types})
        clauses.append("memory_type in [" + ", ".join(quote_string(t) for t in types) + "]")
    if flt.min_importance is not None:
        clauses.append(f"importance >= {checked_int(flt.min_importance, 'min_importance')}")
    created: list[str] = []
    if flt.created_from is not None:
        created.append(f"created_at >= {checked_int(flt.created_from, 'created_from')}")
    if flt.created_to is not None:
        created.append(f"created_at < {checked_int(flt.created_to, 'created_to')}")
    told = _id_list(flt.or_memory_ids, "memory_id") if flt.or_memory_ids else ""  # validated either way
    if created and told:
        clauses.append(f"(({' and '.join(created)}) or memory_id in {told})")
    else:
        clauses.extend(created)
    if flt.memory_ids:
        clauses.append(f"memory_id in {_id_list(flt.memory_ids, 'memory_id')}")
    return " and ".join(clauses)
