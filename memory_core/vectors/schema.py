"""The collection layout of the vector store, by what the Milvus behind it can do.

One place builds it so Lite, a 2.5+ server and an older server differ only where they must:

* **partition key** (servers): ``user_id`` is the partition key over 64 partitions, so a
  filtered search scans one partition. Never on Lite 2.5.1 (it breaks every filtered query).
* **BM25** (Lite and servers 2.5+): ``text`` is analysed (``KEYWORD_ANALYZER``) and a BM25
  function fills the ``sparse`` field the keyword leg searches. An older server gets ``text`` as
  a plain VARCHAR (kept so the rows are the same everywhere) and no ``sparse`` field; the
  keyword leg then runs in SQL (``memory_core.sql_keyword``).
"""
from __future__ import annotations

import time
from typing import Any

import memory_core.vectors.pymilvus_import  # noqa: F401  (must precede pymilvus: MILVUS_URI may be a file path)
from pymilvus import DataType, Function, FunctionType, MilvusClient

from memory_core.errors import ValidationError
from memory_core.vectors.filters import MAX_MEMORY_ID_CHARS, MAX_USER_ID_CHARS

TEXT_MAX_BYTES = 65_535
SERVER_PARTITIONS = 64

KEYWORD_ANALYZER: dict[str, Any] = {
    "tokenizer": "jieba",
    "filter": ["lowercase", "cnalphanumonly", {"type": "stemmer", "language": "english"}],
}
"""The BM25 analyzer, chosen by measurement on Milvus Lite 2.5.1 (bench/milvus_probe.py).

Stored and query text may be raw mixed Chinese/English or pre-segmented by the pipeline
(jieba tokens joined by spaces, lowercased stemmed English). Findings:

* ``standard`` / ``whitespace`` / ``english``: a run of Chinese characters is one token, so
  "芒果" never matches raw "我喜欢吃芒果" (only pre-segmented text works).
* ``{"type": "chinese"}`` segments Chinese but is case-sensitive ("alice" misses "Alice")
  and ignores extra filters.
* ``jieba`` tokenizer alone emits the spaces of pre-segmented text as tokens, so a query
  "喜欢 芒果" matched every English document through the " " token.
* jieba + ``lowercase`` + ``cnalphanumonly`` (drops space and punctuation tokens) +
  English ``stemmer`` found the right documents for every zh / en / mixed query, raw or
  pre-segmented, and lets raw "hiking" meet pre-stemmed "hike" (Porter2 is near-idempotent,
  so text stemmed by the pipeline is unchanged by a second pass).
  Known loss: a token mixing letters, digits and punctuation ("ID-42", "v2.5") is dropped.

Kept in one constant so a server collection is created with exactly the same analyzer.
"""


def create_collection(client: MilvusClient, name: str, dim: int, *, partition_key: bool, bm25: bool,
                      timeout: int) -> None:
    """Create collection ``name`` (Strong consistency: a memory written now must be found by the
    next search) with a FLAT COSINE index on ``embedding`` and, with ``bm25``, the keyword index.
    It is not loaded yet."""
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("memory_id", DataType.VARCHAR, is_primary=True, max_length=MAX_MEMORY_ID_CHARS)
    user_kwargs: dict[str, Any] = {"is_partition_key": True} if partition_key else {}
    schema.add_field("user_id", DataType.VARCHAR, max_length=MAX_USER_ID_CHARS * 4, **user_kwargs)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=dim)
    text_kwargs: dict[str, Any] = (
        {"enable_analyzer": True, "enable_match": True, "analyzer_params": KEYWORD_ANALYZER} if bm25 else {})
    schema.add_field("text", DataType.VARCHAR, max_length=TEXT_MAX_BYTES, **text_kwargs)
    if bm25:
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("importance", DataType.INT64)
    schema.add_field("created_at", DataType.INT64)
    schema.add_field("expires_at", DataType.INT64)
    schema.add_field("memory_type", DataType.VARCHAR, max_length=32)
    schema.add_field("content_hash", DataType.VARCHAR, max_length=128)
    if bm25:
        schema.add_function(Function(name="text_bm25", function_type=FunctionType.BM25,
                                     input_field_names=["text"], output_field_names=["sparse"]))
    index_params = MilvusClient.prepare_index_params()
    index_params.add_index("embedding", index_type="FLAT", metric_type="COSINE")
    if bm25:
        index_params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    extra: dict[str, Any] = {"num_partitions": SERVER_PARTITIONS} if partition_key else {}
    # Indexes apart, not through create_collection(index_params=...): that also loads the
    # collection within ``timeout``, and a new 64-partition collection on a busy server took
    # longer than a 3 s request budget. The caller loads it with a budget of its own.
    client.create_collection(name, schema=schema, consistency_level="Strong", timeout=timeout, **extra)
    client.create_index(name, index_params, timeout=timeout, sync=False)
    wait_for_indexes(client, name, ["embedding", "sparse"] if bm25 else ["embedding"], timeout)


def wait_for_indexes(client: MilvusClient, name: str, fields: list[str], timeout: float,
                     first_look_s: float = 0.005, longest_wait_s: float = 0.5) -> None:
    """Return once Milvus says every index of ``fields`` is built; raise if one failed or the
    timeout passed. Why not ``create_index``'s own wait: pymilvus sleeps 0.5 s before each look,
    so each new collection cost at least 1 s (two indexes) although Milvus builds the index of an
    empty collection at once; a new user's first write into a new shard paid it. Here the first
    look is after 5 ms, each next one twice as late, up to the same 0.5 s."""
    deadline = time.monotonic() + timeout
    pause = first_look_s
    for field in fields:
        while True:
            info = client.describe_index(name, index_name=field, timeout=timeout)
            state = str((info or {}).get("state", ""))
            if state == "Finished":
                break
            if state == "Failed":
                raise ValidationError(f"Milvus could not build the {field!r} index of {name!r}: "
                                      f"{(info or {}).get('index_state_fail_reason', 'no reason given')}")
            if time.monotonic() + pause > deadline:
                raise TimeoutError(f"the {field!r} index of {name!r} was not built within {timeout} s (state {state!r})")
            time.sleep(pause)
            pause = min(pause * 2, longest_wait_s)


def check_collection(client: MilvusClient, name: str, dim: int, *, require_sparse: bool, timeout: int) -> bool:
    """Check that an existing collection was made by this store for ``dim``-d vectors; returns
    whether it has the BM25 ``sparse`` field. ``require_sparse`` (Lite, where every collection is
    made with it) refuses one without; on a server, a collection made before an upgrade to 2.5
    keeps working with the keyword leg in SQL until it is re-created."""
    info = client.describe_collection(name, timeout=timeout)
    fields = {f["name"]: f for f in info.get("fields", [])}
    embedding = fields.get("embedding")
    has_sparse = "sparse" in fields
    if embedding is None or "memory_id" not in fields or "user_id" not in fields or (require_sparse and not has_sparse):
        raise ValidationError(f"collection {name!r} was not created by this store")
    existing_dim = int(embedding.get("params", {}).get("dim", -1))
    if existing_dim != dim:
        raise ValidationError(
            f"collection {name!r} holds {existing_dim}-d vectors but the embedding "
            f"model produces {dim}-d ones; use another collection or re-index"
        )
    return has_sparse


__all__ = ["KEYWORD_ANALYZER", "SERVER_PARTITIONS", "TEXT_MAX_BYTES", "check_collection", "create_collection"]
