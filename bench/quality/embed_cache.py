"""A disk cache of embeddings keyed by (model, kind, text hash), injected via ``open_memory(embedder=)``.

The benchmark writes ~6,000 LoCoMo turns and asks ~2,000 questions per run; on a shared 2-core
machine embedding them costs minutes, so vectors are kept in one SQLite file between runs. The
wrapper is transparent: same name, dimension, token limit and token counting as the model.

Each text missing from the cache is embedded alone. The int8 encoder quantises a batch's
activations with one scale, so a text's vector depends a little on the texts embedded with it
(cosine ~.995); batched, the cached vectors depended on which runs had filled the cache before,
and the same code on a new checkout read MADial zh recall@5 .569 where an older cache read .595
(validate half). Alone, every vector is the one a single write or query would get, whatever ran
before: the figures of record no longer depend on the cache's history.
"""
from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from memory_core.embedding.base import Embedder


class CachingEmbedder(Embedder):
    """Wraps an Embedder; vectors of texts seen before come from ``path`` instead of the model."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_tokens = inner.max_tokens
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _key(self, kind: str, text: str) -> str:
        return hashlib.sha256(f"{self.name}\x00{kind}\x00{text}".encode("utf-8")).hexdigest()

    def _embed(self, kind: str, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(kind, t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: list[int] = []
        with self._lock:
            for i, key in enumerate(keys):
                row = self._db.execute("SELECT vec FROM emb WHERE key = ?", (key,)).fetchone()
                if row is None:
                    missing.append(i)
                else:
                    out[i] = np.frombuffer(row[0], dtype=np.float32)
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            embed = self.inner.embed_passages if kind == "passage" else self.inner.embed_queries
            fresh = [embed([texts[i]])[0] for i in missing]  # alone: see the module docstring
            with self._lock:
                for i, vec in zip(missing, fresh):
                    out[i] = vec
                    self._db.execute("INSERT OR REPLACE INTO emb (key, vec) VALUES (?, ?)",
                                     (keys[i], np.asarray(vec, dtype=np.float32).tobytes()))
                self._db.commit()
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("passage", texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("query", texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def close(self) -> None:
        with self._lock:
            self._db.close()
