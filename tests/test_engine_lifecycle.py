"""Expiry by importance, deduplication, edits with history, deletes, bad input."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory_core import FixedClock, MemoryQuery, MemoryStatus, MemoryType, NotFoundError, ValidationError

T0 = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)


def test_expiry_follows_importance(make_engine) -> None:
    clock = FixedClock(T0)
    engine = make_engine(clock=clock)
    hello = engine.add("u1", "你好呀").memory_ids[0]
    allergy = engine.add("u1", "我对花生过敏，吃了会呼吸困难").memory_ids[0]
    hobby = engine.add("u1", "I have been playing tennis on Saturdays with my neighbour").memory_ids[0]
    rec = {mid: engine.get(mid) for mid in (hello, allergy, hobby)}
    assert rec[hello].importance == 1 and rec[hello].expires_at == T0 + timedelta(days=30)
    assert rec[allergy].importance == 5 and rec[allergy].expires_at is None
    assert rec[hobby].importance in (2, 3) and rec[hobby].expires_at is not None

    # (No relevance threshold: this checks what expiry lets through, not what a greeting is about.)
    clock.set(T0 + timedelta(days=29))
    ids = {r.memory_id for r in engine.search("u1", "你好", top_k=10, min_relevance=0.0).results}
    assert hello in ids
    clock.set(T0 + timedelta(days=31))
    ids = {r.memory_id for r in engine.search("u1", "你好", top_k=10, min_relevance=0.0).results}
    assert hello not in ids and allergy in ids  # the core memory is always a candidate
    clock.set(T0 + timedelta(days=3650))
    ids = {r.memory_id for r in engine.search("u1", "过敏", top_k=10, min_relevance=0.0).results}
    assert ids == {allergy}


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_near_duplicates_update_instead_of_copy(make_engine, sql: str) -> None:
    clock = FixedClock(T0)
    engine = make_engine(sql=sql, clock=clock)
    first = engine.add("u1", "My favourite coffee is a flat white with oat milk", source="m1")
    clock.set(T0 + timedelta(days=3))
    second = engine.add("u1", "My favourite coffee is a flat white with oat milk.", source="m2")
    assert second.created == [] and second.deduplicated == first.memory_ids
    record = engine.get(first.memory_ids[0])
    assert record.access_count == 1 and record.source == ["m1", "m2"]
    assert record.updated_at == T0 + timedelta(days=3)
    assert [h.action for h in engine.history(record.memory_id)] == ["create", "dedup"]
    assert engine.vectors.count() == 1
    # Within one batch too.
    batch = engine.add_many([{"user_id": "u2", "content": "I live in Lisbon"}, {"user_id": "u2", "content": "I live in Lisbon"}])
    assert batch[0].created and batch[1].deduplicated == batch[0].memory_ids
    # Different users never deduplicate against each other.
    other = engine.add("u3", "My favourite coffee is a flat white with oat milk")
    assert other.created


def test_a_repeat_within_one_batch_that_raises_importance_reaches_the_vector_index(make_engine) -> None:
    """The batch write indexes the records it just stored; when a later copy in the same batch
    raised its twin's importance (and so its expiry), Milvus must get the raised values, not
    the ones first inserted: filters on importance and expiry run inside the vector search."""
    from memory_core import AddItem
    from memory_core.llm.offline import OfflineLLM
    from memory_core.types import Analysis
    from memory_core.vectors.base import VectorFilter

    class SaidAgainLater(OfflineLLM):
        """Rates a statement 2 the first day and 5 from the next day on (what an LLM might do
        with a fact the user keeps repeating)."""

        def analyze(self, text: str, now: datetime, context: str | None = None) -> Analysis:
            base = super().analyze(text, now, context)
            return Analysis(importance=2 if now < T0 + timedelta(hours=12) else 5, memory_type=base.memory_type,
                            entities=base.entities, summary=base.summary)

    engine = make_engine(clock=FixedClock(T0 + timedelta(days=2)), llm=SaidAgainLater())
    text = "I go to the climbing gym on Mondays"
    results = engine.add_many([AddItem("u1", text, at=T0), AddItem("u1", text, at=T0 + timedelta(days=1))])
    memory_id = results[0].memory_ids[0]
    assert results[1].deduplicated == [memory_id]
    record = engine.get(memory_id)
    assert record.importance == 5 and record.expires_at is None and record.vector_written
    vector = engine.embedder.embed_queries([text])[0]
    late = int((T0 + timedelta(days=400)).timestamp())  # past the 180 days importance 2 would live
    hits = engine.vectors.search_dense(vector, VectorFilter(user_id="u1", now=late, min_importance=5), 5)
    assert [h.memory_id for h in hits] == [memory_id]


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_edit_reembeds_and_lands_in_history(make_engine, sql: str) -> None:
    engine = make_engine(sql=sql)
    mid = engine.add("u1", "I work at Contoso as a data engineer").memory_ids[0]
    assert engine.search("u1", "Contoso job").results[0].memory_id == mid
    engine.update(mid, actor="staff:alice", content="I work at Fabrikam as a product manager", importance=4,
                  memory_type=MemoryType.DECLARATIVE)
    record = engine.get(mid)
    assert "Fabrikam" in record.content and record.importance == 4 and record.vector_written
    assert engine.vectors.user_hashes("u1") == {mid: record.content_hash}
    hits = engine.search("u1", "Fabrikam product manager").results
    assert hits and hits[0].memory_id == mid and "Fabrikam" in hits[0].content
    entry = engine.history(mid)[-1]
    assert entry.action == "update" and entry.actor == "staff:alice"
    assert "Contoso" in entry.before["content"] and "Fabrikam" in entry.after["content"]
    assert entry.before["importance"] != 4 or entry.after["importance"] == 4

    engine.expire(mid, actor="staff:bob")
    assert engine.get(mid).status is MemoryStatus.EXPIRED
    assert engine.search("u1", "Fabrikam product manager").results == []
    assert engine.vectors.count() == 0
    engine.restore(mid, actor="staff:bob")
    assert engine.search("u1", "Fabrikam product manager").results[0].memory_id == mid
    assert [h.action for h in engine.history(mid)] == ["create", "update", "expire", "restore"]
    assert {h.actor for h in engine.history(mid)[1:]} == {"staff:alice", "staff:bob"}

    engine.delete(mid, actor="staff:carol")
    with pytest.raises(NotFoundError):
        engine.get(mid)
    assert engine.history(mid)[-1].action == "delete" and engine.vectors.count() == 0


def test_delete_user_erases_everything(make_engine) -> None:
    engine = make_engine()
    for text in ["I live in Oslo", "My daughter is called Ingrid", "我喜欢喝乌龙茶"]:
        engine.add("gone", text)
    keep = engine.add("stays", "I live in Bergen").memory_ids[0]
    assert engine.delete_user("gone", actor="staff:dpo") == 3
    assert engine.list_memories(MemoryQuery(user_id="gone")).total == 0
    assert engine.vectors.user_hashes("gone") == {}
    assert engine.search("gone", "Oslo").results == []
    assert engine.get(keep).user_id == "stays"
    entries = engine.user_history("gone")
    assert entries[0].action == "delete_user" and entries[0].actor == "staff:dpo"
    assert all(e.before is None or "content" not in e.before for e in entries)


def test_bad_input_is_rejected_and_odd_input_is_kept(make_engine) -> None:
    engine = make_engine(max_input_chars=20_000)
    for bad in ["", "   \n\t ", "\x00\x01", "\u200b\u200c\ufeff", " \u200e\u2060 "]:
        with pytest.raises(ValidationError, match="empty"):
            engine.add("u1", bad)
    with pytest.raises(ValidationError):
        engine.add("u1", "x" * 20_001)
    with pytest.raises(ValidationError):
        engine.add("u1", 12345)  # type: ignore[arg-type]
    assert engine.list_memories(MemoryQuery()).total == 0
    odd = "Emoji 🙂 ZWJ 👩‍👩‍👧 RTL مرحبا, combining e\u0301, quotes \"'` and \\backslash, 中文"
    mid = engine.add("u1", odd + "\x07").memory_ids[0]
    assert engine.get(mid).content.startswith("Emoji 🙂")
    assert "\x07" not in engine.get(mid).content
    assert engine.search("u1", "مرحبا 中文").results[0].memory_id == mid
    assert engine.get(engine.add("u1", "\ufeffA byte-order mark is not content").memory_ids[0]).content[0] == "A"
    with pytest.raises(ValidationError, match="empty"):
        engine.search("u1", "\u200b")
    for top_k in (0, -3, 101, 2.5, True, None, "5", float("nan")):
        with pytest.raises(ValidationError, match="top_k"):
            engine.search("u1", "中文", top_k=top_k)  # type: ignore[arg-type]
    import numpy as np

    assert len(engine.search("u1", "中文", top_k=np.int64(1)).results) == 1


def test_long_text_is_chunked_within_model_limit(make_engine) -> None:
    engine = make_engine()
    sentences = [f"第{i}件事：我在周{i % 7 + 1}参加了编号为{i}的社区志愿活动，负责分发物资和登记。" for i in range(120)]
    result = engine.add("u1", "".join(sentences), source="doc-1")
    assert len(result.created) >= 3
    for mid in result.created:
        record = engine.get(mid)
        assert engine.embedder.count_tokens(record.content) <= 512
        assert record.source == ["doc-1"]
    assert engine.vectors.count() == len(result.created)


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_deleting_a_newer_fact_makes_the_one_it_replaced_current_again(make_engine, sql: str) -> None:
    """Newer wins marks "Lisbon" superseded by "Porto"; deleting "Porto" must not leave the user
    with no address and "Lisbon" pointing at a row that no longer exists."""
    clock = FixedClock(T0)
    engine = make_engine(sql=sql, clock=clock)
    lisbon = engine.add("u1", "I live in Lisbon now").created[0]
    clock.set(T0 + timedelta(days=1))
    porto = engine.add("u1", "I live in Porto now").created[0]
    assert engine.get(lisbon).superseded_by == porto
    assert [r.memory_id for r in engine.search("u1", "Where do I live?").results] == [porto]

    engine.delete(porto, actor="chat:alice", user_id="u1", note="user asked to forget it")
    back = engine.get(lisbon)
    assert back.status.value == "active" and back.superseded_by is None
    assert [r.content for r in engine.search("u1", "Where do I live?").results] == ["I live in Lisbon now"]
    last = engine.history(lisbon)[-1]
    assert last.action == "restore" and last.actor == "chat:alice" and porto in last.note


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_deleting_a_replaced_fact_hands_its_predecessors_to_its_successor(make_engine, sql: str) -> None:
    """Lisbon -> Porto -> Berlin: deleting the middle one must not bring Lisbon back beside Berlin."""
    clock = FixedClock(T0)
    engine = make_engine(sql=sql, clock=clock)
    ids = []
    for day, city in enumerate(["Lisbon", "Porto", "Berlin"]):
        clock.set(T0 + timedelta(days=day))
        ids.append(engine.add("u1", f"I live in {city} now").created[0])
    lisbon, porto, berlin = ids
    assert engine.get(lisbon).superseded_by == porto and engine.get(porto).superseded_by == berlin

    engine.delete(porto, actor="staff:lin", user_id="u1")
    assert engine.get(lisbon).status.value == "superseded" and engine.get(lisbon).superseded_by == berlin
    assert engine.history(lisbon)[-1].actor == "staff:lin"
    assert [r.content for r in engine.search("u1", "Where do I live?").results] == ["I live in Berlin now"]
    engine.delete(berlin, actor="staff:lin", user_id="u1")
    assert [r.content for r in engine.search("u1", "Where do I live?").results] == ["I live in Lisbon now"]
