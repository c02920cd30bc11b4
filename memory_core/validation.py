"""Input checks shared by every entry point: clear errors before anything is stored."""
from __future__ import annotations

import re
import unicodedata

from memory_core.errors import ValidationError

# C0/C1 control characters except tab and newline; PostgreSQL refuses NUL in text outright.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_ID_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")

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
    cleaned = cleaned.encode("utf-8", "ignore").decode("utf-8").strip()
    if not cleaned:
        raise ValidationError(f"{what} is empty")
    return cleaned


def check_id(value: object, what: str, max_len: int) -> str:
    """Ids may hold quotes, backslashes and any Unicode; not control characters, not blank."""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(f"{what} is empty")
    if len(value) > max_len:
        raise ValidationError(f"{what} is too long ({len(value)} characters, the limit is {max_len})")
    if _ID_FORBIDDEN.search(value):
        raise ValidationError(f"{what} contains control characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{what} is not valid Unicode text") from exc
    return value


def check_user_id(value: object) -> str:
    return check_id(value, "user_id", MAX_USER_ID)


def check_memory_id(value: object) -> str:
    return check_id(value, "memory_id", MAX_MEMORY_ID)


def check_importance(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ValidationError(f"importance must be an integer from 1 to 5, got {value!r}")
    return value
