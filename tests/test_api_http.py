"""The HTTP API against a real uvicorn on 127.0.0.1, on SQLite and on PostgreSQL: every
endpoint, hostile user ids, one tenant's key on another tenant's users, wrong / expired /
revoked keys, admin-only routes, the rate limit, the audit log, and JSON errors."""
from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import httpx
import pytest

from api.app import create_app
from api.keys import create_key
from api.settings import ApiSettings
from memory_core import MemoryEngine, MemoryQuery, MemoryStatus, open_memory
from memory_core.storage.api_keys import ApiKeyRepository
from tests.api_support import serving
from tests.conftest import backend_url, isolated_settings

A, B = "tenant-a", "tenant-b"


@dataclass
class Stack:
    engine: MemoryEngine
    keys: ApiKeyRepository
    http: httpx.Client
    key: dict[str, str]

    def call(self, method: str, path: str, key: str | None = "a", **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key[key]}"} if key else {}
        return self.http.request(method, path, headers=headers, **kwargs)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def stack(request, tmp_path_factory, embedder, model_cache_dir) -> Iterator[Stack]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp(f"api-{request.param}")
    url = backend_url(request)
    engine = open_memory(isolated_settings(tmp, model_cache_dir, url), embedder=embedder)
    keys = ApiKeyRepository(engine.repo.engine)
    key = {"a": create_key(keys, "a-app", A), "a_admin": create_key(keys, "a-admin", A, admin=True),
           "b": create_key(keys, "b-app", B), "b_admin": create_key(keys, "b-admin", B, admin=True)}
    # No default limit here (the rate-limit test gives its key one); key rows are re-read on
    # every request so a revocation shows at once; an hour-long window so a test's count never
    # straddles two windows.
    settings = ApiSettings(_env_file=None, api_rate_limit_per_min=0, api_key_cache_s=0, api_rate_window_s=3600)
    with serving(create_app(engine, settings=settings)) as base, httpx.Client(base_url=base, timeout=120) as http:
        yield Stack(engine, keys, http, key)
    engine.close()


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def _add(stack: Stack, user: str, content: str, key: str = "a", **extra: Any) -> dict[str, Any]:
    response = stack.call("POST", "/v1/memories", key, json={"user_id": user, "content": content, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def _search(stack: Stack, user: str, query: str, key: str = "a", **extra: Any) -> dict[str, Any]:
    response = stack.call("POST", "/v1/search", key, json={"user_id": user, "query": query, **extra})
    assert response.status_code == 200, response.text
    return response.json()


# ---- the endpoints ---------------------------------------------------------------------------------
def test_health_needs_no_key_and_docs_describe_every_route(stack: Stack) -> None:
    health = stack.call("GET", "/v1/health", key=None)
    assert health.status_code == 200 and health.json()["sql"] is True and health.json()["degraded"] is False
    docs = stack.call("GET", "/docs", key=None)
    assert docs.status_code == 200 and "swagger-ui-bundle.js" in docs.text
    assert "http://" not in docs.text and "https://" not in docs.text  # every asset from the API itself
    assert stack.call("GET", "/static-offline-docs/swagger-ui-bundle.js", key=None).status_code == 200
    spec = stack.call("GET", "/openapi.json", key=None).json()
    for path in ("/v1/memories", "/v1/memories/batch", "/v1/search", "/v1/memories/{memory_id}",
                 "/v1/memories/{memory_id}/expire", "/v1/memories/{memory_id}/restore", "/v1/admin/history",
                 "/v1/admin/erase", "/v1/admin/reconcile", "/v1/users", "/v1/health"):
        assert path in spec["paths"], path
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_search_filters_are_applied(stack: Stack) -> None:
    user = _user()
    _add(stack, user, "I went hiking in the Alps", at="2024-03-02T10:00:00Z")
    _add(stack, user, "I went hiking in Patagonia", at="2024-05-02T10:00:00Z")
    both = _search(stack, user, "hiking trips", at="2024-06-01T00:00:00Z")
    assert len(both["results"]) == 2
    spring = _search(stack, user, "hiking trips", at="2024-06-01T00:00:00Z",
                     filters={"time_from": "2024-04-01T00:00:00Z", "time_to": "2024-06-01T00:00:00Z"})
    assert [r["content"] for r in spring["results"]] == ["I went hiking in Patagonia"]
    none = _search(stack, user, "hiking trips", filters={"memory_types": ["procedural"]})
    assert none["results"] == []
    bad = stack.call("POST", "/v1/search", json={"user_id": user, "query": "x", "filters": {"min_importance": 9}})
    assert bad.status_code == 400 and "min_importance" in bad.json()["message"]


def test_update_expire_restore_delete(stack: Stack) -> None:
    user = _user()
    memory_id = _add(stack, user, "I live in Lisbon")["memory_ids"][0]
    path, params = f"/v1/memories/{memory_id}", {"user_id": user}
    edited = stack.call("PATCH", path, params=params, json={"content": "I live in Porto, mail me at a.b@example.com",
                                                            "importance": 4, "note": "moved"})
    assert edited.status_code == 200, edited.text
    # Administration reads the placeholder (tagged with a keyed hash of the address), never the address.
    assert re.fullmatch(r"I live in Porto, mail me at \[EMAIL#[0-9a-f]{6}\]", edited.json()["content"])
    assert "example.com" not in edited.text and edited.json()["importance"] == 4
    never = stack.call("PATCH", path, params=params, json={"expires_at": None}).json()
    assert never["expires_at"] is None
    assert stack.call("PATCH", path, params=params, json={"importance": 9}).status_code == 400
    assert stack.call("PATCH", path, params=params, json={"colour": "red"}).status_code == 400

    expired = stack.call("POST", f"{path}/expire", params=params, json={"note": "stale"})
    assert expired.status_code == 200 and expired.json()["status"] == MemoryStatus.EXPIRED.value
    assert _search(stack, user, "where do I live")["results"] == []
    restored = stack.call("POST", f"{path}/restore", params=params)
    assert restored.status_code == 200 and restored.json()["status"] == "active"
    assert [r["memory_id"] for r in _search(stack, user, "where do I live")["results"]] == [memory_id]

    assert stack.call("DELETE", path, params=params).status_code == 204
    gone = stack.call("GET", path, params=params)
    assert gone.status_code == 404 and gone.json() == {"error": "not_found", "degraded": False,
                                                       "message": f"memory {memory_id!r} not found"}


def test_add_many_validates_every_item_before_writing_any(stack: Stack) -> None:
    user, other = _user(), _user()
    batch = stack.call("POST", "/v1/memories/batch", json={"items": [
        {"user_id": user, "content": "I play the cello"}, {"user_id": other, "content": "I keep bees"}]})
    assert batch.status_code == 201, batch.text
    assert [len(r["created"]) for r in batch.json()["results"]] == [1, 1]
    refused = stack.call("POST", "/v1/memories/batch", json={"items": [
        {"user_id": user, "content": "I also play the piano"}, {"user_id": user, "content": "   "}]})
    assert refused.status_code == 400 and "empty" in refused.json()["message"]
    assert stack.call("GET", "/v1/memories", params={"user_id": user}).json()["total"] == 1
    assert stack.call("POST", "/v1/memories/batch", json={"items": []}).status_code == 400


def test_users_lists_only_the_callers_tenant(stack: Stack) -> None:
    mine, theirs = _user(), _user()
    _add(stack, mine, "I like jazz")
    _add(stack, theirs, "I like opera", key="b")
    a_users = {u["user_id"] for u in stack.call("GET", "/v1/users").json()["users"]}
    b_users = {u["user_id"] for u in stack.call("GET", "/v1/users", key="b").json()["users"]}
    assert mine in a_users and theirs not in a_users and theirs in b_users and mine not in b_users
    assert not any(u.startswith("t:") for u in a_users | b_users)


# ---- isolation -------------------------------------------------------------------------------------
HOSTILE_IDS = ['" or user_id != "', "t:tenant-b:victim", "../../etc/passwd", "a/b?c=d&e#f", "用户 😀 ü",
               "' OR '1'='1", "*", "x" * 200, "tenant-b", ":"]


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_hostile_user_ids_stay_inside_the_callers_namespace(stack: Stack, hostile: str) -> None:
    victim_note = f"victim secret {uuid.uuid4().hex[:6]}"
    _add(stack, "victim", victim_note, key="b")
    mine = f"hostile note {uuid.uuid4().hex[:6]}"
    _add(stack, hostile, mine)
    found = _search(stack, hostile, "victim secret note", top_k=20)
    contents = {r["content"] for r in found["results"]}
    assert mine in contents and victim_note not in contents and victim_note not in found["context_block"]
    assert all(r["user_id"] == hostile for r in found["results"])
    stored = stack.engine.list_memories(MemoryQuery(user_id=f"t:{A}:{hostile}", limit=200)).items
    assert mine in {m.content for m in stored}
    # Tenant B's own user still holds only what B wrote.
    b_found = _search(stack, "victim", "secret note", key="b", top_k=20)
    assert mine not in {r["content"] for r in b_found["results"]}


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "line\nbreak", "\x7f", "x" * 246])
def test_invalid_user_ids_are_refused_and_nothing_is_stored(stack: Stack, bad: str) -> None:
    before = len(stack.engine.users())
    response = stack.call("POST", "/v1/memories", json={"user_id": bad, "content": "should not be stored"})
    assert response.status_code == 400 and response.json()["error"] == "validation_error"
    assert "user_id" in response.json()["message"]
    assert len(stack.engine.users()) == before


def test_a_key_of_tenant_a_cannot_reach_tenant_b_users(stack: Stack) -> None:
    victim = _user()
    b_id = _add(stack, victim, "B's private diagnosis", key="b")["memory_ids"][0]
    # Every read and write by A on the same user id, or on B's memory id, finds nothing.
    assert _search(stack, victim, "diagnosis")["results"] == []
    assert _search(stack, f"t:{B}:{victim}", "diagnosis")["results"] == []
    assert stack.call("GET", "/v1/memories", params={"user_id": victim}).json()["total"] == 0
    path, params = f"/v1/memories/{b_id}", {"user_id": victim}
    assert stack.call("GET", path, params=params).status_code == 404
    assert stack.call("PATCH", path, params=params, json={"content": "overwritten by A"}).status_code == 404
    assert stack.call("POST", f"{path}/expire", params=params).status_code == 404
    assert stack.call("DELETE", path, params=params).status_code == 404
    assert stack.call("GET", "/v1/admin/history", "a_admin", params={**params, "memory_id": b_id}).status_code == 404
    erased = stack.call("POST", "/v1/admin/erase", "a_admin", json={"user_id": victim})
    assert erased.status_code == 200 and erased.json()["memories_erased"] == 0
    # B's memory is untouched.
    still = stack.call("GET", path, "b", params=params).json()
    assert still["content"] == "B's private diagnosis" and still["status"] == "active"
    assert [r["memory_id"] for r in _search(stack, victim, "diagnosis", key="b")["results"]] == [b_id]


# ---- keys ----------------------------------------------------------------------------------------
def test_missing_wrong_expired_and_revoked_keys_are_refused(stack: Stack) -> None:
    body = {"user_id": "someone", "query": "anything"}
    missing = stack.call("POST", "/v1/search", key=None, json=body)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert "Authorization: Bearer" in missing.json()["message"]
    real = stack.key["a"]
    wrong_secret = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    for token in ("not-a-key", wrong_secret, "ltm_0000000000000000_" + "A" * 43):
        refused = stack.http.post("/v1/search", json=body, headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 401 and refused.json()["message"] == "invalid API key", token
    basic = stack.http.post("/v1/search", json=body, headers={"Authorization": f"Basic {real}"})
    assert basic.status_code == 401

    expired = create_key(stack.keys, f"old-{uuid.uuid4().hex[:6]}", A,
                         expires_at=datetime.now(timezone.utc) - timedelta(days=1))
    answer = stack.http.post("/v1/search", json=body, headers={"Authorization": f"Bearer {expired}"})
    assert answer.status_code == 401 and "expired" in answer.json()["message"]

    name = f"leaving-{uuid.uuid4().hex[:6]}"
    leaving = create_key(stack.keys, name, A)
    headers = {"Authorization": f"Bearer {leaving}"}
    assert stack.http.post("/v1/search", json=body, headers=headers).status_code == 200
    assert stack.keys.revoke(name, datetime.now(timezone.utc))
    revoked = stack.http.post("/v1/search", json=body, headers=headers)
    assert revoked.status_code == 401 and "revoked" in revoked.json()["message"]


def test_admin_routes_need_an_admin_key(stack: Stack) -> None:
    user = _user()
    memory_id = _add(stack, user, "I collect stamps")["memory_ids"][0]
    for method, path, kwargs in (("GET", "/v1/admin/history", {"params": {"user_id": user}}),
                                 ("POST", "/v1/admin/erase", {"json": {"user_id": user}}),
                                 ("POST", "/v1/admin/reconcile", {"json": {}})):
        refused = stack.call(method, path, "a", **kwargs)
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden", path
    assert stack.call("GET", f"/v1/memories/{memory_id}", params={"user_id": user}).status_code == 200


def test_history_erase_and_reconcile_for_admins(stack: Stack) -> None:
    user = _user()
    memory_id = _add(stack, user, "My dog is called Rex")["memory_ids"][0]
    stack.call("PATCH", f"/v1/memories/{memory_id}", params={"user_id": user}, json={"importance": 2})
    entries = stack.call("GET", "/v1/admin/history", "a_admin", params={"user_id": user, "memory_id": memory_id})
    assert entries.status_code == 200
    actions = [(e["action"], e["actor"], e["user_id"]) for e in entries.json()["entries"]]
    assert ("create", "api:a-app", user) in actions and ("update", "api:a-app", user) in actions
    update = next(e for e in entries.json()["entries"] if e["action"] == "update")
    assert update["before"]["importance"] != 2 and update["after"]["importance"] == 2

    reconciled = stack.call("POST", "/v1/admin/reconcile", "a_admin", json={"user_id": user})
    assert reconciled.status_code == 200 and reconciled.json()["users"] == 1 and reconciled.json()["errors"] == []
    whole_tenant = stack.call("POST", "/v1/admin/reconcile", "a_admin").json()
    assert whole_tenant["users"] == sum(1 for u, _ in stack.engine.users() if u.startswith(f"t:{A}:"))

    erased = stack.call("POST", "/v1/admin/erase", "a_admin", json={"user_id": user, "note": "user asked"})
    assert erased.json() == {"user_id": user, "memories_erased": 1}
    assert stack.call("GET", "/v1/memories", params={"user_id": user}).json()["total"] == 0
    log = stack.call("GET", "/v1/admin/history", "a_admin", params={"user_id": user}).json()["entries"]
    assert any(e["action"] == "delete_user" and e["actor"] == "api:a-admin" for e in log)
    assert all(e["before"] is None or "content" not in e["before"] for e in log)  # erased from history too


def test_writes_and_admin_calls_are_logged_with_the_key_name(stack: Stack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="api.audit")
    user = _user()
    _add(stack, user, "I take the 8:15 train")
    _search(stack, user, "train")
    stack.call("POST", "/v1/admin/erase", "b_admin", json={"user_id": user})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len([r for r in caplog.records if r.name == "api.audit"]) < 2:
        time.sleep(0.05)
    lines = [r.getMessage() for r in caplog.records if r.name == "api.audit"]
    assert any(m.startswith("POST /v1/memories by key a-app (tenant tenant-a) -> 201") for m in lines), lines
    assert any(m.startswith("POST /v1/admin/erase by key b-admin (tenant tenant-b, admin) -> 200") for m in lines)
    assert not any("/v1/search" in m for m in lines)  # reads are not audit events


# ---- rate limit, errors ------------------------------------------------------------------------------
def test_rate_limit_per_key(stack: Stack) -> None:
    limited = create_key(stack.keys, f"small-{uuid.uuid4().hex[:6]}", A, rate_limit_per_min=3)
    headers = {"Authorization": f"Bearer {limited}"}
    codes = [stack.http.get("/v1/users", headers=headers).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = stack.http.get("/v1/users", headers=headers)
    assert refused.json()["error"] == "rate_limited" and int(refused.headers["retry-after"]) >= 1
    assert stack.call("GET", "/v1/users").status_code == 200  # other keys are not affected


def test_malformed_requests_get_json_errors(stack: Stack) -> None:
    raw = stack.http.post("/v1/search", content=b"{not json", headers={"Authorization": f"Bearer {stack.key['a']}",
                                                                      "Content-Type": "application/json"})
    assert raw.status_code == 400 and raw.json()["error"] == "validation_error"
    missing = stack.call("POST", "/v1/memories", json={"user_id": "x"})
    assert missing.status_code == 400 and "content" in missing.json()["message"]
    too_long = stack.call("POST", "/v1/memories", json={"user_id": "x", "content": "y" * 100_001})
    assert too_long.status_code == 400 and "too long" in too_long.json()["message"]
    bad_id = stack.call("GET", "/v1/memories/a'b", params={"user_id": "x"})
    assert bad_id.status_code == 400 and "memory_id" in bad_id.json()["message"]
    no_user = stack.call("GET", "/v1/memories/abc")
    assert no_user.status_code == 400 and "user_id" in no_user.json()["message"]


def test_min_relevance_passes_through_to_the_engine(stack: Stack) -> None:
    """A caller's threshold reaches the engine's search and comes back in the answer, beside the
    higher one memories past their date were held to; out of range is a 400."""
    user = _user()
    _add(stack, user, "I am learning Korean")
    answer = stack.call("POST", "/v1/search", json={"user_id": user, "query": "languages", "min_relevance": 0.2})
    assert answer.status_code == 200
    body = answer.json()
    assert body["min_relevance"] == 0.2
    assert body["faded_min_relevance"] == max(0.2, stack.engine.settings.faded_min_relevance)
    default = stack.call("POST", "/v1/search", json={"user_id": user, "query": "languages"}).json()
    assert default["min_relevance"] == stack.engine.settings.min_relevance
    assert stack.call("POST", "/v1/search", json={"user_id": user, "query": "x", "min_relevance": 2}).status_code == 400

    seen: list[float | None] = []

    class ThresholdEngine(MemoryEngine):
        def search(self, user_id, query, top_k=5, context=None, filters=None, at=None, options=None,  # type: ignore[override]
                   min_relevance=None):  # noqa: ANN001
            seen.append(min_relevance)
            return MemoryEngine.search(self, user_id, query, top_k=top_k, context=context, filters=filters, at=at,
                                       options=options)

    e = stack.engine
    threshold = ThresholdEngine(e.settings, e.repo, e.vectors, e.embedder, e.llm, e.cache, e.clock, e.reranker)
    try:
        with serving(create_app(threshold, settings=ApiSettings(_env_file=None, api_rate_limit_per_min=0))) as base:
            response = httpx.post(f"{base}/v1/search", json={"user_id": user, "query": "languages", "min_relevance": 0.4},
                                  headers={"Authorization": f"Bearer {stack.key['a']}"}, timeout=60)
    finally:
        threshold.recorder.close()
    assert response.status_code == 200 and seen == [0.4]
