"""What the Milvus behind a store can do, read from it at open instead of assumed.

Why: the same code runs on Milvus Lite 2.5.1 (embedded), on a Milvus 2.5+ server (production),
and on older servers (PyPI ``milvus`` 2.3.5, the only real server our test machines can run).
Measured on 2.3.5 (tests/test_server_contract.py): partition key, Strong consistency, COSINE
FLAT search, upsert, delete by a filter expression, query iterators and ``count(*)`` all work;
BM25 functions and sparse vectors do not (creating the index fails with "create index on 104
field is not supported" after the collection itself was created, so the check must come first).
So a server older than 2.5 gets a collection without the BM25 function, and the keyword leg of
recall comes from SQL (``memory_core.sql_keyword``), flagged in health and in search notices.
One more thing measured on 2.3.5 that the store works around: upsert misroutes rows under a
partition key (``ServerCaps.upsert``). Strong consistency, the collection's default, holds
across connections (a row inserted by one client was found by another's next query 20 times
out of 20).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memory_core.errors import MemoryEngineError

MIN_SERVER_VERSION = (2, 3, 5)
"""The oldest server these paths were run against (tests/test_server_contract.py). Older 2.3.x
may work, but nothing here was measured on them, and 2.2 lacks upsert and the COSINE metric."""
BM25_SINCE = (2, 5, 0)  # BM25 Function + SPARSE_FLOAT_VECTOR full-text search
UPSERT_SINCE = (2, 5, 0)
"""Upsert trusted with a partition key from here on: broken on 2.3.5 (measured, ``ServerCaps.upsert``);
2.4 was not measured, so it takes the safe path too."""
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class UnsupportedServer(MemoryEngineError):
    """The Milvus server is older than this code supports (or does not say its version)."""


@dataclass(frozen=True)
class ServerCaps:
    """Capabilities of the Milvus a store talks to."""

    kind: str  # "lite" or "server"
    version: tuple[int, int, int]
    version_text: str  # as the server reported it, e.g. "v2.3.5-lite"
    bm25: bool  # BM25 functions and sparse vectors: the keyword leg can run in Milvus
    partition_key: bool  # one collection, searches narrowed to the user's partition
    # ``upsert`` puts rows in the partition of their partition key. Measured false on 2.3.5: an
    # upserted row lands in the partition of its *primary key's* hash, so a search or query
    # filtered on its user (pruned to that user's partition) never sees it. Without it, an upsert
    # is a delete by id then an insert (not atomic: a reader in between misses the row).
    upsert: bool = True

    @property
    def label(self) -> str:
        return f"milvus-{self.kind} {'.'.join(map(str, self.version))}"


LITE_CAPS = ServerCaps(kind="lite", version=(2, 5, 1), version_text="milvus-lite", bm25=True, partition_key=False)
"""Milvus Lite 2.5.1: BM25 works; its partition key breaks every filtered query (module docstring
of milvus_store), so embedded stores shard users over collections instead."""


def parse_version(text: str) -> tuple[int, int, int]:
    """``"v2.3.5-lite"`` -> (2, 3, 5); ``UnsupportedServer`` when no version can be read."""
    match = _VERSION.search(text or "")
    if match is None:
        raise UnsupportedServer(f"the Milvus server reports no version we can read ({text!r}); "
                                f"this code supports Milvus {_dotted(MIN_SERVER_VERSION)} or newer")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def caps_for_version(text: str) -> ServerCaps:
    """Capabilities of a server that reports version ``text``; refuses one that is too old."""
    version = parse_version(text)
    if version < MIN_SERVER_VERSION:
        raise UnsupportedServer(
            f"Milvus server {text} is older than {_dotted(MIN_SERVER_VERSION)}, the oldest this code supports "
            f"(it needs upsert, the COSINE metric and a partition key); upgrade to Milvus 2.5 or newer")
    return ServerCaps(kind="server", version=version, version_text=text, bm25=version >= BM25_SINCE,
                      partition_key=True, upsert=version >= UPSERT_SINCE)


def read_server_caps(client: Any, timeout: int) -> ServerCaps:
    """Ask the server (``MilvusClient``) its version. Called inside the store's error guard, so a
    connection failure surfaces as ``BackendUnavailable``."""
    return caps_for_version(str(client.get_server_version(timeout=timeout)))


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


__all__ = ["BM25_SINCE", "LITE_CAPS", "MIN_SERVER_VERSION", "ServerCaps", "UnsupportedServer", "caps_for_version",
           "parse_version", "read_server_caps"]
