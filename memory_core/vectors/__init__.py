"""Vector store port and its Milvus adapter (Milvus Lite embedded, or a Milvus 2.5+ server)."""
from memory_core.vectors.base import VectorFilter, VectorHit, VectorRecord, VectorStore
from memory_core.vectors.filters import build_filter, validate_id
from memory_core.vectors.milvus_store import MilvusVectorStore, open_vector_store

__all__ = [
    "MilvusVectorStore",
    "VectorFilter",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "build_filter",
    "open_vector_store",
    "validate_id",
]
