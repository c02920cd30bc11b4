"""The API when a backend is down, against a real uvicorn: the vector store down (the engine
answers degraded: 200/201 with ``degraded``), and PostgreSQL cut off through a relay (503 with
the plain message, for the engine's calls, the key lookup and the health check)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import httpx
import pytest

from api.app import create_app
from api.keys import create_key
from api.settings import ApiSettings
from memory_core import MemoryEngine, open_memory
from memory_core.storage.api_keys import ApiKeyRepository
from services.outage import DATABASE_UNAVAILABLE
from tests.api_support import serving
from tests.conftest import backend_url, isolated_settings
from tests.faults import DownStore, PostgresRelay


@dataclass
class Down:
    engine: MemoryEngine
    store: DownStore
    relay: PostgresRelay | None
    http: httpx.Client
    headers: dict[str, str]
    spare_headers: dict[str, str]  # a key never used before the cut: not in the key cache


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def down(request, tmp_path_factory, embedder, model_cache_dir) -> Iterator[Down]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp(f"api-down-{request.param}")
    relay = PostgresRelay() if request.param == "postgres" else None
    url = relay.url_through(backend_url(request)) if relay else ""
    settings = isolated_settings(tmp, model_cache_dir, url)
    store = DownStore(settings.resolved_milvus_uri, "memories", embedder.dim)
    store.down = False
    engine = open_memory(settings, embedder=embedder, vectors=store)
    keys = ApiKeyRepository(engine.repo.engine)
    key, spare = create_key(keys, "app", "acme"), create_key(keys, "spare", "acme")
    api = ApiSettings(_env_file=None, api_rate_limit_per_min=0, api_key_cache_s=600)
    with serving(create_app(engine, settings=api)) as base, httpx.Client(base_url=base, timeout=120) as http:
        yield Down(engine, store, relay, http, {"Authorization": f"Bearer {key}"}, {"Authorization": f"Bearer {spare}"})
    store.down = False
    engine.close()
    if relay:
        relay.close()


def test_vector_store_down_answers_degraded(down: Down) -> None:
    first = down.http.post("/v1/memories", headers=down.headers, json={"user_id": "kim", "content": "I am allergic to shellfish"})
    assert first.status_code == 201 and first.json()["degraded"] is False
    down.store.down = True
    try:
        found = down.http.post("/v1/search", headers=down.headers, json={"user_id": "kim", "query": "allergic shellfish"})
        assert found.status_code == 200 and found.json()["degraded"] is True
        assert [r["content"] for r in found.json()["results"]] == ["I am allergic to shellfish"]
        added = down.http.post("/v1/memories", headers=down.headers, json={"user_id": "kim", "content": "I drink oat milk"})
        assert added.status_code == 201 and added.json()["degraded"] is True
        assert added.json()["pending_index"] == added.json()["created"] != []
        health = down.http.get("/v1/health")
        assert health.status_code == 200 and health.json()["status"] == "degraded" and health.json()["degraded"] is True
    finally:
        down.store.down = False
    assert down.http.get("/v1/health").json()["status"] == "ok"


@pytest.mark.parametrize("down", ["postgres"], indirect=True)
def test_sql_down_is_503_with_a_plain_message(down: Down) -> None:
    """Last in this file: the relay stays closed."""
    assert down.relay is not None
    ok = down.http.post("/v1/search", headers=down.headers, json={"user_id": "kim", "query": "shellfish"})
    assert ok.status_code == 200  # the key is now cached
    down.relay.close()
    for method, path, body in (("POST", "/v1/search", {"user_id": "kim", "query": "shellfish"}),
                               ("POST", "/v1/memories", {"user_id": "kim", "content": "I moved to Oslo"}),
                               ("GET", "/v1/memories?user_id=kim", None)):
        answer = down.http.request(method, path, headers=down.headers, json=body)
        assert answer.status_code == 503, (path, answer.text)
        assert answer.json() == {"error": "unavailable", "message": DATABASE_UNAVAILABLE, "degraded": False}
        assert answer.headers["retry-after"] == "5"
    # A key not cached needs SQL to be checked: 503 too, never a 401 that blames the key.
    lookup = down.http.post("/v1/search", headers=down.spare_headers, json={"user_id": "kim", "query": "x"})
    assert lookup.status_code == 503 and lookup.json()["message"] == DATABASE_UNAVAILABLE
    health = down.http.get("/v1/health")
    assert health.status_code == 503 and health.json()["status"] == "unavailable" and health.json()["sql"] is False
