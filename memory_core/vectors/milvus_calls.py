"""How every pymilvus call of the Milvus store is made: under the store's lock, with pymilvus
errors turned into the engine's, and with arguments checked before they reach Milvus.

The base of ``MilvusVectorStore`` (``milvus_store.py``); it declares the state the other parts
(shards, writes, searches, the user-vector loader) share. Traps handled here (measured on this
machine, see ../shared/README.md):

* pymilvus bounds its retry loop by ``timeout`` only when the timeout is an ``int``; a float
  timeout falls back to 75 retries with back-off. Measured against a killed Lite child:
  ``timeout=2.0`` raised after 211 s, ``timeout=2`` after 3.7 s. Every call passes
  ``timeout=self._timeout``, an int (``timeout_s`` rounded up).
* A Lite file is locked by the first process that opens it; a second one gets
  "Open local milvus failed", mapped to ``BackendUnavailable`` with that hint.
* Lite serves one process over a local socket: calls are serialised (``self._lock``) so
  Streamlit's threads never interleave an iterator with a write; a server takes them as they come.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, ContextManager, Iterator

import grpc
import numpy as np
import memory_core.vectors.pymilvus_import  # noqa: F401  (must precede pymilvus: MILVUS_URI may be a file path)
from pymilvus import MilvusClient
from pymilvus.exceptions import (
    ConnectError,
    ConnectionNotExistException,
    MilvusException,
    MilvusUnavailableException,
)

from memory_core.errors import BackendUnavailable, MemoryEngineError
from memory_core.vectors.base import VectorHit, VectorStore
from memory_core.vectors.checks import checked_limit, checked_vector
from memory_core.vectors.server_caps import ServerCaps
from memory_core.vectors.user_cache import UserVectorCache



class _IteratorNoise(logging.Filter):
    """Drop pymilvus's per-iterator warning that Lite (or a server before 2.4) has no MVCC
    timestamp (expected there)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "failed to get mvccTs" not in record.getMessage()


ITERATOR_NOISE_FILTER = _IteratorNoise()


def quiet_iterator_warnings() -> None:
    """Install the filter above on pymilvus's iterator logger (idempotent)."""
    logging.getLogger("pymilvus.orm.iterator").addFilter(ITERATOR_NOISE_FILTER)


def is_unavailable(exc: MilvusException) -> bool:
    """Connection loss and timeouts, as opposed to a request Milvus rejected."""
    if isinstance(exc, (MilvusUnavailableException, ConnectError, ConnectionNotExistException)):
        return True
    code = exc.code
    # After its retries pymilvus wraps the gRPC failure with code = the StatusCode, or (2.5.18)
    # the bound ``code`` method of the gRPC error itself.
    if isinstance(code, grpc.StatusCode) or callable(code):
        return True
    message = str(getattr(exc, "message", "") or exc).lower()
    return any(
        marker in message
        for marker in (
            "retry timeout",
            "fail connecting",
            "server unavailable",
            "deadline",
            "not ready",
            "open local milvus failed",  # Lite file locked by another process, or Lite failed to start
            # a server restarted after a crash reloads its collections by itself, ~25 s on 2.3.5
            # (measured); until then every read fails with this (code 101): transient, not a bug
            "collection not loaded",
        )
    )


class MilvusCalls(VectorStore):
    """The state every part of the store shares, and the guarded way to call Milvus with it.
    ``MilvusVectorStore.__init__`` sets all of it."""

    _uri: str
    _collection: str
    _dim: int
    _is_server: bool
    _shards: int
    _existing: set[str]  # shard collections known to exist and be loaded
    _client: MilvusClient
    _timeout: int  # int on purpose: pymilvus only bounds its retry loop by an int timeout
    _lock: ContextManager[Any]
    _closed: bool
    _caps: ServerCaps
    _keyword_in_milvus: bool  # False: no BM25 here, the keyword leg runs in SQL
    _lite_path: str | None
    # the per-user vector cache (embedded only) and its background loader
    _vcache: UserVectorCache | None
    _loader: ThreadPoolExecutor | None
    _loader_client: MilvusClient | None
    _loader_lock: threading.Lock
    _loading: set[str]

    @contextmanager
    def _guard(self, op: str) -> Iterator[None]:
        """Serialise (Lite) and translate pymilvus errors into the engine's errors."""
        with self._lock:
            if self._closed:
                raise BackendUnavailable(f"vector store is closed (during {op})")
            try:
                yield
            except MemoryEngineError:
                raise
            except grpc.RpcError as exc:
                raise BackendUnavailable(f"Milvus {op} failed: {exc.code()}") from exc
            except MilvusException as exc:
                if is_unavailable(exc):
                    hint = ""
                    if not self._is_server and op == "connect":
                        hint = " (a Milvus Lite file can be opened by one process only)"
                    raise BackendUnavailable(f"Milvus is unavailable ({op}): {exc.message}{hint}") from exc
                raise MemoryEngineError(f"Milvus {op} failed: {exc.message}") from exc

    def _vector(self, vector: np.ndarray, what: str) -> list[float]:
        return self._checked_vector(vector, what).tolist()

    def _checked_vector(self, vector: np.ndarray, what: str) -> np.ndarray:
        return checked_vector(vector, self._dim, what)

    @staticmethod
    def _limit(limit: int) -> int:
        return checked_limit(limit)

    @staticmethod
    def _hits(result: Any) -> list[VectorHit]:
        rows = result[0] if result else []
        return [VectorHit(memory_id=str(hit["id"]), score=float(hit["distance"]), rank=i) for i, hit in enumerate(rows)]
