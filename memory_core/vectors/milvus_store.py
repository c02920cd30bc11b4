"""``VectorStore`` on Milvus through pymilvus ``MilvusClient``: Milvus Lite 2.5.1 or a server.

The same code runs embedded (the uri is a local file path; Milvus Lite runs as a child process
of this one) and against a server (``http://host:19530`` plus a token). The differences are
confined to the collection layout (one collection with ``user_id`` as partition key on a server,
users sharded over collections on Lite: ``milvus_shards.py``), what the Milvus can do (BM25 only
on Lite and servers 2.5+, read at open by ``server_caps.py``; on the 2.3.5 server our tests run
the keyword leg comes from SQL) and the client lock (Lite only: ``milvus_calls.py``).

``MilvusVectorStore`` is assembled from one module per job, each with the traps it works around:

* ``milvus_calls.py``: the shared state, the lock, pymilvus errors to the engine's, int timeouts;
* ``milvus_shards.py``: which collection holds a user; discovering, creating, loading collections;
* ``milvus_writes.py``: insert, upsert and delete, batched per shard, the vector cache kept current;
* ``milvus_search.py`` and ``milvus_user_load.py``: dense (cached or in Milvus) and BM25 search,
  reconcile's scans, and loading a user's vectors into the cache (``user_cache.py``);
* ``lite_children.py``: the last store of a Lite file in this process stops its child process.

This module opens and closes the store. Traps handled here: two ``MilvusClient`` objects for the
same uri share one pymilvus connection alias, so closing one would break the other (each store
uses its own alias); Milvus Lite file names are restricted (``LITE_FILE_NAME``).
"""
from __future__ import annotations

import logging
import math
import re
import threading
import uuid
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager

import memory_core.vectors.pymilvus_import  # noqa: F401  (must precede pymilvus: MILVUS_URI may be a file path)
from pymilvus import MilvusClient

from memory_core.errors import ValidationError
from memory_core.vectors.filters import validate_id
from memory_core.vectors.lite_children import lite_closed, lite_opened
from memory_core.vectors.lite_stderr import lite_child_stderr
from memory_core.vectors.milvus_calls import quiet_iterator_warnings
from memory_core.vectors.milvus_search import MilvusSearch
from memory_core.vectors.milvus_shards import (
    DEFAULT_LITE_SHARDS,
    MAX_COLLECTION_NAME,
    MAX_SHARDS,
    shard_collection,
    shard_of,
)
from memory_core.vectors.milvus_writes import MilvusWrites
from memory_core.vectors.schema import KEYWORD_ANALYZER
from memory_core.vectors.server_caps import LITE_CAPS, ServerCaps, read_server_caps
from memory_core.vectors.user_cache import DEFAULT_MAX_ROWS, UserVectorCache, shared_cache

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from memory_core.config import Settings

LITE_FILE_NAME = re.compile(r"^[a-zA-Z0-9.\-_]+$")
LITE_FILE_NAME_MAX = 36
_SERVER_SCHEMES = ("http://", "https://", "tcp://", "grpc://", "unix:")


def is_server_uri(uri: str) -> bool:
    """True for a Milvus server address, False for a Milvus Lite file path."""
    return uri.startswith(_SERVER_SCHEMES)


class MilvusVectorStore(MilvusSearch, MilvusWrites):
    """Vectors of active memories, filtered per user on every read: one collection on a server,
    ``shards`` collections on Milvus Lite (see ``milvus_shards.py``)."""

    def __init__(
        self,
        uri: str,
        collection: str,
        dim: int,
        token: str | None = None,
        timeout_s: float = 10.0,
        shards: int | None = None,
        vector_cache_rows: int | None = None,
        settled: Callable[[str], bool] | None = None,
        settle_s: float = 10.0,
    ) -> None:
        """``settled(user_id)``: True when no write of that user happened within the server's
        staleness bound (the result cache's ``settled``); a server search for such a user reads
        with bounded staleness instead of waiting for a Strong read (``_read_consistency``).
        ``settle_s``: how long this store reads a user Strong after writing that user's vectors
        itself (the cache learns of a write only when it ends; a write's own conflict check
        searches before that)."""
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
        self._settled = settled
        self._settle_s = float(settle_s)
        self._written: dict[str, float] = {}  # user id -> monotonic time of this store's last write
        self._written_lock = threading.Lock()
        # Embedded only: exact dense search on cached per-user vectors (see user_cache.py).
        cache_rows = DEFAULT_MAX_ROWS if vector_cache_rows is None else int(vector_cache_rows)
        self._vcache: UserVectorCache | None = None
        self._loader = None
        self._loader_client = None
        self._loader_lock = threading.Lock()
        self._loading: set[str] = set()
        if not self._is_server and cache_rows > 0:
            self._vcache = shared_cache((str(Path(uri).expanduser().resolve()), collection), cache_rows)
        # int on purpose: pymilvus only bounds its retry loop by an int timeout (milvus_calls.py)
        self._timeout = max(1, math.ceil(timeout_s))
        # Lite serves one process over a local socket; serialise calls so Streamlit's threads
        # never interleave an iterator with a write. A server handles concurrency itself.
        self._lock: ContextManager[Any] = nullcontext() if self._is_server else threading.RLock()
        self._closed = False
        # What the Milvus behind this store can do: read from a server at open (server_caps.py).
        self._caps: ServerCaps = LITE_CAPS
        self._keyword_in_milvus = True  # False: no BM25 here, the keyword leg runs in SQL
        if not self._is_server:
            quiet_iterator_warnings()
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
            self._lite_path = lite_opened(uri)
        try:
            with self._guard("open collection"):
                if self._is_server:
                    self._caps = read_server_caps(self._client, self._timeout)
                    self._keyword_in_milvus = self._caps.bm25
                    if self._caps.version < (2, 4, 0):  # no MVCC timestamp for iterators before 2.4 either
                        quiet_iterator_warnings()
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
        self._stop_loader()
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
                lite_closed(lite_path)

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


def open_vector_store(settings: "Settings", dim: int,
                      settled: Callable[[str], bool] | None = None) -> MilvusVectorStore:
    """Build the store from settings; for Milvus Lite, create the file's parent directory.
    ``settled``: see ``MilvusVectorStore`` (the engine passes its result cache's)."""
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
        settled=settled,
        settle_s=settings.milvus_settle_s,
    )


__all__ = ["DEFAULT_LITE_SHARDS", "KEYWORD_ANALYZER", "MilvusVectorStore", "is_server_uri", "open_vector_store",
           "shard_collection", "shard_of"]
