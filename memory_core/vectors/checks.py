"""Argument checks every vector-store adapter applies the same way (Milvus and the in-memory
stand-in): a query or stored vector, a result limit, text cut to the stored field's size.

Kept apart from ``milvus_calls`` so an adapter without Milvus does not import pymilvus to share
them, and so the two adapters cannot drift in what they refuse."""
from __future__ import annotations

import numpy as np

from memory_core.errors import ValidationError
from memory_core.vectors.filters import checked_int

MAX_LIMIT = 16_384  # Milvus topk ceiling


def checked_vector(vector: np.ndarray, dim: int, what: str) -> np.ndarray:
    """``vector`` as float32 of shape ``(dim,)``; refused when it holds NaN/infinity or only
    zeros (cosine similarity is undefined there)."""
    arr = np.asarray(vector, dtype=np.float32)
    if arr.shape != (dim,):
        raise ValidationError(f"{what} has shape {arr.shape}, expected ({dim},)")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{what} contains NaN or infinity")
    if not np.any(arr):
        raise ValidationError(f"{what} is all zeros (cosine similarity is undefined)")
    return arr


def checked_limit(limit: int) -> int:
    value = checked_int(limit, "limit")
    if not 1 <= value <= MAX_LIMIT:
        raise ValidationError(f"limit must be in 1..{MAX_LIMIT}")
    return value


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` of UTF-8, never inside a character."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", errors="ignore")
