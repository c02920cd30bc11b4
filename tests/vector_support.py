"""Records and vectors for the vector-store tests (``test_vector_store_contract.py`` runs them on
Milvus Lite and on the in-memory store; ``test_milvus_store.py`` on what only Milvus has)."""
from __future__ import annotations

import uuid

import numpy as np

from memory_core.vectors.base import VectorRecord

DIM = 16
RNG = np.random.default_rng(20241202)
HOSTILE_USER_IDS = [
    'a"b',
    "x' or 1==1",
    "\\",
    '" or user_id != "',
    "用户😀",
    "../../etc",
    '\\" or 1==1 or user_id == "\\',
]


def unit(dim: int = DIM) -> np.ndarray:
    v = RNG.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def rec(
    memory_id: str,
    user_id: str,
    vector: np.ndarray | None = None,
    text: str = "",
    *,
    importance: int = 3,
    created_at: int = 1_700_000_000,
    expires_at: int = 0,
    memory_type: str = "episodic",
    content_hash: str = "h",
) -> VectorRecord:
    return VectorRecord(
        memory_id=memory_id,
        user_id=user_id,
        vector=unit() if vector is None else vector,
        text=text or f"note {memory_id}",
        importance=importance,
        created_at=created_at,
        expires_at=expires_at,
        memory_type=memory_type,
        content_hash=content_hash,
    )


def uid() -> str:
    return uuid.uuid4().hex[:12]

