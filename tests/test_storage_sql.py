"""Migrations and the repository on SQLite and PostgreSQL."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import inspect

from memory_core.storage.database import create_sql_engine
from memory_core.storage.migrations import MIGRATIONS, current_version, migrate, migration_lock
from memory_core.storage.repository import SqlRepository
from tests.conftest import fresh_pg_schema


@pytest.fixture(params=["sqlite", "postgres"])
def sql_url(request, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'db' / 'm.sqlite3'}"
    return fresh_pg_schema(request.getfixturevalue("pg_url"))


def test_migrations_apply_once_and_concurrently(sql_url: str) -> None:
    engine = create_sql_engine(sql_url)
    applied: list[list[int]] = []
    failures: list[BaseException] = []

    def run() -> None:
        try:
            applied.append(migrate(engine))
        except BaseException as exc:  # surfaced below instead of leaking into another test
            failures.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert sorted(v for run in applied for v in run) == [m[0] for m in MIGRATIONS]
    assert current_version(engine) == MIGRATIONS[-1][0]
    assert migrate(engine) == []
    tables = set(inspect(engine).get_table_names())
    assert {"memories", "memory_history", "messages", "retrieval_metrics", "job_runs", "job_locks"} <= tables
    columns = {c["name"] for c in inspect(engine).get_columns("memories")}
    assert {"metadata", "superseded_by", "vector_written", "content_hash", "access_count", "source"} <= columns
    indexes = {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("memories")}
    assert indexes["ix_memories_user_status_created"] == ["user_id", "status", "created_at"]


def test_a_database_at_version_1_is_upgraded_in_place(sql_url: str) -> None:
    """A deployment made before migration 2 keeps its rows and gains the index."""
    from sqlalchemy import text

    from memory_core.storage import schema
    from memory_core.storage.migrations import MIGRATIONS as ALL

    engine = create_sql_engine(sql_url)
    with engine.begin() as conn:
        schema.SchemaMigrationRow.__table__.create(conn)
        ALL[0][2](conn)
        conn.execute(schema.SchemaMigrationRow.__table__.insert().values(
            version=1, name="initial", applied_at=datetime.now(timezone.utc)))
        conn.execute(text("DROP INDEX IF EXISTS ix_memories_user_status_created"))  # as version 1 left it
        conn.execute(text("ALTER TABLE memories DROP COLUMN context"))
        conn.execute(text("ALTER TABLE memories DROP COLUMN event_start"))
        conn.execute(text("ALTER TABLE memories DROP COLUMN event_end"))
        conn.execute(text("ALTER TABLE messages DROP COLUMN meta"))
        conn.execute(text("INSERT INTO messages (message_id, user_id, session_id, role, content, created_at) "
                          "VALUES ('msg-old', 'u1', 's1', 'assistant', '你好', '2024-01-01 00:00:00')"))
        conn.execute(text("INSERT INTO memories (memory_id, user_id, content, summary, importance, memory_type, "
                          "entities, metadata, status, created_at, updated_at, source, access_count, merged_from, "
                          "vector_written, content_hash) VALUES ('m-old', 'u1', 'kept', '', 3, 'declarative', '[]', "
                          "'{}', 'active', '2024-01-01 00:00:00', '2024-01-01 00:00:00', '[]', 0, '[]', false, 'h')"))
        conn.execute(text("INSERT INTO memories (memory_id, user_id, content, summary, importance, memory_type, "
                          "entities, metadata, status, created_at, updated_at, source, access_count, merged_from, "
                          "vector_written, content_hash) VALUES ('m-told', 'u1', 'Yesterday I flew to Boston', '', 3, "
                          "'episodic', '[]', '{}', 'active', '2024-01-05 10:00:00', '2024-01-05 10:00:00', '[]', 0, "
                          "'[]', false, 'h2')"))
    assert current_version(engine) == 1
    assert migrate(engine) == [m[0] for m in ALL[1:]]
    assert "ix_memories_user_status_created" in {i["name"] for i in inspect(engine).get_indexes("memories")}
    assert "context" in {c["name"] for c in inspect(engine).get_columns("memories")}
    old = SqlRepository(engine).get("m-old")
    assert old is not None and old.content == "kept" and old.context == ""
    # Migration 4 filled in the told time of existing rows, read as of when each was written.
    assert old.event_start is None and old.event_end is None
    told = SqlRepository(engine).get("m-told")
    assert told is not None
    assert (told.event_start, told.event_end) == (datetime(2024, 1, 4, tzinfo=timezone.utc),
                                                  datetime(2024, 1, 5, tzinfo=timezone.utc))
    assert "ix_memories_user_event" in {i["name"] for i in inspect(engine).get_indexes("memories")}
    # Migration 8: messages gained ``meta``; a message written before it reads back with none.
    assert "meta" in {c["name"] for c in inspect(engine).get_columns("messages")}
    assert [(m["content"], m["meta"]) for m in SqlRepository(engine).session_messages("u1", "s1")] == [("你好", None)]


def test_migration_5_reads_the_durations_of_rows_with_no_told_time(sql_url: str) -> None:
    """A store at version 4 (its parser read no durations): rows with no told time are read again;
    a row that has one keeps it."""
    from sqlalchemy import delete, text

    from memory_core.storage import schema

    engine = create_sql_engine(sql_url)
    migrate(engine)
    with engine.begin() as conn:
        conn.execute(delete(schema.SchemaMigrationRow.__table__).where(schema.SchemaMigrationRow.__table__.c.version == 5))
        for mid, content, start in (("m-dur", "We've been together for three years", None),
                                    ("m-kept", "I've had it for a year", "2020-02-02 00:00:00"),
                                    ("m-none", "I love tea", None)):
            conn.execute(text(
                "INSERT INTO memories (memory_id, user_id, content, summary, importance, memory_type, entities, "
                "metadata, status, created_at, updated_at, source, access_count, merged_from, vector_written, "
                "content_hash, event_start, event_end) VALUES (:id, 'u1', :content, '', 3, 'declarative', '[]', "
                "'{}', 'active', '2024-06-01 10:00:00', '2024-06-01 10:00:00', '[]', 0, '[]', false, 'h', "
                ":start, :start)"), {"id": mid, "content": content, "start": start})
    assert migrate(engine) == [5]
    repo = SqlRepository(engine)
    dur, kept, none = repo.get("m-dur"), repo.get("m-kept"), repo.get("m-none")
    assert dur is not None and (dur.event_start, dur.event_end) == (datetime(2021, 1, 1, tzinfo=timezone.utc),
                                                                   datetime(2022, 1, 1, tzinfo=timezone.utc))
    assert kept is not None and kept.event_start == datetime(2020, 2, 2, tzinfo=timezone.utc)
    assert none is not None and none.event_start is None
    engine.dispose()


def test_migrations_from_several_processes_at_once(sql_url: str) -> None:
    """Several app processes starting together: one migrates everything, the others wait and find
    it done, none fails. They are lined up behind the migration lock first (held here), so all of
    them race for it the moment it frees: a lock taken per step instead of per run lets a second
    process apply a later step (CI once saw '[1, 2, 3]' and '[4]')."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = ("import sys; from memory_core.storage.database import create_sql_engine; "
            "from memory_core.storage.migrations import migrate; print(migrate(create_sql_engine(sys.argv[1])))")
    engine = create_sql_engine(sql_url)
    with migration_lock(engine):
        procs = [subprocess.Popen([sys.executable, "-c", code, sql_url], cwd=root, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        time.sleep(3.0)  # long enough for each to import and queue on the lock
        assert all(p.poll() is None for p in procs), "a process migrated while the lock was held"
        assert current_version(engine) == 0
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err[-800:] for _, err in outputs]
    applied = sorted(out.strip() for out, _ in outputs)
    assert applied == [str([m[0] for m in MIGRATIONS]), "[]", "[]", "[]"]
    engine.dispose()


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
