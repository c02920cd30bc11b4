"""Health check for containers and operators: ``python -m memory_core.health`` exits 0 when
SQL and the vector store answer (the cache and LLM may be degraded without failing it)."""
from __future__ import annotations

import json
import sys

from memory_core.config import Settings


def check(settings: Settings | None = None) -> dict[str, object]:
    """Probe SQL and Milvus directly, without loading any model (fast enough for a probe)."""
    from memory_core.cache import open_cache
    from memory_core.storage.database import create_sql_engine
    from memory_core.storage.repository import SqlRepository

    settings = settings or Settings()
    status: dict[str, object] = {}
    repo = SqlRepository(create_sql_engine(settings.resolved_database_url))
    status["sql"] = repo.ping()
    repo.engine.dispose()
    status["cache"] = open_cache(settings.redis_url, settings.cache_ttl_s).ping()
    if settings.milvus_is_server:
        try:
            from pymilvus import MilvusClient

            token = settings.milvus_token.get_secret_value() if settings.milvus_token else ""
            from memory_core.vectors.server_caps import caps_for_version

            client = MilvusClient(uri=settings.resolved_milvus_uri, token=token, timeout=5)
            client.list_collections(timeout=5)
            caps = caps_for_version(str(client.get_server_version(timeout=5)))  # refuses one too old
            status["vector_server_version"] = caps.version_text
            status["keyword_search"] = "milvus-bm25" if caps.bm25 else "sql"
            status["vectors"] = True
        except Exception as exc:
            status["vectors"] = False
            status["vectors_error"] = str(exc)[:300]
    else:
        # An embedded store is owned by the app process; it is healthy if its file is reachable.
        status["vectors"] = True
    status["ok"] = bool(status["sql"] and status["vectors"])
    return status


def main() -> int:
    result = check()
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
