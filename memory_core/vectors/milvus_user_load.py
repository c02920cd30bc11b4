"""Loading one user's vectors into the in-process cache (``user_cache.py``, embedded only) for
an exact dense search in numpy.

Why in the background: loading 1,000 vectors through pymilvus takes ~200 ms, which a search must
not wait for (measured: it set the cold p95 at 100k). A search that misses the cache is answered
by Milvus and schedules the load; the chat page calls ``prepare_user`` when a user opens it,
seconds before the first message. The loader has its own connection, so it never holds the
store's lock and foreground calls keep running.
"""
from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pymilvus import MilvusClient

from memory_core.vectors.filters import user_filter, validate_id
from memory_core.vectors.milvus_shards import ShardedCollections
from memory_core.vectors.user_cache import UserVectors

log = logging.getLogger(__name__)

LOAD_BATCH = 4_096  # rows per page when loading a user's vectors into the cache
_CACHE_FIELDS = ["memory_id", "embedding", "importance", "created_at", "expires_at", "memory_type"]


class UserVectorLoading(ShardedCollections):
    def _cached_user(self, user_id: str) -> UserVectors | None:
        """The user's cached vectors, or ``None`` (then Milvus answers, exactly); a miss schedules
        the user's load in the background."""
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

    def _stop_loader(self) -> None:
        """Stop the background loader and close its connection (part of ``close``)."""
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
