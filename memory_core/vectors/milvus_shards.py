"""Which collection holds a user's vectors, and the collections' life: discovered on open,
created on first write, schema-checked and loaded.

* **Server:** one collection holds every user's active memories; ``user_id`` is its partition
  key, so a filtered search scans one partition (measured p95 ~2-3 ms at 1M vectors).
* **Lite (embedded):** users are sharded over ``shards`` collections named
  ``<collection>__<shards>_<i>``, ``i = shard_of(user_id, shards)`` (a stable hash). Why: Lite
  2.5.1 has no working partition key and its filtered FLAT search scans the whole collection
  (p50/p95 15/46 ms at 100k vectors, 131/225 ms at 1M), so the only way to make one user's
  search cost depend on less than the whole store is to put fewer users in each collection.
  Measured on a busy 2-core machine at 100k rows: 1 collection 15/46 ms, 16 collections
  3.8/13 ms (dense). Every read for a user goes to that user's shard only, with the same escaped
  user filter, so results stay exact and isolated; writes are grouped by shard; deletes by
  memory id (the user is unknown) go to every existing shard. Shard collections are created on
  first write (a small store never pays for 32; creating one cost ~1 s on Lite, most of it
  pymilvus' fixed sleeps in its index wait, which ``schema.wait_for_indexes`` replaces). The layout
  is read back from the store on open: an existing store keeps its shard count (a store written
  by an older version, one collection named ``<collection>``, is used as is).

Traps: Milvus Lite 2.5.1 rejects every filtered query with "Invalid expr" once a field is
declared ``is_partition_key=True`` (a server must declare it: ``schema.py``); the loaded state is
not persisted, so every collection is loaded on every open.
"""
from __future__ import annotations

import hashlib
import logging
import re
from typing import Any, Iterator

from pymilvus.exceptions import MilvusException

from memory_core.errors import ValidationError
from memory_core.vectors.milvus_calls import MilvusCalls
from memory_core.vectors.schema import check_collection, create_collection

log = logging.getLogger(__name__)

DEFAULT_LITE_SHARDS = 16
"""Collections a new embedded store spreads users over. Measured trade-off on Lite 2.5.1: each
loaded collection costs ~55 MB of Lite server RSS whatever it holds (64 shards: 5.0 GB peak at
1M), and the keyword leg and a user's first vector load scan one shard (16 shards: ~62k rows at
1M). Dense search runs on the per-user vector cache, so it no longer needs small shards."""
MAX_SHARDS = 1024
MAX_COLLECTION_NAME = 255
LOAD_TIMEOUT_S = 300
CREATE_TIMEOUT_S = 120
ITERATOR_BATCH = 1_000


def shard_of(user_id: str, shards: int) -> int:
    """The shard (0..shards-1) holding ``user_id``'s vectors: a stable hash, never ``hash()``
    (salted per process), so every process and every restart routes a user the same way."""
    digest = hashlib.blake2b(user_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def shard_collection(base: str, shards: int, index: int) -> str:
    """Collection name of one shard; ``shards == 1`` is the single collection ``base`` itself."""
    return base if shards == 1 else f"{base}__{shards}_{index}"


class ShardedCollections(MilvusCalls):
    """The store's collections: one on a server, ``shards`` on Milvus Lite."""

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
