"""Fading: from ``fade_from_importance`` (3) on, a memory's date is when it fades, not when it expires.

A faded memory stays searchable and comes back only when relevant (calibrated relevance at
least ``faded_min_relevance``, whatever lower threshold the caller asks for); an unrelated request
does not bring it up, newer-wins still replaces it, and staff can still expire it at once. Below
that importance the date is an expiry, as before. English and Chinese, SQLite and PostgreSQL,
real Milvus Lite and the real model.
"""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest

from memory_core import FixedClock, MemoryEngine, MemoryStatus, RetrievalOptions
from memory_core.maintenance import earliest_useful_access, expire_due
from memory_core.maintenance.merge import active_memories
from services import admin
from services.turn_info import EXPIRED, FADED, state_now
from tests.conftest import open_backend_engine

T0 = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
LATER = T0 + timedelta(days=400)  # past importance 3's year
QUIET = RetrievalOptions(use_cache=False, record=False)

TRIPS = {
    "en": ("Last weekend I hiked the Great Wall at Mutianyu with my grandfather, it was wonderful",
           "Do you remember when I hiked the Great Wall with my grandfather?"),
    "zh": ("上周末我和爷爷一起去爬了慕田峪长城，特别开心",
           "还记得我和爷爷去爬慕田峪长城那次吗？"),
}
UNRELATED = {"en": "What should I cook tonight?", "zh": "今晚做什么菜好？"}
NOODLES = {"en": ("I tried the new noodle bar by the station", "the noodle bar by the station"),
           "zh": ("我去车站旁边新开的面馆吃了一次", "车站旁边新开的面馆")}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def engine(request, tmp_path_factory, embedder, model_cache_dir) -> Iterator[MemoryEngine]:  # type: ignore[no-untyped-def]
    eng = open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, "fading", T0)
    yield eng
    eng.close()


def _add(engine: MemoryEngine, user: str, text: str, importance: int) -> str:
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(T0)
    memory_id = engine.add(user, text, actor="test").created[0]
    if engine.get(memory_id).importance != importance:
        engine.update(memory_id, actor="test", importance=importance)  # the date is recomputed from creation
    return memory_id


def _found(engine: MemoryEngine, user: str, query: str, **kwargs: object) -> list[str]:
    return [r.memory_id for r in engine.search(user, query, at=LATER, options=QUIET, **kwargs).results]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_year_old_trip_fades_and_comes_back_when_brought_up(engine: MemoryEngine, lang: str) -> None:
    user = f"fade-{lang}-{uuid.uuid4().hex[:6]}"
    trip_text, asked = TRIPS[lang]
    trip = _add(engine, user, trip_text, importance=3)
    noodles = _add(engine, user, NOODLES[lang][0], importance=2)
    assert engine.get(trip).expires_at == T0 + timedelta(days=365)

    engine.clock.set(LATER)
    counts = expire_due(engine.parts, LATER)
    assert counts["errors"] == 0
    assert engine.get(noodles).status is MemoryStatus.EXPIRED  # importance 2: expired, out of retrieval
    assert engine.get(trip).status is MemoryStatus.ACTIVE  # importance 3: faded, still searchable
    assert engine.faded(engine.get(trip), LATER) and not engine.faded(engine.get(noodles), LATER)

    found = engine.search(user, asked, at=LATER, options=QUIET, min_relevance=0.0).results
    assert found and found[0].memory_id == trip
    assert (found[0].parts.absolute or 0.0) >= engine.settings.faded_min_relevance
    # an unrelated request does not bring it up, even when the caller asks for everything
    assert trip not in _found(engine, user, UNRELATED[lang], min_relevance=0.0)
    # an expired memory stays out however clearly it is asked for
    assert noodles not in _found(engine, user, NOODLES[lang][1], min_relevance=0.0)


def test_the_faded_floor_holds_whatever_the_caller_asks(engine: MemoryEngine) -> None:
    """The same unrelated request before and after the date: before, a caller's threshold of 0
    keeps every ranked memory; after, a faded one needs ``faded_min_relevance``."""
    user = f"fade-floor-{uuid.uuid4().hex[:6]}"
    trip = _add(engine, user, TRIPS["en"][0], importance=3)
    before = [r.memory_id for r in engine.search(user, UNRELATED["en"], at=T0 + timedelta(days=1),
                                                  options=QUIET, min_relevance=0.0).results]
    assert trip in before  # young, it is ranked for anything at threshold 0
    assert trip not in _found(engine, user, UNRELATED["en"], min_relevance=0.0)


def test_a_faded_memory_brought_up_again_lives_again(engine: MemoryEngine) -> None:
    """Use keeps a memory alive (the expiry job's keep-alive): a faded memory the user brings up
    gets a new date from that use, and is no longer faded."""
    user = f"fade-revive-{uuid.uuid4().hex[:6]}"
    trip = _add(engine, user, TRIPS["en"][0], importance=3)
    engine.clock.set(LATER)
    used = engine.search(user, TRIPS["en"][1], options=RetrievalOptions(use_cache=False, record=True)).results
    assert [r.memory_id for r in used][:1] == [trip]
    assert expire_due(engine.parts, LATER + timedelta(hours=1))["extended"] >= 1
    revived = engine.get(trip)
    assert revived.expires_at is not None and revived.expires_at > LATER + timedelta(days=30)
    assert not engine.faded(revived, LATER + timedelta(hours=1))
    assert "kept alive" in engine.history(trip)[-1].note


def test_the_keep_alive_scan_skips_faded_memories_no_use_can_revive(engine: MemoryEngine) -> None:
    """Faded memories stay active, so the daily keep-alive scan would re-read every faded memory
    ever retrieved, every day. It reads only those used recently enough to earn a date."""
    user = f"fade-scan-{uuid.uuid4().hex[:6]}"
    long_ago = _add(engine, user, TRIPS["en"][0], importance=3)
    lately = _add(engine, user, TRIPS["zh"][0], importance=3)
    record = RetrievalOptions(use_cache=False, record=True)
    engine.clock.set(T0 + timedelta(days=10))
    assert long_ago in [r.memory_id for r in engine.search(user, TRIPS["en"][1], options=record).results]
    engine.clock.set(LATER - timedelta(days=20))
    assert lately in [r.memory_id for r in engine.search(user, TRIPS["zh"][1], options=record).results]
    engine.parts.flush()
    horizon = LATER + timedelta(days=engine.settings.expiry_lookahead_days)
    since = earliest_useful_access(LATER, engine.settings)
    every = {r.memory_id for r in engine.parts.repo.used_due_by(horizon, "", 10_000)}
    scanned = {r.memory_id for r in engine.parts.repo.used_due_by(horizon, "", 10_000, accessed_since=since)}
    assert {long_ago, lately} <= every
    assert lately in scanned and long_ago not in scanned


def test_the_daily_job_checks_only_what_could_be_kept_alive(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(clock=FixedClock(T0))
    user = "fade-job-scan"
    long_ago = _add(engine, user, TRIPS["en"][0], importance=3)
    engine.clock.set(T0 + timedelta(days=10))
    engine.search(user, TRIPS["en"][1], options=RetrievalOptions(use_cache=False, record=True))
    engine.parts.flush()
    assert engine.get(long_ago).access_count == 1
    assert expire_due(engine.parts, LATER)["checked"] == 0
    assert engine.get(long_ago).status is MemoryStatus.ACTIVE  # faded, not expired, and not re-read


def test_merge_planning_reads_the_newest_memories(engine: MemoryEngine) -> None:
    """Memories that fade never leave: a merge window of the oldest would fill with them and
    never reach this week's duplicates. The window holds the newest, oldest first."""
    user = f"fade-merge-{uuid.uuid4().hex[:6]}"
    ids = []
    for day, text in enumerate(["I play the cello", "My sister lives in Porto", "我养了一只橘猫"]):
        engine.clock.set(T0 + timedelta(days=day))
        ids.append(engine.add(user, text, actor="test").created[0])
    assert [r.memory_id for r in active_memories(engine.parts, user, limit=2)] == ids[1:]
    assert [r.memory_id for r in active_memories(engine.parts, user)] == ids


def test_staff_expiry_of_a_faded_memory_takes_it_out(engine: MemoryEngine) -> None:
    user = f"fade-staff-{uuid.uuid4().hex[:6]}"
    trip = _add(engine, user, TRIPS["zh"][0], importance=3)
    engine.clock.set(LATER)
    assert trip in _found(engine, user, TRIPS["zh"][1])
    engine.expire(trip, actor="staff:carol", note="asked to forget")
    assert engine.get(trip).status is MemoryStatus.EXPIRED
    assert trip not in _found(engine, user, TRIPS["zh"][1], min_relevance=0.0)
    assert trip not in engine.vectors.user_hashes(user)


@pytest.mark.parametrize("old_text, new_text", [
    ("I love sushi, I could eat it every day", "I don't like sushi anymore"),
    ("我特别喜欢吃寿司", "我现在不喜欢吃寿司了"),
])
def test_newer_wins_replaces_a_faded_memory(engine: MemoryEngine, old_text: str, new_text: str) -> None:
    user = f"fade-nw-{uuid.uuid4().hex[:6]}"
    old = _add(engine, user, old_text, importance=3)
    engine.clock.set(LATER)
    new = engine.add(user, new_text, actor="test").created[0]
    assert engine.get(old).status is MemoryStatus.SUPERSEDED
    assert engine.get(old).superseded_by == new


def test_newer_wins_finds_a_faded_memory_by_meaning_alone(engine: MemoryEngine) -> None:
    """No entity links these two: only the conflict check's vector search, which must search
    faded memories, can find the old habit."""
    user = f"fade-nw-dense-{uuid.uuid4().hex[:6]}"
    old = _add(engine, user, "I usually cycle to work", importance=3)
    assert engine.get(old).entities == []
    engine.clock.set(LATER)
    new = engine.add(user, "I don't cycle to work anymore, I take the bus now", actor="test").created[0]
    assert engine.get(new).entities == []
    assert engine.get(old).status is MemoryStatus.SUPERSEDED


def test_only_what_fades_outlives_its_date_before_the_job_runs(engine: MemoryEngine) -> None:
    """Between the date and the daily job an importance-2 memory is out already (retrieval reads
    the date), however clearly it is asked for; the importance-3 one beside it is faded, not out."""
    user = f"fade-due-{uuid.uuid4().hex[:6]}"
    noodles = _add(engine, user, NOODLES["zh"][0], importance=2)
    trip = _add(engine, user, TRIPS["zh"][0], importance=3)
    engine.clock.set(LATER)
    assert engine.get(noodles).status is MemoryStatus.ACTIVE  # the job has not run
    assert noodles not in _found(engine, user, NOODLES["zh"][1], min_relevance=0.0)
    assert trip in _found(engine, user, TRIPS["zh"][1], min_relevance=0.0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_faded_memory_said_again_is_one_memory_and_current(engine: MemoryEngine, lang: str) -> None:
    """The near-duplicate check searches faded memories: a repeat in other words folds into the
    faded one, which gets a new date from the repeat, instead of a second copy."""
    user = f"fade-repeat-{lang}-{uuid.uuid4().hex[:6]}"
    first, again = {"en": ("I love going for a run every morning", "I love going for a run every morning!"),
                    "zh": ("我每天早上都喜欢去跑步", "我每天早上都喜欢去跑步！")}[lang]
    old = _add(engine, user, first, importance=3)
    engine.clock.set(LATER)
    result = engine.add(user, again, actor="test")
    assert result.created == [] and old in result.memory_ids
    renewed = engine.get(old)
    assert renewed.expires_at is not None and renewed.expires_at > LATER
    assert not engine.faded(renewed, LATER)


def test_a_repeat_after_a_date_a_person_set_keeps_that_life(engine: MemoryEngine) -> None:
    """Staff gave a lasting memory a 10-day date; said again after it, the memory lives 10 days
    more from the repeat: the person's date is not turned into "never"."""
    user = f"fade-person-{uuid.uuid4().hex[:6]}"
    text = "I work at the Lisbon office of Acme"
    memory_id = _add(engine, user, text, importance=4)
    engine.update(memory_id, actor="staff:carol", expires_at=T0 + timedelta(days=10))
    engine.clock.set(T0 + timedelta(days=31))
    assert memory_id in engine.add(user, text, actor="test").memory_ids
    assert engine.get(memory_id).expires_at == T0 + timedelta(days=41)


def test_with_fading_off_the_date_is_an_expiry(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(clock=FixedClock(T0), fade_from_importance=0)
    user = "fade-off"
    trip = _add(engine, user, TRIPS["en"][0], importance=3)
    engine.clock.set(LATER)
    assert trip not in _found(engine, user, TRIPS["en"][1], min_relevance=0.0)
    assert expire_due(engine.parts, LATER)["expired"] == 1
    assert engine.get(trip).status is MemoryStatus.EXPIRED


def test_labels_say_faded_or_expired(engine: MemoryEngine) -> None:
    """The admin table and a reopened chat panel say which of the two a past date meant."""
    user = f"fade-labels-{uuid.uuid4().hex[:6]}"
    trip = _add(engine, user, TRIPS["en"][0], importance=3)
    noodles = _add(engine, user, NOODLES["en"][0], importance=2)
    engine.clock.set(T0)
    assert admin.expiry_label(engine, engine.get(trip)) == "fades 2025-03-01"
    assert admin.expiry_label(engine, engine.get(noodles)) == "expires 2024-08-28"
    engine.clock.set(LATER)
    assert admin.expiry_label(engine, engine.get(trip)) == "faded 2025-03-01"
    assert admin.expiry_label(engine, engine.get(noodles)) == "expired 2024-08-28"
    fade_from = engine.settings.fade_from_importance
    entry = {"id": trip, "hash": ""}
    assert state_now(entry, engine.get(trip), LATER, fade_from) == FADED
    assert state_now(entry, engine.get(noodles), LATER, fade_from) == EXPIRED
    assert state_now(entry, engine.get(trip), LATER, 0) == EXPIRED
    engine.expire(trip, actor="staff:carol")  # no longer active: the status says it, the label gives the day
    assert admin.expiry_label(engine, engine.get(trip)) == "2025-03-01"
    assert not engine.faded(engine.get(trip), LATER)


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_revision_0004_brings_back_what_the_job_expired_by_date(make_engine, sql: str) -> None:
    """A database whose expiry job expired importance-3 memories by date (the old rule) is brought
    to what fading would have left: those memories active again, indexed by reconcile, found when
    brought up, with a history entry; one a person expired, one of importance 2 and one changed
    after its expiry stay expired."""
    from sqlalchemy import text

    from memory_core.storage.migrations import migrate

    engine = make_engine(sql=sql, clock=FixedClock(T0), fade_from_importance=0)  # the rule before fading
    user = "fade-migrated"
    trip = _add(engine, user, TRIPS["en"][0], importance=3)
    trip_zh = _add(engine, user, TRIPS["zh"][0], importance=3)
    noodles = _add(engine, user, NOODLES["en"][0], importance=2)
    by_person = _add(engine, user, "I love the jazz bar on Fifth Street, I go every Friday", importance=3)
    engine.expire(by_person, actor="staff:carol", note="asked to forget")
    engine.clock.set(LATER)
    assert expire_due(engine.parts, LATER)["expired"] == 3
    later_edit = engine.restore(trip_zh, actor="staff:carol")  # restored, then expired by a person
    engine.expire(later_edit.memory_id, actor="staff:carol", note="wrong user")

    sql_engine = engine.repo.engine
    with sql_engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0003'"))
        conn.execute(text("DROP TABLE english_vectors"))  # a database at 0003 had no such table
    assert migrate(sql_engine) == ["0004", "0005", "0006"]
    assert engine.get(trip).status is MemoryStatus.ACTIVE and engine.get(trip).expired_at is None
    assert not engine.get(trip).vector_written
    for memory_id in (trip_zh, noodles, by_person):
        assert engine.get(memory_id).status is MemoryStatus.EXPIRED, engine.get(memory_id).content
    entry = engine.history(trip)[-1]
    assert (entry.action, entry.actor) == ("restore", "migration:0004") and "faded instead of expired" in entry.note
    assert (entry.before or {})["status"] == "expired" and (entry.after or {})["status"] == "active"
    assert (entry.after or {})["content"] == TRIPS["en"][0]
    assert migrate(sql_engine) == []  # once

    assert trip not in engine.vectors.user_hashes(user)
    engine.reconcile(user)
    assert trip in engine.vectors.user_hashes(user) and engine.get(trip).vector_written
