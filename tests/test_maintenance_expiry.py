"""Forgetting: the dynamic importance model, and a simulated year of one user's memories.

The year runs on a FixedClock with the daily expiry and archive jobs, a weekly retrieval of one
fact, facts that change (conflict resolution), and chatter that should fade; retrieval is
checked at several dates. Real Milvus Lite, real model, SQLite and PostgreSQL.
"""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest

from memory_core import FixedClock, MemoryEngine, MemoryStatus, RetrievalOptions, Settings
from memory_core.maintenance import (
    archive_due,
    archive_stats,
    dynamic_importance,
    earliest_useful_access,
    expire_due,
    keep_alive_until,
    restore_from_archive,
)
from memory_core.records import MemoryRecord
from memory_core.types import MemoryType
from tests.conftest import open_backend_engine

T0 = datetime(2024, 1, 1, 9, tzinfo=timezone.utc)
QUIET = RetrievalOptions(use_cache=False, record=False)  # checks must not count as retrievals


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def engine(request, tmp_path_factory, embedder, model_cache_dir) -> Iterator[MemoryEngine]:  # type: ignore[no-untyped-def]
    eng = open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, "expiry", T0)
    yield eng
    eng.close()


def _record(**overrides: object) -> MemoryRecord:
    values: dict[str, object] = dict(
        memory_id="m1", user_id="u", session_id=None, content="x", summary="", importance=2,
        memory_type=MemoryType.DECLARATIVE, entities=[], meta={}, status=MemoryStatus.ACTIVE, created_at=T0,
        updated_at=T0, expires_at=T0 + timedelta(days=180), expired_at=None, source=[], access_count=0,
        last_accessed_at=None, superseded_by=None, vector_written=True, content_hash="h",
    )
    values.update(overrides)
    return MemoryRecord(**values)  # type: ignore[arg-type]


# ---- the importance model (pure) --------------------------------------------------------------
def test_dynamic_importance_follows_the_design_formula() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    fresh = dynamic_importance(_record(), T0, settings)
    # Just created, never retrieved: recency 5, relevance 2, frequency 1.
    assert fresh.recency == pytest.approx(5.0)
    assert fresh.frequency == pytest.approx(1.0)
    assert fresh.score == pytest.approx(0.3 * 5 + 0.5 * 2 + 0.2 * 1)
    # 100 days later recency has decayed by exp(-0.01 * 100).
    old = dynamic_importance(_record(), T0 + timedelta(days=100), settings)
    assert old.recency == pytest.approx(1 + 4 * 0.36787944, rel=1e-6)
    # Frequency saturates at 20 accesses and is 1..5.
    used = dynamic_importance(_record(access_count=20, last_accessed_at=T0), T0, settings)
    assert used.frequency == pytest.approx(5.0)
    assert dynamic_importance(_record(access_count=500, last_accessed_at=T0), T0, settings).frequency == 5.0
    # Weights are settings.
    tuned = Settings(_env_file=None, importance_weight_recency=0.0, importance_weight_relevance=1.0,  # type: ignore[call-arg]
                     importance_weight_frequency=0.0)
    assert dynamic_importance(_record(importance=4), T0, tuned).score == pytest.approx(4.0)


@pytest.mark.parametrize("weights", [(0.3, 0.5, 0.2), (1.0, 0.0, 0.0), (0.5, 1.0, 0.5)])
def test_no_access_before_the_bound_can_earn_a_date(weights: tuple[float, float, float]) -> None:
    """The keep-alive scan skips memories last used before ``earliest_useful_access``; that is
    only safe if none of them could have earned a date. The best possible memory (importance 5,
    used far past saturation, long faded) last used just before the bound earns none; used
    yesterday, it does."""
    w_rec, w_rel, w_freq = weights
    settings = Settings(_env_file=None, importance_weight_recency=w_rec,  # type: ignore[call-arg]
                        importance_weight_relevance=w_rel, importance_weight_frequency=w_freq)
    now = T0 + timedelta(days=900)
    bound = earliest_useful_access(now, settings)
    assert bound < now
    best = dict(importance=5, access_count=10_000, expires_at=now - timedelta(days=400))
    just_before = _record(last_accessed_at=bound - timedelta(seconds=1), **best)
    assert keep_alive_until(just_before, now, settings)[0] is None
    yesterday = _record(last_accessed_at=now - timedelta(days=1), **best)
    assert keep_alive_until(yesterday, now, settings)[0] is not None


def test_keep_alive_needs_use_not_just_importance() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    due = T0 + timedelta(days=178)
    # Never retrieved: no extension, however important.
    assert keep_alive_until(_record(importance=3), due, settings)[0] is None
    # Retrieved once, months ago: score too low.
    stale = _record(access_count=1, last_accessed_at=T0 + timedelta(days=10))
    until, score = keep_alive_until(stale, due, settings)
    assert until is None and score.score < settings.keep_alive_min_score
    # Retrieved weekly, last time two days ago: extended from that access.
    busy = _record(access_count=25, last_accessed_at=due - timedelta(days=2))
    until, score = keep_alive_until(busy, due, settings)
    assert until is not None and score.score >= settings.keep_alive_min_score
    assert until == busy.last_accessed_at + timedelta(days=settings.keep_alive_days_per_point * score.score)
    # A memory that never expires needs no extension.
    assert keep_alive_until(_record(expires_at=None, access_count=25, last_accessed_at=due), due, settings)[0] is None


# ---- a year of one user -----------------------------------------------------------------------
def _ids(engine: MemoryEngine, user: str, query: str, at: datetime, top_k: int = 10) -> list[str]:
    return [r.memory_id for r in engine.search(user, query, top_k=top_k, at=at, options=QUIET).results]


def test_a_simulated_year(engine: MemoryEngine) -> None:
    clock = engine.clock
    assert isinstance(clock, FixedClock)
    user = f"sim-{uuid.uuid4().hex[:8]}"
    clock.set(T0)

    def add(text: str, importance: int | None = None) -> str:
        result = engine.add(user, text, source=f"msg-{uuid.uuid4().hex[:6]}")
        assert len(result.created) == 1, f"{text!r} was not stored as a new memory: {result}"
        memory_id = result.created[0]
        if importance is not None and engine.get(memory_id).importance != importance:
            engine.update(memory_id, actor="test", importance=importance)  # expiry recomputed from creation
        return memory_id

    chatter_zh = add("今天天气不错，随便聊聊", importance=1)
    chatter_en = add("lol that movie last night was kind of boring", importance=1)
    beijing = add("I live in Beijing, in Chaoyang district")
    badminton = add("I play badminton with Li Wei at the community gym on Saturdays", importance=2)
    ramen = add("I tried a new ramen place near the office", importance=2)
    spicy_no = add("I don't eat spicy food")
    assert engine.get(chatter_zh).expires_at == T0 + timedelta(days=30)
    assert engine.get(badminton).expires_at == T0 + timedelta(days=180)
    assert engine.get(beijing).expires_at is None

    shanghai = spicy_yes = ""
    weekly_hits = 0
    for day in range(0, 366):
        now = T0 + timedelta(days=day, hours=1)
        clock.set(now)
        if day == 150:
            shanghai = add("I moved to Shanghai last month")
        if day == 200:
            spicy_yes = add("I can eat a little spicy food these days")
        if day % 7 == 3:  # the user keeps asking about their Saturday game
            hits = engine.search(user, "who do I play badminton with on Saturdays?", top_k=1).results
            weekly_hits += bool(hits and hits[0].memory_id == badminton)
        clock.set(T0 + timedelta(days=day, hours=2))
        engine.flush()
        assert expire_due(engine.parts)["skipped"] == 0
        assert archive_due(engine.parts)["skipped"] == 0

        at = T0 + timedelta(days=day, hours=3)
        if day == 20:
            assert chatter_zh in _ids(engine, user, "天气不错吗", at)
            assert chatter_en in _ids(engine, user, "that boring movie", at)
        if day == 40:
            assert engine.get(chatter_zh).status is MemoryStatus.EXPIRED
            assert engine.get(chatter_en).status is MemoryStatus.EXPIRED
            assert chatter_zh not in _ids(engine, user, "天气不错吗", at)
            assert chatter_zh not in engine.vectors.user_hashes(user)
        if day == 149:
            assert _ids(engine, user, "where do I live?", at, top_k=1) == [beijing]
        if day == 151:
            assert _ids(engine, user, "where do I live?", at, top_k=1) == [shanghai]
            assert beijing not in _ids(engine, user, "where do I live?", at)
            old = engine.get(beijing)
            assert old.status is MemoryStatus.SUPERSEDED and old.superseded_by == shanghai
        if day == 190:
            # Same importance, same age: the unused one expired, the used one was kept alive.
            assert engine.get(ramen).status is MemoryStatus.EXPIRED
            kept = engine.get(badminton)
            assert kept.status is MemoryStatus.ACTIVE and kept.expires_at is not None and kept.expires_at > at
            assert _ids(engine, user, "badminton partner", at, top_k=1) == [badminton]
            assert ramen not in _ids(engine, user, "ramen place near the office", at)
        if day == 201:
            assert engine.get(spicy_no).status is MemoryStatus.SUPERSEDED
            assert engine.get(spicy_no).superseded_by == spicy_yes
            ids = _ids(engine, user, "can I eat spicy food?", at)
            assert spicy_yes in ids and spicy_no not in ids
        if day == 215:
            # Chatter expired on day 30 and was untouched for 180 days more: archived.
            assert engine.get(chatter_zh).status is MemoryStatus.ARCHIVED
            assert engine.get(ramen).status is MemoryStatus.EXPIRED  # expired on day 180: not yet

    end = T0 + timedelta(days=365, hours=3)
    assert weekly_hits >= 50  # found first every week of the year
    survivor = engine.get(badminton)
    assert survivor.status is MemoryStatus.ACTIVE and survivor.expires_at is not None and survivor.expires_at > end
    assert _ids(engine, user, "who do I play badminton with?", end, top_k=1) == [badminton]
    extensions = [h for h in engine.history(badminton) if h.action == "update" and h.actor == "scheduler"]
    assert extensions and all("dynamic importance" in h.note for h in extensions)
    assert _ids(engine, user, "where do I live?", end, top_k=1) == [shanghai]
    assert engine.get(ramen).status is MemoryStatus.ARCHIVED  # expired day 180, archived day 360
    assert engine.get(beijing).status is MemoryStatus.SUPERSEDED  # superseded rows are kept, not archived
    row = next(s for s in archive_stats(engine.parts) if s["user_id"] == user)
    assert row["archived"] == 3 and row["file_records"] == 3 and row["file_bytes"] > 0
    assert user not in row["file"]

    # Staff bring the ramen memory back: active, re-indexed, with a fresh lifetime from today.
    restored = restore_from_archive(engine.parts, ramen, actor="staff:carol")
    assert restored.status is MemoryStatus.ACTIVE and restored.expires_at is not None and restored.expires_at > end
    assert _ids(engine, user, "ramen place near the office", end, top_k=1) == [ramen]
    assert [h.action for h in engine.history(ramen)][-3:] == ["expire", "archive", "restore"]


# ---- who ran it -------------------------------------------------------------------------------
def test_the_runs_actor_is_written_into_every_history_entry(make_engine) -> None:  # type: ignore[no-untyped-def]
    """The scheduler's runs are recorded as "scheduler"; a run started by staff names the staff
    member on both what it keeps alive and what it expires."""
    from sqlalchemy import update

    from memory_core.storage.schema import MemoryRow

    engine = make_engine(clock=FixedClock(T0))
    now = T0 + timedelta(days=10)

    def due_memories(used_text: str, unused_text: str) -> tuple[str, str]:
        used = engine.add("u-actor", used_text, actor="test").created[0]
        unused = engine.add("u-actor", unused_text, actor="test").created[0]
        engine.update(used, actor="test", expires_at=now + timedelta(days=2))  # due within the look-ahead
        # past due, and of an importance that expires (3 and up fade instead)
        engine.update(unused, actor="test", importance=2, expires_at=now - timedelta(hours=1))
        with engine.repo.session() as session:  # retrieved often, last time yesterday: earns an extension
            session.execute(update(MemoryRow).where(MemoryRow.memory_id == used)
                            .values(access_count=25, last_accessed_at=now - timedelta(days=1)))
        return used, unused

    by_scheduler = due_memories("I play chess with Omar on Tuesdays", "I tried the new noodle bar by the station")
    assert expire_due(engine.parts, now) == {"skipped": 0, "checked": 1, "extended": 1, "expired": 1, "errors": 0}
    by_staff = due_memories("My sister Lena teaches piano in Graz", "We watched a comet from the roof last night")
    counts = expire_due(engine.parts, now, actor="staff:carol")
    assert (counts["extended"], counts["expired"], counts["errors"]) == (1, 1, 0)

    for (used, unused), actor in ((by_scheduler, "scheduler"), (by_staff, "staff:carol")):
        kept, gone = engine.history(used)[-1], engine.history(unused)[-1]
        assert (kept.action, kept.actor) == ("update", actor) and "kept alive" in kept.note
        assert (gone.action, gone.actor) == ("expire", actor)
        assert engine.get(used).status is MemoryStatus.ACTIVE
        assert engine.get(unused).status is MemoryStatus.EXPIRED
