"""Vector store port and its Milvus adapter (Milvus Lite embedded, or a Milvus server: 2.5+ in
production; an older one, down to 2.3.5, with the keyword leg in SQL)."""
from memory_core.vectors.base import KeywordSearchUnavailable, VectorFilter, VectorHit, VectorRecord, VectorStore
from memory_core.vectors.filters import build_filter, validate_id
from memory_core.vectors.milvus_store import MilvusVectorStore, open_vector_store
from memory_core.vectors.server_caps import ServerCaps, UnsupportedServer

__all__ = [
    "KeywordSearchUnavailable",
    "MilvusVectorStore",
    "ServerCaps",
    "UnsupportedServer",
    "VectorFilter",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "build_filter",
    "open_vector_store",
    "validate_id",
]
