"""The repository on SQLite and PostgreSQL (migrations: test_storage_migrations.py)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory_core.storage.database import create_sql_engine
from memory_core.storage.migrations import migrate
from memory_core.storage.repository import SqlRepository
from tests.conftest import fresh_pg_schema


@pytest.fixture(params=["sqlite", "postgres"])
def sql_url(request, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'db' / 'm.sqlite3'}"
    return fresh_pg_schema(request.getfixturevalue("pg_url"))


def test_message_meta_round_trips_on_both_backends(sql_url: str) -> None:
    """A chat reply's panel (ids and numbers, Chinese and English notices) comes back as stored;
    a message without one reads as None, not as an empty dict or the string 'null'."""
    engine = create_sql_engine(sql_url)
    migrate(engine)
    repo = SqlRepository(engine)
    at = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    meta = {"panel": {"v": 1, "used": [{"id": "m-1", "hash": "ab12", "score": 0.73, "importance": 4}],
                      "notices": ["检索降级：仅关键词", "Memory search is degraded"], "cache_hit": True}}
    repo.add_message(message_id="r-1", user_id="u1", session_id="s1", role="assistant", content="回复", at=at,
                     meta=meta)
    repo.add_message(message_id="q-2", user_id="u1", session_id="s1", role="user", content="hello",
                     at=at + timedelta(seconds=1))
    rows = repo.session_messages("u1", "s1")
    assert [(r["message_id"], r["meta"]) for r in rows] == [("r-1", meta), ("q-2", None)]
    assert repo.messages(["r-1"])[0]["meta"] == meta
    with engine.connect() as conn:  # a SQL NULL, not the JSON text 'null'
        assert conn.exec_driver_sql("SELECT message_id FROM messages WHERE meta IS NULL").scalars().all() == ["q-2"]
    engine.dispose()


def test_job_lease_is_exclusive_until_it_expires(sql_url: str) -> None:
    engine = create_sql_engine(sql_url)
    migrate(engine)
    repo = SqlRepository(engine)
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    assert repo.try_lock("merge", "proc-a", now, now + timedelta(minutes=5))
    assert not repo.try_lock("merge", "proc-b", now + timedelta(minutes=1), now + timedelta(minutes=6))
    assert repo.try_lock("merge", "proc-a", now + timedelta(minutes=1), now + timedelta(minutes=6))  # renew
    assert repo.try_lock("merge", "proc-b", now + timedelta(minutes=7), now + timedelta(minutes=12))  # expired
    repo.release_lock("merge", "proc-b")
    assert repo.try_lock("merge", "proc-c", now + timedelta(minutes=8), now + timedelta(minutes=13))
    run = repo.start_job("merge", now)
    repo.finish_job(run, now + timedelta(seconds=3), "ok", {"merged": 2})
    (job,) = repo.job_runs("merge")
    assert job.outcome == "ok" and job.counts == {"merged": 2} and job.finished_at == now + timedelta(seconds=3)


def _row(memory_id: str, content_hash: str) -> dict:
    now = datetime(2026, 12, 1, tzinfo=timezone.utc)
    return dict(memory_id=memory_id, user_id="u1", session_id=None, content=f"text {memory_id}", summary="",
                importance=3, memory_type="declarative", entities=[], meta={}, status="active", created_at=now,
                updated_at=now, expires_at=None, expired_at=None, source=[], access_count=0,
                last_accessed_at=None, superseded_by=None, merged_from=[], vector_written=False,
                content_hash=content_hash, context=None)


def test_set_vector_written_marks_only_rows_whose_hash_still_matches(sql_url: str) -> None:
    """The batched update (id list + (id, hash) pairs) keeps the per-row guard: a row edited after
    it was embedded stays pending, across the 500-row statement boundary too."""
    engine = create_sql_engine(sql_url)
    migrate(engine)
    repo = SqlRepository(engine)
    ids = [f"m{i:04d}" for i in range(1203)]
    with repo.session() as session:
        inserted = [repo.insert(session, _row(mid, f"h-{mid}")) for mid in ids]
    assert inserted[0].memory_id == "m0000" and inserted[0].content_hash == "h-m0000"
    embedded = {mid: f"h-{mid}" for mid in ids}
    edited = {"m0003", "m0500", "m1202"}  # an edit landed between the embed and the mark
    for mid in edited:
        embedded[mid] = "hash-of-the-old-text"
    repo.set_vector_written(ids, True, embedded)
    pending = {r.memory_id for r in repo.pending_vectors(limit=5000)}
    assert pending == edited
    repo.set_vector_written(sorted(edited), True)  # without hashes: unconditional
    assert repo.pending_vectors(limit=5000) == []


def test_ids_with_event_in_matches_the_told_time_of_one_users_live_memories(sql_url: str) -> None:
    """Overlap with the window (half-open), newest first, bounded; never another user's row, an
    expired or superseded one, one without a told time or one written after ``now``."""
    engine = create_sql_engine(sql_url)
    migrate(engine)
    repo = SqlRepository(engine)
    day = datetime(2023, 10, 3, tzinfo=timezone.utc)

    def told(memory_id: str, start_days: int, span_days: int, written_days: int, **changes: object) -> dict:
        row = _row(memory_id, f"h-{memory_id}") | dict(
            created_at=day + timedelta(days=written_days), updated_at=day + timedelta(days=written_days),
            event_start=day + timedelta(days=start_days), event_end=day + timedelta(days=start_days + span_days))
        return row | changes

    now = day + timedelta(days=30)
    rows = [
        told("yesterday", 0, 1, 1),  # "yesterday ..." written on 4 Oct
        told("last-week", -5, 7, 3),
        told("before", -2, 2, 0),  # ends exactly where the window starts: outside
        told("after", 1, 3, 4),  # starts exactly where it ends: outside
        told("other-user", 0, 1, 1, user_id="u2"),
        told("expired", 0, 1, 1, expires_at=day + timedelta(days=10)),
        told("superseded", 0, 1, 1, status="superseded"),
        told("future", 0, 1, 40),
        _row("no-time", "h-nt") | dict(created_at=day, updated_at=day),
    ]
    with repo.session() as session:
        for row in rows:
            repo.insert(session, row)
    window_start, window_end = day, day + timedelta(days=1)
    assert repo.ids_with_event_in("u1", window_start, window_end, now) == ["last-week", "yesterday"]
    assert repo.ids_with_event_in("u1", window_start, window_end, now, limit=1) == ["last-week"]
    assert repo.ids_with_event_in("u1", None, window_end, now) == ["last-week", "yesterday", "before"]
    assert repo.ids_with_event_in("u2", window_start, window_end, now) == ["other-user"]
    assert repo.ids_with_event_in("u1' OR '1'='1", window_start, window_end, now) == []


def test_text_search_and_speaker_labels_fold_case_alike_on_both_backends(sql_url: str) -> None:
    """SQLite's lower() folded ASCII only and its LIKE ignores case: the staff text filter and the
    SQL fallback missed "ZÜRICH" for "zürich", and "caroline: ..." counted as Caroline's label."""
    from memory_core.records import MemoryQuery

    engine = create_sql_engine(sql_url)
    migrate(engine)
    repo = SqlRepository(engine)
    texts = {"m1": "Ärger mit dem Öltank in ZÜRICH", "m2": "caroline: lower-case label", "m3": "Melanie: hi",
             "m4": "ΣΟΦΙΑ likes Greek coffee"}
    with repo.session() as session:
        for mid, text in texts.items():
            repo.insert(session, _row(mid, f"h-{mid}") | {"content": text})
    assert [r.memory_id for r in repo.list(MemoryQuery(text="zürich")).items] == ["m1"]
    assert [r.memory_id for r in repo.list(MemoryQuery(text="σοφια")).items] == ["m4"]
    now = datetime(2026, 12, 2, tzinfo=timezone.utc)
    assert [r.memory_id for r in repo.keyword_candidates("u1", ["öltank"], now)] == ["m1"]
    assert repo.speakers_present("u1", ["Caroline", "Melanie", "MELANIE"]) == {"Melanie"}
