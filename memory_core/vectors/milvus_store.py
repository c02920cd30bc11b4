"""``VectorStore`` on Milvus through pymilvus ``MilvusClient``: Milvus Lite 2.5.1 or a server.

The same code runs embedded (the uri is a local file path; Milvus Lite runs as a child process
of this one) and against a server (``http://host:19530`` plus a token). The differences are
confined to the collection layout (schema.py: partition key only on a server; BM25 only where
the Milvus has it, read at open by server_caps.py: Lite and servers 2.5+, not the 2.3.5 server
our tests run, where the keyword leg comes from SQL) and the client lock (Lite only):

* **Server:** one collection holds every user's active memories; ``user_id`` is its partition
  key, so a filtered search scans one partition (measured p95 ~2-3 ms at 1M vectors).
* **Lite (embedded):** users are sharded over ``shards`` collections named
  ``<collection>__<shards>_<i>``, ``i = shard_of(user_id, shards)`` (a stable hash). Why: Lite
  2.5.1 has no working partition key and its filtered FLAT search scans the whole collection
  (p50/p95 15/46 ms at 100k vectors, 131/225 ms at 1M), so the only way to make one user's
  search cost depend on less than the whole store is to put fewer users in each collection.
  Measured on a busy 2-core machine at 100k rows: 1 collection 15/46 ms, 16 collections
  3.8/13 ms (dense). Every read for a user goes to that user's shard only, with the same escaped
  user filter as before, so results stay exact and isolated; writes are grouped by shard;
  deletes by memory id (the user is unknown) go to every existing shard. Shard collections are
  created on first write (creating one costs ~1 s on Lite, so a small store never pays for 32).
  The layout is read back from the store on open: an existing store keeps its shard count (a
  store written by an older version, one collection named ``<collection>``, is used as is).

Traps this module works around (measured on this machine, see ../shared/README.md):

* pymilvus bounds its retry loop by ``timeout`` only when the timeout is an ``int``; a float
  timeout falls back to 75 retries with back-off. Measured against a killed Lite child:
  ``timeout=2.0`` raised after 211 s, ``timeout=2`` after 3.7 s. Every call here passes
  ``timeout=<int seconds>`` (``timeout_s`` rounded up).
* Milvus Lite 2.5.1 rejects every filtered query with "Invalid expr" once a field is declared
  ``is_partition_key=True``; a server must declare it so a filtered search scans one partition.
* The loaded state is not persisted: the collection is loaded on every open.
* IVF / HNSW keep only ~half of the true top-20 under a ``user_id`` filter: the dense index is
  FLAT (exact), which is also fast enough at per-user scale.
* ``filter_params`` is unsupported on Lite and naive filter strings are injectable: every
  filter comes from ``memory_core.vectors.filters``.
* Two ``MilvusClient`` objects for the same uri share one pymilvus connection alias, so closing
  one would break the other: each store uses its own alias.
* Milvus Lite 2.5.1 puts string primary keys unescaped into its internal SQLite statements:
  a memory id with a single quote cannot be upserted or deleted. Memory ids are therefore
  limited to ``[A-Za-z0-9._:-]`` (``filters.validate_id``); user ids are not keys and may
  hold any printable text.
* A Lite file is locked by the first process that opens it; a second one gets
  "Open local milvus failed", mapped to ``BackendUnavailable`` with that hint.
* pymilvus keeps a Lite child (~140 MB) running until the process exits, even after every
  client of its file is closed: a process that opens and closes stores (the test suite, an app
  that reopens its engine) piled them up until the kernel killed it (127 children, 18 GB).
  ``close()`` of the last store of a file in this process stops its child (milvus_lite's own
  ``release_server``; the data is on disk, and reopening starts a new child).
* The BM25 function (jieba analysis) roughly halves write throughput on Lite (~1.5k vs
  ~3.5k rows/s at dim 384); searches are unaffected.
* ``TEXT_MATCH`` filters and ``run_analyzer`` are not implemented by Lite 2.5.1 (the schema
  still enables match so a server can use it).
"""
from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager, Iterable, Iterator, Sequence

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

from memory_core.errors import BackendUnavailable, MemoryEngineError, ValidationError
from memory_core.vectors.base import KeywordSearchUnavailable
from memory_core.vectors.base import VectorFilter, VectorHit, VectorRecord, VectorStore
from memory_core.vectors.user_cache import DEFAULT_MAX_ROWS, UserVectorCache, UserVectors, shared_cache
from memory_core.vectors.lite_stderr import lite_child_stderr
from memory_core.vectors.schema import KEYWORD_ANALYZER, TEXT_MAX_BYTES, check_collection, create_collection
from memory_core.vectors.server_caps import LITE_CAPS, ServerCaps, read_server_caps
from memory_core.vectors.filters import (
    build_filter,
    checked_int,
    checked_memory_type,
    ids_filter,
    owned_ids_filter,
    user_filter,
    validate_id,
)

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from memory_core.config import Settings

UPSERT_BATCH_ROWS = 1_000
UPSERT_BATCH_BYTES = 16 * 1024 * 1024  # well under gRPC's message limit
DELETE_BATCH_IDS = 1_000
ITERATOR_BATCH = 1_000
LOAD_TIMEOUT_S = 300
CREATE_TIMEOUT_S = 120
MAX_LIMIT = 16_384  # Milvus topk ceiling
LOAD_BATCH = 4_096  # rows per page when loading a user's vectors into the cache
SEARCH_BATCH = 256  # query vectors per batched search request
LITE_FILE_NAME = re.compile(r"^[a-zA-Z0-9.\-_]+$")
LITE_FILE_NAME_MAX = 36
_SERVER_SCHEMES = ("http://", "https://", "tcp://", "grpc://", "unix:")
_OUTPUT_ID = ["memory_id"]
_CACHE_FIELDS = ["memory_id", "embedding", "importance", "created_at", "expires_at", "memory_type"]
DEFAULT_LITE_SHARDS = 16
"""Collections a new embedded store spreads users over. Measured trade-off on Lite 2.5.1: each
loaded collection costs ~55 MB of Lite server RSS whatever it holds (64 shards: 5.0 GB peak at
1M), and the keyword leg and a user's first vector load scan one shard (16 shards: ~62k rows at
1M). Dense search runs on the per-user vector cache, so it no longer needs small shards."""
MAX_SHARDS = 1024
MAX_COLLECTION_NAME = 255


def shard_of(user_id: str, shards: int) -> int:
    """The shard (0..shards-1) holding ``user_id``'s vectors: a stable hash, never ``hash()``
    (salted per process), so every process and every restart routes a user the same way."""
    digest = hashlib.blake2b(user_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def shard_collection(base: str, shards: int, index: int) -> str:
    """Collection name of one shard; ``shards == 1`` is the single collection ``base`` itself."""
    return base if shards == 1 else f"{base}__{shards}_{index}"


class _LiteIteratorNoise(logging.Filter):
    """Drop pymilvus's per-iterator warning that Lite (or a server before 2.4) has no MVCC
    timestamp (expected there)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "failed to get mvccTs" not in record.getMessage()


_LITE_NOISE_FILTER = _LiteIteratorNoise()


def is_server_uri(uri: str) -> bool:
    """True for a Milvus server address, False for a Milvus Lite file path."""
    return uri.startswith(_SERVER_SCHEMES)


def _truncate_utf8(text: str, max_bytes: int) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", errors="ignore")


def _is_unavailable(exc: MilvusException) -> bool:
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


class MilvusVectorStore(VectorStore):
    """Vectors of active memories, filtered per user on every read: one collection on a server,
    ``shards`` collections on Milvus Lite (see the module docstring)."""

    def __init__(
        self,
        uri: str,
        collection: str,
        dim: int,
        token: str | None = None,
        timeout_s: float = 10.0,
        shards: int | None = None,
        vector_cache_rows: int | None = None,
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 32_768:
            raise ValidationError(f"dim must be an integer in 1..32768, got {dim!r}")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,254}", collection or ""):
            raise ValidationError(f"invalid Milvus collection name {collection!r}")
        if not timeout_s > 0:
            raise ValidationError("timeout_s must be positive")
        if shards is not None and (isinstance(shards, bool) or not isinstance(shards, int)
                                   or not 1 <= shards <= MAX_SHARDS):
            raise ValidationError(f"shards must be an integer in 1..{MAX_SHARDS}, got {shards!r}")
        self._uri = uri
        self._collection = collection
        self._dim = dim
        self._is_server = is_server_uri(uri)
        self._shards = 1 if self._is_server else (shards or DEFAULT_LITE_SHARDS)
        if len(shard_collection(collection, self._shards, self._shards - 1)) > MAX_COLLECTION_NAME:
            raise ValidationError(f"collection name {collection!r} is too long for {self._shards} shards")
        self._existing: set[str] = set()  # shard collections known to exist and be loaded
        # Embedded only: exact dense search on cached per-user vectors (see user_cache.py).
        cache_rows = DEFAULT_MAX_ROWS if vector_cache_rows is None else int(vector_cache_rows)
        self._vcache: UserVectorCache | None = None
        self._loader: ThreadPoolExecutor | None = None
        self._loader_client: MilvusClient | None = None
        self._loader_lock = threading.Lock()
        self._loading: set[str] = set()
        if not self._is_server and cache_rows > 0:
            self._vcache = shared_cache((str(Path(uri).expanduser().resolve()), collection), cache_rows)
        # int on purpose: pymilvus only bounds its retry loop by an int timeout (module docstring)
        self._timeout = max(1, math.ceil(timeout_s))
        # Lite serves one process over a local socket; serialise calls so Streamlit's threads
        # never interleave an iterator with a write. A server handles concurrency itself.
        self._lock: ContextManager[Any] = nullcontext() if self._is_server else threading.RLock()
        self._closed = False
        # What the Milvus behind this store can do: read from a server at open (server_caps.py).
        self._caps: ServerCaps = LITE_CAPS
        self._keyword_in_milvus = True  # False: no BM25 here, the keyword leg runs in SQL
        if not self._is_server:
            logging.getLogger("pymilvus.orm.iterator").addFilter(_LITE_NOISE_FILTER)  # idempotent
            name = Path(uri).name
            if not LITE_FILE_NAME.fullmatch(name) or len(name) > LITE_FILE_NAME_MAX:
                raise ValidationError(
                    f"Milvus Lite file name {name!r} must match {LITE_FILE_NAME.pattern} "
                    f"and be at most {LITE_FILE_NAME_MAX} characters"
                )
        self._lite_path: str | None = None
        with self._guard("connect"), (nullcontext() if self._is_server else lite_child_stderr()):
            self._client = MilvusClient(
                uri=uri,
                token=token or "",
                timeout=self._timeout,
                alias=f"memory-core-{uuid.uuid4().hex}",
            )
        if not self._is_server:
            self._lite_path = _lite_opened(uri)
        try:
            with self._guard("open collection"):
                if self._is_server:
                    self._caps = read_server_caps(self._client, self._timeout)
                    self._keyword_in_milvus = self._caps.bm25
                    if self._caps.version < (2, 4, 0):  # no MVCC timestamp for iterators before 2.4 either
                        logging.getLogger("pymilvus.orm.iterator").addFilter(_LITE_NOISE_FILTER)
                    if not self._client.has_collection(collection, timeout=self._timeout):
                        self._create_collection(collection)
                    self._open_collection(collection)
                else:
                    self._shards = self._discover_layout(self._shards)
                    for name in self._shard_names_on_disk():
                        self._open_collection(name)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ setup

    def _discover_layout(self, requested: int) -> int:
        """The shard count already on disk, else ``requested`` (a new or empty store)."""
        names = self._client.list_collections(timeout=self._timeout)
        if self._collection in names:
            if requested != 1:
                log.info("Milvus Lite store %s holds the single-collection layout; using it", self._uri)
            return 1
        pattern = re.compile(re.escape(self._collection) + r"__(\d+)_(\d+)")
        counts = {int(m.group(1)) for m in map(pattern.fullmatch, names) if m}
        if len(counts) > 1:
            raise ValidationError(f"Milvus Lite store {self._uri} mixes shard layouts {sorted(counts)} "
                                  f"for collection {self._collection!r}")
        if counts:
            found = counts.pop()
            if found != requested:
                log.warning("Milvus Lite store %s was created with %d shards (asked for %d); using %d",
                            self._uri, found, requested, found)
            return found
        return requested

    def _shard_names_on_disk(self) -> list[str]:
        names = set(self._client.list_collections(timeout=self._timeout))
        return [n for n in (shard_collection(self._collection, self._shards, i) for i in range(self._shards))
                if n in names]

    def _open_collection(self, name: str) -> None:
        """Check an existing collection's schema and load it (the loaded state is not kept)."""
        self._check_existing_schema(name)
        # Loading reads every segment (measured ~26 s for 1M rows on Lite): its own budget.
        self._client.load_collection(name, timeout=max(self._timeout, LOAD_TIMEOUT_S))
        self._existing.add(name)

    def _name_for(self, user_id: str) -> str:
        return shard_collection(self._collection, self._shards, shard_of(user_id, self._shards))

    def _readable(self, name: str) -> bool:
        """True when shard ``name`` exists (loading it if another store instance created it).
        Called inside ``_guard``; asks Milvus only about a shard this instance has not seen."""
        if name in self._existing:
            return True
        if not self._client.has_collection(name, timeout=self._timeout):
            return False
        self._open_collection(name)
        return True

    def _writable(self, name: str) -> None:
        """Create shard ``name`` on its first write. Called inside ``_guard``."""
        if not self._readable(name):
            try:
                self._create_collection(name)
            except MilvusException:
                # Another store instance on the same file may have created it just now.
                if not self._client.has_collection(name, timeout=self._timeout):
                    raise
            self._open_collection(name)

    def _all_shards(self) -> list[str]:
        """Every existing shard, including ones created by another store instance since open."""
        if self._is_server:
            return [self._collection]
        with self._guard("list shards"):
            for name in self._shard_names_on_disk():
                if name not in self._existing:
                    self._open_collection(name)
            return sorted(self._existing)

    def _create_collection(self, name: str) -> None:
        # Its own budget, like loading: a new 64-partition collection on a busy 2-core machine
        # took over 10 s on the 2.3.5 server (DEADLINE_EXCEEDED at the default timeout).
        create_collection(self._client, name, self._dim, partition_key=self._caps.partition_key,
                          bm25=self._caps.bm25, timeout=max(self._timeout, CREATE_TIMEOUT_S))

    def _check_existing_schema(self, name: str) -> None:
        has_sparse = check_collection(self._client, name, self._dim, require_sparse=not self._is_server,
                                      timeout=self._timeout)
        if not has_sparse and self._keyword_in_milvus:
            log.warning("collection %s has no BM25 field (made on a Milvus server older than 2.5): the keyword "
                        "leg of recall runs in SQL until it is re-created", name)
            self._keyword_in_milvus = False

    # ------------------------------------------------------------------ plumbing

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
                if _is_unavailable(exc):
                    hint = ""
                    if not self._is_server and op == "connect":
                        hint = " (a Milvus Lite file can be opened by one process only)"
                    raise BackendUnavailable(f"Milvus is unavailable ({op}): {exc.message}{hint}") from exc
                raise MemoryEngineError(f"Milvus {op} failed: {exc.message}") from exc

    def _vector(self, vector: np.ndarray, what: str) -> list[float]:
        return self._checked_vector(vector, what).tolist()

    def _checked_vector(self, vector: np.ndarray, what: str) -> np.ndarray:
        arr = np.asarray(vector, dtype=np.float32)
        if arr.shape != (self._dim,):
            raise ValidationError(f"{what} has shape {arr.shape}, expected ({self._dim},)")
        if not np.all(np.isfinite(arr)):
            raise ValidationError(f"{what} contains NaN or infinity")
        if not np.any(arr):
            raise ValidationError(f"{what} is all zeros (cosine similarity is undefined)")
        return arr

    @staticmethod
    def _limit(limit: int) -> int:
        value = checked_int(limit, "limit")
        if not 1 <= value <= MAX_LIMIT:
            raise ValidationError(f"limit must be in 1..{MAX_LIMIT}")
        return value

    def _row(self, record: VectorRecord) -> dict[str, Any]:
        content_hash = record.content_hash
        if not isinstance(content_hash, str) or len(content_hash.encode("utf-8")) > 128:
            raise ValidationError("content_hash must be a string of at most 128 bytes")
        if not isinstance(record.text, str):
            raise ValidationError("text must be a string")
        return {
            "memory_id": validate_id(record.memory_id, "memory_id"),
            "user_id": validate_id(record.user_id, "user_id"),
            "embedding": self._vector(record.vector, f"vector of {record.memory_id!r}"),
            # Only the keyword index reads this field; chunks are far below the limit.
            "text": _truncate_utf8(record.text, TEXT_MAX_BYTES),
            "importance": checked_int(record.importance, "importance"),
            "created_at": checked_int(record.created_at, "created_at"),
            "expires_at": checked_int(record.expires_at, "expires_at"),
            "memory_type": checked_memory_type(record.memory_type),
            "content_hash": content_hash,
        }

    @staticmethod
    def _hits(result: Any) -> list[VectorHit]:
        rows = result[0] if result else []
        return [VectorHit(memory_id=str(hit["id"]), score=float(hit["distance"]), rank=i) for i, hit in enumerate(rows)]

    def _iterate(self, name: str, expr: str, fields: list[str], op: str) -> Iterator[dict[str, Any]]:
        """Every row of collection ``name`` matching ``expr``, in pages (plain query stops at
        offset+limit 16,384)."""
        with self._guard(op):
            if not self._readable(name):
                return
            iterator = self._client.query_iterator(
                name,
                batch_size=ITERATOR_BATCH,
                filter=expr,
                output_fields=fields,
                timeout=self._timeout,
            )
            try:
                while True:
                    page = iterator.next()
                    if not page:
                        break
                    yield from page
            finally:
                iterator.close()

    # ------------------------------------------------------------------ VectorStore

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by ``memory_id``; validated in full before anything is written."""
        self._write(records, fresh=False)

    def insert_new(self, records: Sequence[VectorRecord]) -> None:
        """A plain insert for ids never indexed before: Lite's upsert is a delete plus an insert
        and cost 2-5x as much in a 60k-row shard (most of ``add_many`` at 1M memories). Any
        retry or re-index of the same ids goes through ``upsert``, which replaces every copy."""
        self._write(records, fresh=True)

    def _write(self, records: Sequence[VectorRecord], fresh: bool) -> None:
        latest: dict[str, dict[str, Any]] = {}
        for record in records:  # a repeated id in one call: the last one wins, no duplicates
            row = self._row(record)
            latest.pop(row["memory_id"], None)
            latest[row["memory_id"]] = row
        by_shard: dict[str, list[dict[str, Any]]] = {}
        for row in latest.values():  # a memory never changes user, so it always lands in one shard
            by_shard.setdefault(self._name_for(row["user_id"]), []).append(row)
        for name, rows in by_shard.items():
            batch: list[dict[str, Any]] = []
            batch_bytes = 0
            for row in rows:
                row_bytes = len(row["text"].encode("utf-8")) + 4 * self._dim + 512
                if batch and (len(batch) >= UPSERT_BATCH_ROWS or batch_bytes + row_bytes > UPSERT_BATCH_BYTES):
                    self._write_batch(name, batch, fresh)
                    batch, batch_bytes = [], 0
                batch.append(row)
                batch_bytes += row_bytes
            if batch:
                self._write_batch(name, batch, fresh)

    def _write_batch(self, name: str, rows: list[dict[str, Any]], fresh: bool) -> None:
        """One insert (fresh ids) or upsert call, then the same cache bookkeeping for both."""
        try:
            with self._guard("insert" if fresh else "upsert"):
                self._writable(name)
                if fresh:
                    self._client.insert(name, rows, timeout=self._timeout)
                elif self._caps.upsert:
                    self._client.upsert(name, rows, timeout=self._timeout)
                else:  # upsert misroutes rows under a partition key here (server_caps.py)
                    self._client.delete(name, filter=ids_filter([r["memory_id"] for r in rows]), timeout=self._timeout)
                    self._client.insert(name, rows, timeout=self._timeout)
        except BaseException:
            if self._vcache is not None:  # outcome unknown: forget these users' cached vectors
                for user in {r["user_id"] for r in rows}:
                    self._vcache.drop_user(user)
            raise
        if self._vcache is not None:
            by_user: dict[str, list[dict[str, Any]]] = {}
            for row in rows:
                by_user.setdefault(row["user_id"], []).append(row)
            for user, mine in by_user.items():
                self._vcache.upserted(user, lambda mine=mine: UserVectors.from_rows(mine, self._dim))

    def delete(self, memory_ids: Sequence[str], user_id: str | None = None) -> None:
        """Delete by id: from the owner's shard when ``user_id`` is given (and only that user's
        rows), else from every shard (a delete of an id a shard does not hold is a no-op there).
        One request instead of 16 was most of a superseding write's time."""
        ids = list(dict.fromkeys(validate_id(m, "memory_id") for m in memory_ids))
        if not ids:
            return
        shards = self._all_shards() if user_id is None else [self._name_for(user_id)]
        try:
            for start in range(0, len(ids), DELETE_BATCH_IDS):
                part = ids[start : start + DELETE_BATCH_IDS]
                expr = ids_filter(part) if user_id is None else owned_ids_filter(part, user_id)
                for name in shards:
                    with self._guard("delete"):
                        if user_id is not None and not self._readable(name):
                            continue  # the user's shard was never created: nothing to delete
                        self._client.delete(name, filter=expr, timeout=self._timeout)
        finally:  # on failure too: some shards may have deleted already
            if self._vcache is not None:
                self._vcache.deleted(ids)

    def delete_user(self, user_id: str) -> None:
        expr = user_filter(user_id)
        name = self._name_for(user_id)
        try:
            with self._guard("delete_user"):
                if self._readable(name):
                    self._client.delete(name, filter=expr, timeout=self._timeout)
        finally:
            if self._vcache is not None:
                self._vcache.drop_user(user_id)

    def search_dense(self, vector: np.ndarray, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """Exact cosine search; ``score`` is the cosine similarity in [-1, 1]."""
        data = self._checked_vector(vector, "query vector")
        expr = build_filter(flt)
        limit = self._limit(limit)
        cached = self._cached_user(flt.user_id)
        if cached is not None:
            return cached.search(data, flt, limit)
        return self._search("search_dense", flt.user_id, data.tolist(), "embedding", "COSINE", expr, limit)

    def search_dense_many(self, vectors: Sequence[np.ndarray], flt: VectorFilter, limit: int) -> list[list[VectorHit]]:
        """Several exact cosine searches in one request per ``SEARCH_BATCH`` vectors (same filter)."""
        if type(self).search_dense is not MilvusVectorStore.search_dense:
            # A subclass that customises single searches (a wrapper, a fault injector) keeps control.
            return super().search_dense_many(vectors, flt, limit)
        checked = [self._checked_vector(v, f"query vector {i}") for i, v in enumerate(vectors)]
        expr = build_filter(flt)
        limit = self._limit(limit)
        if not checked:
            return []
        cached = self._cached_user(flt.user_id)
        if cached is not None:
            return cached.search_many(np.stack(checked), flt, limit)
        data = [v.tolist() for v in checked]
        name = self._name_for(flt.user_id)
        out: list[list[VectorHit]] = []
        for start in range(0, len(data), SEARCH_BATCH):
            part = data[start : start + SEARCH_BATCH]
            with self._guard("search_dense"):
                if not self._readable(name):
                    return [[] for _ in data]
                result = self._client.search(
                    name,
                    data=part,
                    anns_field="embedding",
                    filter=expr,
                    limit=limit,
                    search_params={"metric_type": "COSINE"},
                    output_fields=_OUTPUT_ID,
                    timeout=self._timeout,
                )
            out.extend(self._hits([rows]) for rows in (result or [[] for _ in part]))
        return out

    def _cached_user(self, user_id: str) -> UserVectors | None:
        """The user's cached vectors, or ``None`` (then Milvus answers, exactly). On a miss the
        user is loaded in the background: loading 1,000 vectors through pymilvus takes ~200 ms,
        which a search must not wait for (measured: it set the cold p95 at 100k)."""
        cache = self._vcache
        if cache is None:
            return None
        entry = cache.get(user_id)
        if entry is None:
            self._schedule_load(user_id)
        return entry

    def prepare_user(self, user_id: str, wait: bool = False) -> bool:
        """Load the user's vectors into the cache before their first search: the app calls this
        when a user opens a chat, seconds before they send a message, so the first search is as
        fast as the rest. ``wait`` loads in the caller's thread; otherwise in the background."""
        cache = self._vcache
        if cache is None:
            return False
        validate_id(user_id, "user_id")
        if cache.get(user_id) is not None:
            return True
        if wait:
            return self.load_user_vectors(user_id)
        self._schedule_load(user_id)
        return False

    def _schedule_load(self, user_id: str) -> None:
        with self._loader_lock:
            if self._closed or user_id in self._loading:
                return
            if self._loader is None:
                self._loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vector-cache-load")
            self._loading.add(user_id)
            self._loader.submit(self._load_in_background, user_id)

    def _load_in_background(self, user_id: str) -> None:
        try:
            self.load_user_vectors(user_id)
        except Exception as exc:  # noqa: BLE001 - a failed warm-up only means Milvus keeps answering
            log.debug("vector cache load failed for a user: %s", exc)
        finally:
            with self._loader_lock:
                self._loading.discard(user_id)

    def load_user_vectors(self, user_id: str) -> bool:
        """Load one user's vectors into the cache now (the background loader's job; tests and
        warm-up call it directly). Uses its own connection so it never holds the store's lock
        (foreground searches keep running). False when there is no cache or the user is too big."""
        cache = self._vcache
        if cache is None:
            return False
        validate_id(user_id, "user_id")
        ticket = cache.ticket(user_id)
        name = self._name_for(user_id)
        with self._loader_lock:
            if self._closed:
                return False
            if self._loader_client is None:
                self._loader_client = MilvusClient(uri=self._uri, timeout=self._timeout,
                                                   alias=f"memory-core-load-{uuid.uuid4().hex}")
            client = self._loader_client
        rows: list[dict[str, Any]] = []
        if client.has_collection(name, timeout=self._timeout):
            iterator = client.query_iterator(name, batch_size=LOAD_BATCH, filter=user_filter(user_id),
                                             output_fields=_CACHE_FIELDS, timeout=self._timeout)
            try:
                while True:
                    page = iterator.next()
                    if not page:
                        break
                    rows.extend(page)
                    if len(rows) > cache.max_rows:
                        return False
            finally:
                iterator.close()
        cache.install(user_id, UserVectors.from_rows(rows, self._dim), ticket)
        return True

    def search_keyword(self, text: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """BM25 over the stored text; ``[]`` for text with no indexable token. On a server without
        BM25 (``native_keyword`` False) this is an error: the caller runs the keyword leg in SQL."""
        if not self._keyword_in_milvus:
            raise KeywordSearchUnavailable(
                f"{self._caps.label} has no BM25 full-text search (Milvus 2.5+ has); "
                "the keyword leg must come from SQL (memory_core.sql_keyword)")
        if not isinstance(text, str):
            raise ValidationError("keyword query must be a string")
        expr = build_filter(flt)
        limit = self._limit(limit)
        query = _truncate_utf8(text, TEXT_MAX_BYTES)
        if not query.strip():
            return []
        return self._search("search_keyword", flt.user_id, query, "sparse", "BM25", expr, limit)

    def _search(self, op: str, user_id: str, data: Any, field: str, metric: str, expr: str,
                limit: int) -> list[VectorHit]:
        """One search in the user's shard collection (dense and keyword legs differ only in
        the field searched and its metric)."""
        name = self._name_for(user_id)
        with self._guard(op):
            if not self._readable(name):
                return []
            result = self._client.search(
                name,
                data=[data],
                anns_field=field,
                filter=expr,
                limit=limit,
                search_params={"metric_type": metric},
                output_fields=_OUTPUT_ID,
                timeout=self._timeout,
            )
        return self._hits(result)

    def user_hashes(self, user_id: str) -> dict[str, str]:
        expr = user_filter(user_id)
        return {
            str(row["memory_id"]): str(row["content_hash"])
            for row in self._iterate(self._name_for(user_id), expr, ["memory_id", "content_hash"], "user_hashes")
        }

    def all_user_ids(self) -> Iterable[str]:
        """Distinct user ids; a full scan, meant for the periodic reconcile job."""
        seen: set[str] = set()
        for name in self._all_shards():
            for row in self._iterate(name, 'memory_id != ""', ["user_id"], "all_user_ids"):
                seen.add(str(row["user_id"]))
        return sorted(seen)

    def count(self) -> int:
        total = 0
        for name in self._all_shards():
            with self._guard("count"):
                rows = self._client.query(name, filter="", output_fields=["count(*)"], timeout=self._timeout)
            total += int(rows[0]["count(*)"]) if rows else 0
        return total

    def ping(self) -> bool:
        try:
            with self._guard("ping"):
                if self._is_server:
                    return bool(self._client.has_collection(self._collection, timeout=self._timeout))
                self._client.list_collections(timeout=self._timeout)  # shards may not exist yet
                return True
        except Exception:  # noqa: BLE001 - ping reports, it never raises
            return False

    def close(self) -> None:
        """Drop this store's connection; the last store of a Lite file stops its child process."""
        with self._loader_lock:
            loader, self._loader = self._loader, None
            loader_client, self._loader_client = self._loader_client, None
        if loader is not None:
            loader.shutdown(wait=True, cancel_futures=True)
        if loader_client is not None:
            try:
                loader_client.close()
            except Exception:  # noqa: BLE001
                pass
        with self._lock:
            if self._closed:
                return
            self._closed = True
            client = getattr(self, "_client", None)
            if client is not None:
                try:
                    client.close()
                except Exception:  # noqa: BLE001 - closing a broken connection is not an error
                    pass
            lite_path, self._lite_path = getattr(self, "_lite_path", None), None
            if lite_path is not None:
                _lite_closed(lite_path)

    # ------------------------------------------------------------------ extras

    @property
    def is_server(self) -> bool:
        return self._is_server

    @property
    def caps(self) -> ServerCaps:
        """What the Milvus behind this store can do (read from a server at open)."""
        return self._caps

    @property
    def native_keyword(self) -> bool:
        """True when ``search_keyword`` runs BM25 in Milvus (Lite, a 2.5+ server)."""
        return self._keyword_in_milvus

    def backend_info(self) -> dict[str, object]:
        return {"vector_backend": self._caps.label, "vector_server_version": self._caps.version_text,
                "keyword_search": "milvus-bm25" if self._keyword_in_milvus else "sql"}

    @property
    def collection(self) -> str:
        """The configured collection name (on Lite, the prefix of the shard collections)."""
        return self._collection

    @property
    def shards(self) -> int:
        """Collections users are spread over: 1 on a server (partition key instead)."""
        return self._shards

    def shard_name(self, user_id: str) -> str:
        """The collection that holds ``user_id``'s vectors (for diagnostics and tests)."""
        return self._name_for(validate_id(user_id, "user_id"))


_lite_open: dict[str, int] = {}  # Lite file -> stores of this process that have it open
_lite_open_lock = threading.Lock()


def _lite_key(uri: str) -> str:
    return str(Path(uri).absolute().resolve())  # as milvus_lite's server manager keys its children


def _lite_opened(uri: str) -> str:
    key = _lite_key(uri)
    with _lite_open_lock:
        _lite_open[key] = _lite_open.get(key, 0) + 1
    return key


def _lite_closed(key: str) -> None:
    """One store of this Lite file closed; stop the child once none is left."""
    with _lite_open_lock:
        left = _lite_open.get(key, 0) - 1
        if left > 0:
            _lite_open[key] = left
            return
        _lite_open.pop(key, None)
        try:
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(key)
        except Exception as exc:  # noqa: BLE001 - the child then lives until the process exits, as before
            log.debug("could not stop the Milvus Lite child of %s: %s", key, exc)


def open_vector_store(settings: "Settings", dim: int) -> MilvusVectorStore:
    """Build the store from settings; for Milvus Lite, create the file's parent directory."""
    uri = settings.resolved_milvus_uri
    if not is_server_uri(uri):
        Path(uri).expanduser().parent.mkdir(parents=True, exist_ok=True)
    token = settings.milvus_token.get_secret_value() if settings.milvus_token is not None else None
    return MilvusVectorStore(
        uri=uri,
        collection=settings.milvus_collection,
        dim=dim,
        token=token,
        timeout_s=settings.milvus_timeout_s,
        shards=settings.milvus_lite_shards,
        vector_cache_rows=settings.milvus_vector_cache_rows,
    )


__all__ = ["DEFAULT_LITE_SHARDS", "KEYWORD_ANALYZER", "MilvusVectorStore", "is_server_uri", "open_vector_store",
           "shard_collection", "shard_of"]
