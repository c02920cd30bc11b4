"""Merging redundant memories: preview, apply (nothing deleted), undo, the weekly job, and the
guard against an LLM that names ids it was not shown. Real Milvus Lite, SQLite and PostgreSQL."""
from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta, timezone
from typing import Iterator, Sequence

import pytest

from memory_core import (
    FixedClock,
    MemoryEngine,
    MemoryStatus,
    RetrievalOptions,
    ValidationError,
    lifecycle_ops,
)
from memory_core.llm.base import MemoryBrief, MergeProposal
from memory_core.llm.offline import OfflineLLM
from memory_core.maintenance import apply_merge, merge_all, plan_merges, undo_merge
from tests.conftest import open_backend_engine

T0 = datetime(2024, 5, 1, 8, tzinfo=timezone.utc)
QUIET = RetrievalOptions(use_cache=False, record=False)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def engine(request, tmp_path_factory, embedder, model_cache_dir) -> Iterator[MemoryEngine]:  # type: ignore[no-untyped-def]
    # The merge job is for redundancy the write did not resolve: memories written before a
    # restatement replaced what it repeats (memory_core.llm.offline.updates.restates and
    # .restatements.says_again), or by a model that judged otherwise. The store is built that way here.
    patch = pytest.MonkeyPatch()
    patch.setattr("memory_core.llm.offline.slots.restates", lambda newer, older: False)
    patch.setattr("memory_core.llm.offline.slots.says_again", lambda newer, older: False)
    eng = open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, "merge", T0)
    yield eng
    eng.close()
    patch.undo()


def _add(engine: MemoryEngine, user: str, text: str, at: datetime, source: str | None = None) -> str:
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(at)
    result = engine.add(user, text, source=source)
    assert len(result.created) == 1, f"{text!r} was absorbed instead of stored: {result}"
    return result.created[0]


def _ids(engine: MemoryEngine, user: str, query: str, k: int = 10) -> list[str]:
    return [r.memory_id for r in engine.search(user, query, top_k=k, options=QUIET).results]


def test_plan_apply_and_undo(engine: MemoryEngine) -> None:
    user = f"m-{uuid.uuid4().hex[:8]}"
    anna_a = _add(engine, user, "My sister Anna lives in Berlin", T0, source="msg-1")
    tennis_a = _add(engine, user, "我妹妹在柏林工作", T0 + timedelta(days=1), source="msg-2")
    anna_b = _add(engine, user, "My sister Anna lives in Berlin and works as a nurse there",
                  T0 + timedelta(days=5), source="msg-3")
    tennis_b = _add(engine, user, "我妹妹在柏林工作，是一名护士", T0 + timedelta(days=8), source="msg-4")
    peanuts = _add(engine, user, "I am allergic to peanuts", T0 + timedelta(days=9))
    spicy_no = _add(engine, user, "我不吃辣", T0 + timedelta(days=10))
    spicy_yes = _add(engine, user, "我能吃一点辣", T0 + timedelta(days=11))  # a contradiction, not a duplicate
    assert engine.get(spicy_no).superseded_by == spicy_yes  # newer wins on write, so it is no merge candidate
    engine.clock.set(T0 + timedelta(days=20))
    vectors_before = engine.vectors.user_hashes(user)

    plans = plan_merges(engine.parts, user)
    by_ids = {frozenset(p.memory_ids): p for p in plans}
    assert set(by_ids) == {frozenset({anna_a, anna_b}), frozenset({tennis_a, tennis_b})}
    anna = by_ids[frozenset({anna_a, anna_b})]
    assert anna.memory_ids == (anna_a, anna_b)  # oldest first
    assert anna.texts == ("My sister Anna lives in Berlin", "My sister Anna lives in Berlin and works as a nurse there")
    assert anna.merged_text == "My sister Anna lives in Berlin and works as a nurse there"
    assert "anna" in anna.shared_entities and anna.similarity >= engine.settings.merge_entity_similarity
    tennis = by_ids[frozenset({tennis_a, tennis_b})]
    assert tennis.merged_text == "我妹妹在柏林工作，是一名护士"
    # A preview changes nothing.
    assert engine.vectors.user_hashes(user) == vectors_before
    assert all(engine.get(m).status is MemoryStatus.ACTIVE for m in (anna_a, anna_b, peanuts, spicy_yes))

    merged_id = apply_merge(engine.parts, anna, actor="staff:dana")
    merged = engine.get(merged_id)
    assert merged.status is MemoryStatus.ACTIVE and merged.content == anna.merged_text
    assert merged.merged_from == [anna_a, anna_b]
    assert merged.source == ["msg-1", "msg-3"]
    assert merged.created_at == T0  # the earliest original's
    assert merged.importance == max(engine.get(anna_a).importance, engine.get(anna_b).importance)
    for original in (anna_a, anna_b):
        record = engine.get(original)
        assert record.status is MemoryStatus.SUPERSEDED and record.superseded_by == merged_id
        entry = engine.history(original)[-1]
        assert entry.action == "merge" and entry.actor == "staff:dana" and merged_id in entry.note
    assert [h.action for h in engine.history(merged_id)] == ["merge"]
    hashes = engine.vectors.user_hashes(user)
    assert merged_id in hashes and anna_a not in hashes and anna_b not in hashes
    found = _ids(engine, user, "what does my sister Anna do?")
    assert found[0] == merged_id and anna_a not in found and anna_b not in found

    with pytest.raises(ValidationError):  # the plan is stale now
        apply_merge(engine.parts, anna, actor="staff:dana")

    restored = undo_merge(engine.parts, merged_id, actor="staff:erin")
    assert sorted(restored) == sorted([anna_a, anna_b])
    assert engine.get(merged_id).status is MemoryStatus.SUPERSEDED
    assert [h.action for h in engine.history(merged_id)] == ["merge", "unmerge"]
    for original in (anna_a, anna_b):
        record = engine.get(original)
        assert record.status is MemoryStatus.ACTIVE and record.superseded_by is None
        assert engine.history(original)[-1].action == "restore"
    hashes = engine.vectors.user_hashes(user)
    assert merged_id not in hashes and {anna_a, anna_b} <= set(hashes)
    found = _ids(engine, user, "what does my sister Anna do?")
    assert merged_id not in found and anna_b in found
    with pytest.raises(ValidationError):
        undo_merge(engine.parts, merged_id, actor="staff:erin")


class _OverreachingLLM(OfflineLLM):
    """An LLM whose merge answers name ids it was not shown, repeat ids, or give one id."""

    def __init__(self, foreign_id: str) -> None:
        super().__init__()
        self.foreign_id = foreign_id

    def propose_merges(self, memories: Sequence[MemoryBrief]) -> list[MergeProposal]:
        ids = [m.memory_id for m in memories]
        return [
            MergeProposal([ids[0], self.foreign_id], "stolen"),
            MergeProposal([ids[0]], "alone"),
            MergeProposal([ids[1], ids[1]], "twice"),
            MergeProposal(ids[:2], "the real one", reason="ok"),
            MergeProposal(ids[:2], "again"),  # ids already used
        ]


def test_merge_proposals_may_only_name_ids_shown(engine: MemoryEngine) -> None:
    user, victim = f"m-{uuid.uuid4().hex[:8]}", f"m-{uuid.uuid4().hex[:8]}"
    foreign = _add(engine, victim, "My sister Anna lives in Berlin", T0)
    _add(engine, user, "My sister Anna lives in Berlin", T0)
    _add(engine, user, "My sister Anna lives in Berlin and works as a nurse there", T0 + timedelta(days=1))
    original = engine.llm
    engine.parts.llm = _OverreachingLLM(foreign)
    try:
        plans = plan_merges(engine.parts, user)
    finally:
        engine.parts.llm = original
    assert [p.merged_text for p in plans] == ["the real one"]
    assert foreign not in plans[0].memory_ids and engine.get(foreign).status is MemoryStatus.ACTIVE


def test_weekly_job_merges_big_users_only_and_runs_once_at_a_time(engine: MemoryEngine) -> None:
    big, small = f"m-{uuid.uuid4().hex[:8]}", f"m-{uuid.uuid4().hex[:8]}"
    for user, fillers in ((big, 6), (small, 1)):
        _add(engine, user, "I play tennis every Saturday", T0)
        _add(engine, user, "I play tennis every Saturday morning with my neighbour", T0 + timedelta(days=1))
        for i, text in enumerate(["My cat is called Mochi", "I work as a dentist in Lyon", "I am allergic to kiwi",
                                  "My favourite band is Radiohead", "I drive a blue Volvo",
                                  "My daughter starts school in September"][:fillers]):
            _add(engine, user, text, T0 + timedelta(days=2 + i))
    engine.clock.set(T0 + timedelta(days=30))

    results: list[dict[str, object]] = []
    gate = threading.Barrier(2)

    def run() -> None:
        gate.wait()
        results.append(merge_all(engine.parts, min_memories=5))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(int(r["skipped"]) for r in results) == [0, 1]  # the second start skipped
    done = next(r for r in results if r["skipped"] == 0)
    assert int(done["merged"]) >= 1 and done["errors"] == 0

    def tennis(user: str) -> list[str]:
        return [r.content for r in engine.search(user, "who do I play tennis with?", top_k=10, options=QUIET).results
                if "tennis" in r.content]

    assert tennis(big) == ["I play tennis every Saturday morning with my neighbour"]
    merged = [r for r in engine.search(big, "who do I play tennis with?", top_k=1, options=QUIET).results][0]
    assert len(engine.get(merged.memory_id).merged_from) == 2
    assert sorted(tennis(small)) == ["I play tennis every Saturday",
                                     "I play tennis every Saturday morning with my neighbour"]


def test_a_merged_memory_spans_the_told_times_of_its_originals(engine: MemoryEngine) -> None:
    """Each original's time words were read as of its own write; the merged text cannot be
    re-read that way, so the merged memory spans its originals' told times."""
    from memory_core.maintenance.merge import MergePlan

    user = f"t-{uuid.uuid4().hex[:8]}"
    first = _add(engine, user, "Yesterday I ran 5 km along the river", T0 + timedelta(days=1))
    second = _add(engine, user, "Two days ago I swam 20 laps at the city pool", T0 + timedelta(days=6))
    plain = _add(engine, user, "I like running by the river", T0 + timedelta(days=7))
    day = datetime(T0.year, T0.month, T0.day, tzinfo=timezone.utc)
    assert engine.get(first).event_start == day
    assert engine.get(second).event_end == day + timedelta(days=5)
    engine.clock.set(T0 + timedelta(days=20))
    texts = tuple(engine.get(m).content for m in (first, second))
    merged = engine.get(apply_merge(engine.parts, MergePlan(user, (first, second), texts,
                                                      "I ran along the river and swam laps at the pool"),
                                    actor="staff:dana"))
    assert (merged.event_start, merged.event_end) == (day, day + timedelta(days=5))
    untimed = engine.get(apply_merge(engine.parts, MergePlan(user, (merged.memory_id, plain),
                                                       (merged.content, engine.get(plain).content),
                                                       "I run by the river and swim at the pool"),
                                     actor="staff:dana"))
    assert (untimed.event_start, untimed.event_end) == (day, day + timedelta(days=5))


def test_a_plan_is_stale_once_one_of_its_memories_is_edited(engine: MemoryEngine) -> None:
    """The merged text was written from the words shown in the preview; applying it after a
    staff correction would retire the correction (only the history would keep it)."""
    user = f"m-{uuid.uuid4().hex[:8]}"
    short = _add(engine, user, "My sister Anna lives in Berlin", T0)
    longer = _add(engine, user, "My sister Anna lives in Berlin and works as a nurse there", T0 + timedelta(days=2))
    engine.clock.set(T0 + timedelta(days=5))
    (plan,) = plan_merges(engine.parts, user)
    engine.update(longer, actor="staff:lin", content="My sister Anna lives in Munich and works as a doctor there")
    with pytest.raises(ValidationError, match="edited"):
        apply_merge(engine.parts, plan, actor="staff:lin")
    assert {engine.get(short).status, engine.get(longer).status} == {MemoryStatus.ACTIVE}
    assert "Munich" in engine.get(longer).content
    assert longer in _ids(engine, user, "Where does Anna work as a doctor?")


def test_an_expiry_racing_a_merge_leaves_the_merge_whole(engine: MemoryEngine,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Expiry reads a memory, a merge supersedes it, then expiry writes: the write must not land
    (it turned the merged original into an expired one, and undo restored only half)."""
    user = f"m-{uuid.uuid4().hex[:8]}"
    a = _add(engine, user, "My sister Anna lives in Berlin", T0)
    b = _add(engine, user, "My sister Anna lives in Berlin and works as a nurse there", T0 + timedelta(days=2))
    engine.clock.set(T0 + timedelta(days=5))
    (plan,) = plan_merges(engine.parts, user)
    merged: list[str] = []
    real_get = lifecycle_ops.get

    def get_then_merge(parts, memory_id: str, user_id: str | None = None):  # type: ignore[no-untyped-def]
        record = real_get(parts, memory_id, user_id)
        if memory_id == a and not merged:  # the merge commits between expiry's read and its write
            merged.append(apply_merge(engine.parts, plan, actor="staff:lin"))
        return record

    monkeypatch.setattr(lifecycle_ops, "get", get_then_merge)  # expiry's read
    with pytest.raises(ValidationError, match="changed while"):
        engine.expire(a, actor="scheduler")
    monkeypatch.undo()
    assert engine.get(a).status is MemoryStatus.SUPERSEDED and engine.get(a).superseded_by == merged[0]
    assert [h.action for h in engine.history(a)][-1] == "merge"
    assert sorted(undo_merge(engine.parts, merged[0], actor="staff:lin")) == sorted([a, b])
