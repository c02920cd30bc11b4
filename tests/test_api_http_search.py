"""The HTTP API's add / get / list / search round trip, on the real model and Milvus Lite.

Apart from ``test_api_http.py`` (whose other tests run on the stand-ins in the fast lane,
``tests/lanes.py``) because its search, "which fruit should I avoid?" finding "I am allergic to
mango", takes the model's understanding, not shared words. Same server stack (the ``stack``
fixture, opened once for this module).
"""
from __future__ import annotations

import re

from tests import test_api_http as api
from tests.test_api_http import Stack, _add, _search, _user

stack = api.stack  # the module-scoped server fixture, opened here on the real parts


def test_add_get_list_search_with_score_parts_and_context_block(stack: Stack) -> None:
    user = _user()
    added = _add(stack, user, "I am allergic to mango, call me on 13800138000",
                 at="2024-01-01T09:00:00Z", metadata={"channel": "sms"}, session_id="s1")
    assert added["redactions"] == ["phone"] and added["created"] == added["memory_ids"] and not added["degraded"]
    memory_id = added["memory_ids"][0]
    got = stack.call("GET", f"/v1/memories/{memory_id}", params={"user_id": user}).json()
    # Getting a memory is administration: the number's placeholder (a keyed hash), not the number.
    assert got["user_id"] == user and re.fullmatch(r"I am allergic to mango, call me on \[PHONE#[0-9a-f]{6}\]",
                                                   got["content"])
    assert "sealed" not in got  # the ciphertext of the number is no one's to hold
    assert got["metadata"] == {"channel": "sms"} and got["session_id"] == "s1" and got["status"] == "active"
    assert got["created_at"].startswith("2024-01-01T09:00:00") and got["indexed"] is True
    listed = stack.call("GET", "/v1/memories", params={"user_id": user}).json()
    assert listed["total"] == 1 and [m["memory_id"] for m in listed["items"]] == [memory_id]

    found = _search(stack, user, "which fruit should I avoid?", at="2024-06-01T00:00:00Z")
    top = found["results"][0]
    assert top["memory_id"] == memory_id and top["user_id"] == user
    assert set(top["parts"]) >= {"relevance", "importance", "recency", "dense", "keyword", "rerank"}
    assert all(0.0 <= top["parts"][k] <= 1.0 for k in ("relevance", "importance", "recency"))
    # A search is the user's read: their own number comes back.
    assert found["context_block"] == "[2024-01-01] I am allergic to mango, call me on 13800138000"
    assert found["degraded"] is False and "total" in found["timings_ms"]
    # ``at`` is honoured: as of a time before it was written, there is nothing to find.
    assert _search(stack, user, "which fruit should I avoid?", at="2023-06-01T00:00:00Z")["results"] == []


def test_search_carries_the_constraints_that_bear_on_the_query(stack: Stack) -> None:
    """An assistant outside our app gets the user's allergy with a food request, in a list and a
    prompt block of its own, whatever the allergy's rank; a request it does not bear on gets none."""
    user = _user()
    allergy = _add(stack, user, "I'm allergic to mango, even a little makes my throat itch")["memory_ids"][0]
    _add(stack, user, "我对花生过敏，一点都不能碰")
    _add(stack, user, "I started learning the cello last spring")
    for query in ("any dessert ideas for tonight?", "推荐几个甜品吧"):
        found = _search(stack, user, query)
        assert allergy in [c["memory_id"] for c in found["constraints"]], query
        assert "mango" in found["constraint_block"] and "花生" in found["constraint_block"]
        assert all(c["user_id"] == user for c in found["constraints"])
    unrelated = _search(stack, user, "how do I tune a cello string?")
    assert unrelated["constraints"] == [] and unrelated["constraint_block"] == ""
