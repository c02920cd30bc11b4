"""The design's scenario end to end, on both SQL backends and both caches."""
from __future__ import annotations

import re

from datetime import datetime, timezone

import pytest

from memory_core import FixedClock, MemoryStatus

MANGO = "用户张三对芒果过敏，不要推荐任何芒果相关的食品，收货地址是北京市朝阳区xxx小区，电话13800138000"
CHATTER = [
    "今天天气不错，我们聊聊天吧",
    "我最近在学吉他，每周练习三次",
    "周末去了一趟颐和园，人很多",
    "我喜欢看科幻电影，尤其是星际穿越",
    "工作上有个项目要在月底前交付",
    "I usually go jogging in the morning before work",
    "My sister lives in Shanghai and works as a doctor",
]


@pytest.mark.parametrize("sql,cache", [("sqlite", "memory"), ("postgres", "redis")])
def test_mango_allergy_surfaces_for_snack_request(make_engine, sql: str, cache: str) -> None:
    clock = FixedClock(datetime(2024, 1, 1, 9, 0, tzinfo=timezone.utc))
    engine = make_engine(sql=sql, cache=cache, clock=clock)
    added = engine.add("zhangsan", MANGO)
    assert added.created and not added.pending_index
    assert "phone" in added.redactions
    for i, text in enumerate(CHATTER):
        engine.add("zhangsan", text, at=datetime(2024, 2, 1 + i, tzinfo=timezone.utc))

    stored = engine.get(added.memory_ids[0])
    assert "13800138000" not in stored.content
    assert re.search(r"\[PHONE#[0-9a-f]{6}\]", stored.content)  # a keyed hash of the number, not the number
    assert stored.importance == 5
    assert stored.status is MemoryStatus.ACTIVE and stored.vector_written
    assert stored.expires_at is None  # importance 5 never expires

    clock.set(datetime(2024, 6, 1, tzinfo=timezone.utc))
    response = engine.search("zhangsan", "给我推荐点好吃的零食", top_k=5)
    ids = [r.memory_id for r in response.results]
    assert added.memory_ids[0] in ids, response.results
    hit = next(r for r in response.results if r.memory_id == added.memory_ids[0])
    assert 0 <= hit.parts.relevance <= 1 and hit.parts.importance == 1.0 and 0 < hit.parts.recency < 1
    assert hit.created_at.date().isoformat() == "2024-01-01"
    assert "[2024-01-01]" in response.context_block and "芒果" in response.context_block
    assert "13800138000" not in response.context_block
    assert set(response.timings_ms) >= {"rewrite", "embed", "search", "rerank", "fetch", "total"}
    assert response.reranker is None and not response.cache_hit

    # Nothing of the phone number reached the vector store's text either.
    again = engine.search("zhangsan", "电话 13800138000", top_k=5)
    assert all("13800138000" not in r.content for r in again.results)
    assert "13800138000" not in again.context_block
    # Only the user's own read (engine.reveal) gives it back.
    assert "电话13800138000" in engine.reveal(again).context_block


def test_offline_reply_avoids_mango(make_engine) -> None:
    from memory_core.llm.base import ChatMessage

    clock = FixedClock(datetime(2024, 1, 1, tzinfo=timezone.utc))
    engine = make_engine(clock=clock)
    engine.add("zhangsan", MANGO)
    clock.set(datetime(2024, 6, 1, tzinfo=timezone.utc))
    response = engine.search("zhangsan", "给我推荐点好吃的零食")
    assert engine.llm.offline
    reply = "".join(engine.llm.reply([ChatMessage("user", "给我推荐点好吃的零食")], response.context_block, clock.now()))
    assert "离线" in reply
    # It may name the allergy, but it must not recommend mango: every mention is about avoiding it.
    recommended = reply.split("过敏")[-1]
    assert "芒果干" not in reply and "芒果" not in recommended.replace("避开芒果", "")
