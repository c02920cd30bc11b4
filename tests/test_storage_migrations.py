"""Alembic migrations on SQLite and PostgreSQL: the baseline makes exactly the schema the models
describe, databases made by the numbered migrations are taken over with their rows, and
migrating twice, from threads or from processes at once, is safe."""
from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect, text

from memory_core.storage import legacy_migrations
from memory_core.storage.database import create_sql_engine
from memory_core.storage.migrations import current_revision, head, migrate, migration_lock, revisions
from memory_core.storage.repository import SqlRepository
from memory_core.storage.schema import Base
from tests.conftest import fresh_pg_schema
from tests.legacy_schema import make_legacy_database

BOOKKEEPING = {"alembic_version", "schema_migrations"}


@pytest.fixture(params=["sqlite", "postgres"])
def sql_url(request, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'db' / 'm.sqlite3'}"
    return fresh_pg_schema(request.getfixturevalue("pg_url"))


def schema_of(engine: Engine) -> dict[str, Any]:
    """Tables, columns (type, nullability, default), keys, indexes and unique constraints, in a
    form two databases can be compared by (column order aside: ALTER appends)."""
    insp = inspect(engine)
    out: dict[str, Any] = {}
    for table in sorted(set(insp.get_table_names()) - BOOKKEEPING):
        out[table] = {
            "columns": sorted((c["name"], str(c["type"]), c["nullable"], c.get("default") is not None)
                              for c in insp.get_columns(table)),
            "pk": insp.get_pk_constraint(table)["constrained_columns"],
            "indexes": sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                              for i in insp.get_indexes(table)),
            "unique": sorted(tuple(u["column_names"]) for u in insp.get_unique_constraints(table)),
            "fks": insp.get_foreign_keys(table),
        }
    return out


def model_diff(engine: Engine, metadata: sa.MetaData = Base.metadata) -> list[Any]:
    with engine.connect() as conn:
        return compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)


def fresh_twin(sql_url: str, tmp_path) -> Engine:  # type: ignore[no-untyped-def]
    """A new, empty database of the same kind, migrated."""
    url = f"sqlite:///{tmp_path / 'twin' / 't.sqlite3'}" if sql_url.startswith("sqlite") else fresh_pg_schema(
        sql_url.split("?")[0])
    twin = create_sql_engine(url)
    migrate(twin)
    return twin


def test_migrations_apply_once_and_concurrently(sql_url: str) -> None:
    engine = create_sql_engine(sql_url)
    applied: list[list[str]] = []
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
    assert [v for run in applied for v in run] == ["0001", "0002", "0003", "0004", "0005", "0006"] == revisions()
    assert revisions()[-1] == head()
    assert current_revision(engine) == head()
    assert migrate(engine) == []
    tables = set(inspect(engine).get_table_names())
    assert {"memories", "memory_history", "messages", "retrieval_metrics", "job_runs", "job_locks", "api_keys",
            "api_rate_counters", "english_vectors", "alembic_version"} == tables
    indexes = {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("memories")}
    assert indexes["ix_memories_user_status_created"] == ["user_id", "status", "created_at"]
    engine.dispose()


def test_a_migrated_database_matches_the_models(sql_url: str) -> None:
    """A model changed without a revision fails here (and the check does see a difference)."""
    engine = create_sql_engine(sql_url)
    migrate(engine)
    assert model_diff(engine) == []
    changed = sa.MetaData()
    for table in Base.metadata.sorted_tables:
        table.to_metadata(changed)
    changed.tables["memories"].append_column(sa.Column("mood", sa.String(16), nullable=True))
    changed.tables["messages"].indexes.clear()
    diff = model_diff(engine, changed)
    assert ("add_column", None, "memories", changed.tables["memories"].c.mood) in diff
    assert {d[1].name for d in diff if d[0] == "remove_index"} == {"ix_messages_user_id", "ix_messages_session_id"}
    engine.dispose()


def test_the_baseline_is_the_schema_the_numbered_migrations_made(sql_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A database stamped with the baseline must be what the baseline revision makes; the later
    revisions then run on both alike."""
    from alembic import command

    from memory_core.storage.migrations import BASELINE, alembic_config

    legacy = create_sql_engine(sql_url)
    make_legacy_database(legacy, 8)
    url = f"sqlite:///{tmp_path / 'twin' / 't.sqlite3'}" if sql_url.startswith("sqlite") else fresh_pg_schema(
        sql_url.split("?")[0])
    fresh = create_sql_engine(url)
    with fresh.begin() as conn:
        command.upgrade(alembic_config(conn), BASELINE)
    assert schema_of(fresh) == schema_of(legacy)
    assert len(schema_of(fresh)) == 8 and len(schema_of(fresh)["memories"]["indexes"]) == 8
    legacy.dispose()
    fresh.dispose()


def _old_rows(conn: sa.Connection, *, late_columns: bool) -> None:
    """Rows as the numbered code wrote them (naive UTC text/timestamps, JSON text)."""
    conn.execute(text("INSERT INTO messages (message_id, user_id, session_id, role, content, created_at) "
                      "VALUES ('msg-old', 'u1', 's1', 'assistant', '你好', '2024-01-01 00:00:00')"))
    for mid, content, at in (("m-old", "kept", "2024-01-01 00:00:00"),
                             ("m-told", "Yesterday I flew to Boston", "2024-01-05 10:00:00"),
                             ("m-allergy", "I am allergic to peanuts", "2024-01-06 10:00:00")):
        conn.execute(text(
            "INSERT INTO memories (memory_id, user_id, content, summary, importance, memory_type, entities, "
            "metadata, status, created_at, updated_at, source, access_count, merged_from, vector_written, "
            "content_hash) VALUES (:id, 'u1', :content, '', 3, 'declarative', '[\"Boston\"]', '{\"k\": 1}', "
            "'active', :at, :at, '[]', 2, '[]', true, 'h')"), {"id": mid, "content": content, "at": at})
    conn.execute(text("INSERT INTO memory_history (memory_id, user_id, action, actor, at, \"before\", \"after\", "
                      "note) VALUES ('m-old', 'u1', 'create', 'test', '2024-01-01 00:00:00', NULL, '{}', '')"))
    conn.execute(text("INSERT INTO job_runs (job, started_at, outcome, counts, detail) "
                      "VALUES ('merge', '2024-01-01 00:00:00', 'ok', '{\"merged\": 2}', '')"))
    if late_columns:
        conn.execute(text("INSERT INTO api_keys (key_id, name, tenant, admin, secret_hash, created_at) "
                          "VALUES ('k1', 'ops', 't1', false, 'hash', '2024-01-01 00:00:00')"))


def test_a_database_of_the_numbered_migrations_is_stamped_with_its_rows(sql_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The common case: a current deployment at step 8. Nothing runs but the stamp; every row is
    still there; the schema is a fresh one's; ids keep counting on from the old rows."""
    engine = create_sql_engine(sql_url)
    make_legacy_database(engine, 8)
    with engine.begin() as conn:
        _old_rows(conn, late_columns=True)
    assert current_revision(engine) is None
    assert migrate(engine) == revisions()[1:]  # stamped at the baseline, then the later revisions
    assert current_revision(engine) == head()
    assert "schema_migrations" not in inspect(engine).get_table_names()
    repo = SqlRepository(engine)
    old = repo.get("m-old")
    assert old is not None and old.content == "kept" and old.entities == ["Boston"] and old.access_count == 2
    assert old.created_at == datetime(2024, 1, 1, tzinfo=timezone.utc)
    # revision 0003: every active memory is re-indexed with the keyword leg's new tokens
    assert not old.vector_written and "m-old" in {r.memory_id for r in repo.pending_vectors()}
    assert [m["content"] for m in repo.session_messages("u1", "s1")] == ["你好"]
    assert [h.action for h in repo.history("m-old")] == ["create"]
    assert [(r.job, r.counts) for r in repo.job_runs()] == [("merge", {"merged": 2})]
    run = repo.start_job("expire", datetime(2024, 2, 1, tzinfo=timezone.utc))
    assert run == 2
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM api_keys")).scalar() == 1
    fresh = fresh_twin(sql_url, tmp_path)
    assert schema_of(engine) == schema_of(fresh)
    assert model_diff(engine) == []
    assert migrate(engine) == []
    engine.dispose()
    fresh.dispose()


def test_a_database_at_step_1_gets_the_later_steps_then_the_stamp(sql_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An old deployment made before step 2 keeps its rows, gains the columns and indexes, and
    has the told times and constraint kinds of its rows filled in, as the numbered steps did."""
    engine = create_sql_engine(sql_url)
    make_legacy_database(engine, 1)
    with engine.begin() as conn:
        _old_rows(conn, late_columns=False)
    assert migrate(engine) == [f"legacy-{v}" for v in range(2, 9)] + revisions()[1:]
    assert current_revision(engine) == head()
    fresh = fresh_twin(sql_url, tmp_path)
    assert schema_of(engine) == schema_of(fresh)
    assert model_diff(engine) == []
    repo = SqlRepository(engine)
    old = repo.get("m-old")
    assert old is not None and old.content == "kept" and old.context == ""
    assert old.event_start is None and old.event_end is None
    told = repo.get("m-told")
    assert told is not None
    assert (told.event_start, told.event_end) == (datetime(2024, 1, 4, tzinfo=timezone.utc),
                                                  datetime(2024, 1, 5, tzinfo=timezone.utc))
    allergy = repo.get("m-allergy")
    assert allergy is not None and allergy.constraint_kind == "allergy"
    assert [(m["content"], m["meta"]) for m in repo.session_messages("u1", "s1")] == [("你好", None)]
    engine.dispose()
    fresh.dispose()


def test_a_database_without_step_5_reads_rows_with_no_told_time_again(sql_url: str) -> None:
    """A store whose parser read no durations: rows with no told time are read again; a row that
    has one keeps it."""
    engine = create_sql_engine(sql_url)
    make_legacy_database(engine, 8)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM schema_migrations WHERE version = 5"))
        for mid, content, start in (("m-dur", "We've been together for three years", None),
                                    ("m-kept", "I've had it for a year", "2020-02-02 00:00:00"),
                                    ("m-none", "I love tea", None)):
            conn.execute(text(
                "INSERT INTO memories (memory_id, user_id, content, summary, importance, memory_type, entities, "
                "metadata, status, created_at, updated_at, source, access_count, merged_from, vector_written, "
                "content_hash, event_start, event_end) VALUES (:id, 'u1', :content, '', 3, 'declarative', '[]', "
                "'{}', 'active', '2024-06-01 10:00:00', '2024-06-01 10:00:00', '[]', 0, '[]', false, 'h', "
                ":start, :start)"), {"id": mid, "content": content, "start": start})
    assert migrate(engine) == ["legacy-5"] + revisions()[1:]
    repo = SqlRepository(engine)
    dur, kept, none = repo.get("m-dur"), repo.get("m-kept"), repo.get("m-none")
    assert dur is not None and (dur.event_start, dur.event_end) == (datetime(2021, 1, 1, tzinfo=timezone.utc),
                                                                   datetime(2022, 1, 1, tzinfo=timezone.utc))
    assert kept is not None and kept.event_start == datetime(2020, 2, 2, tzinfo=timezone.utc)
    assert none is not None and none.event_start is None
    engine.dispose()


def test_a_failed_run_leaves_nothing_half_made(sql_url: str) -> None:
    """The run is one transaction on both backends: when the baseline fails on its seventh table
    (a stray ``api_keys`` is in the way), the six before it are gone again, no revision is
    recorded, and the database is as it was."""
    engine = create_sql_engine(sql_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE api_keys (key_id VARCHAR(32) PRIMARY KEY)"))
    with pytest.raises(sa.exc.SQLAlchemyError):
        migrate(engine)
    assert set(inspect(engine).get_table_names()) == {"api_keys"}
    assert current_revision(engine) is None
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE api_keys"))
    assert migrate(engine) == revisions()
    engine.dispose()


def test_half_made_numbered_databases_are_refused_or_started_afresh(sql_url: str) -> None:
    """``schema_migrations`` without step 1: empty is a first start that failed before making
    anything (migrated as new); with tables it is refused rather than guessed at."""
    engine = create_sql_engine(sql_url)
    make_legacy_database(engine, 8)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM schema_migrations"))
    with pytest.raises(legacy_migrations.LegacySchemaError, match="step 1"):
        migrate(engine)
    assert "schema_migrations" in inspect(engine).get_table_names() and current_revision(engine) is None
    empty = create_sql_engine(sql_url.replace("m.sqlite3", "e.sqlite3") if sql_url.startswith("sqlite")
                              else fresh_pg_schema(sql_url.split("?")[0]))
    with empty.begin() as conn:
        conn.execute(text("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR(128), "
                          "applied_at TIMESTAMP)"))
    assert migrate(empty) == revisions()
    assert "schema_migrations" not in inspect(empty).get_table_names() and model_diff(empty) == []
    engine.dispose()
    empty.dispose()


def test_migrations_from_several_processes_at_once(sql_url: str) -> None:
    """Several app processes starting together: one migrates everything, the others wait and find
    it done, none fails. They are lined up behind the migration lock first (held here), so all of
    them race for it the moment it frees."""
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
        assert current_revision(engine) is None
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err[-800:] for _, err in outputs]
    applied = sorted(out.strip() for out, _ in outputs)
    assert applied == [str(revisions()), "[]", "[]", "[]"]
    engine.dispose()


def test_revision_0006_re_indexes_active_memories_for_chinese_pairs(sql_url: str) -> None:
    """A database at 0005: its active memories were indexed without the Chinese character pairs
    (``keywords.cjk_bigrams``); 0006 marks them for the reconcile job, and only them."""
    engine = create_sql_engine(sql_url)
    migrate(engine)
    with engine.begin() as conn:
        for mid, status in (("m-zh", "active"), ("m-gone", "expired")):
            conn.execute(text(
                "INSERT INTO memories (memory_id, user_id, content, summary, importance, memory_type, entities, "
                "metadata, status, created_at, updated_at, source, access_count, merged_from, vector_written, "
                "content_hash) VALUES (:id, 'u1', '我家在苏州工业园区', '', 4, 'declarative', '[]', '{}', :status, "
                "'2024-01-01 00:00:00', '2024-01-01 00:00:00', '[]', 0, '[]', true, 'h')"), {"id": mid, "status": status})
        conn.execute(text("UPDATE alembic_version SET version_num = '0005'"))
    assert migrate(engine) == ["0006"]
    repo = SqlRepository(engine)
    assert {r.memory_id for r in repo.pending_vectors()} == {"m-zh"}
    assert repo.get("m-gone").vector_written  # type: ignore[union-attr]
    assert migrate(engine) == []
