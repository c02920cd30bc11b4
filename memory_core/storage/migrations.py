"""Numbered schema migrations, applied in order and recorded in ``schema_migrations``.

Each migration is a function of a connection. Migration 1 creates the tables as they were
first designed; later changes must be new numbered functions with explicit DDL, never edits
to an applied one. Running ``migrate`` twice, or from two processes, is safe.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from filelock import FileLock
from sqlalchemy import Connection, Engine, inspect, select, update

from memory_core.storage import schema

Migration = tuple[int, str, Callable[[Connection], None]]


def _m0001_initial(conn: Connection) -> None:
    tables = [
        schema.MemoryRow.__table__,
        schema.HistoryRow.__table__,
        schema.MessageRow.__table__,
        schema.RetrievalMetricRow.__table__,
        schema.JobRunRow.__table__,
        schema.JobLockRow.__table__,
    ]
    schema.Base.metadata.create_all(conn, tables=tables, checkfirst=True)


def _m0002_user_timeline_index(conn: Connection) -> None:
    """Neighbour expansion asks, per search, for a user's active memory written just before and
    just after a hit: an index on (user_id, status, created_at) makes each an index seek."""
    conn.exec_driver_sql(
        "CREATE INDEX IF NOT EXISTS ix_memories_user_status_created ON memories (user_id, status, created_at)")


def _m0003_memory_context(conn: Connection) -> None:
    """``memories.context``: the conversation turn a memory answered, indexed with it so "yes, two
    cats" is found by "do you have pets?" (databases created after this change already have it,
    because migration 1 builds the table from the current model)."""
    if "context" not in {c["name"] for c in inspect(conn).get_columns("memories")}:
        conn.exec_driver_sql("ALTER TABLE memories ADD COLUMN context TEXT")


def _m0004_memory_event_time(conn: Connection) -> None:
    """``memories.event_start`` / ``event_end``: when what a memory tells happened (its own time
    words read as of its write time), so a question about "October 3" finds "yesterday ..."
    written on October 4. Existing rows are filled in here, in batches (the parser runs on each
    memory once; measured on LoCoMo turns, 8,100 rows/s on SQLite and 6,300 on PostgreSQL:
    2-3 minutes per million memories, once)."""
    columns = {c["name"] for c in inspect(conn).get_columns("memories")}
    for name in ("event_start", "event_end"):
        if name not in columns:
            type_sql = "TIMESTAMP WITHOUT TIME ZONE" if conn.dialect.name == "postgresql" else "DATETIME"
            conn.exec_driver_sql(f"ALTER TABLE memories ADD COLUMN {name} {type_sql}")
    conn.exec_driver_sql(
        "CREATE INDEX IF NOT EXISTS ix_memories_user_event ON memories (user_id, event_start, event_end)")
    _backfill_event_time(conn)


def _backfill_event_time(conn: Connection, batch: int = 2000) -> None:
    from memory_core.text.event_time import event_span  # the parser, not the schema, is what evolves

    table = schema.MemoryRow.__table__
    after = ""
    while True:
        rows = conn.execute(
            select(table.c.memory_id, table.c.content, table.c.created_at)
            .where(table.c.memory_id > after, table.c.event_start.is_(None))
            .order_by(table.c.memory_id).limit(batch)
        ).all()
        if not rows:
            return
        for memory_id, content, created_at in rows:
            span = event_span(content or "", created_at) if created_at is not None else None
            if span is not None:
                conn.execute(update(table).where(table.c.memory_id == memory_id)
                             .values(event_start=span.start, event_end=span.end))
        after = rows[-1][0]


def _m0005_event_time_read_again(conn: Connection) -> None:
    """The time parser learnt perfect-tense durations ("we've been together for three years",
    "在一起三年了" date their start) and vague few-days words ("the other day", "前几天"): rows
    with no told time are read again (rows that have one keep it; same cost as migration 4's
    fill, on the rows it left empty)."""
    _backfill_event_time(conn)


def _m0006_api_keys(conn: Connection) -> None:
    """``api_keys`` (hashed keys of the HTTP API, each bound to a tenant) and
    ``api_rate_counters`` (per-key request counts, the rate limit shared across API processes
    when no Redis is configured)."""
    schema.Base.metadata.create_all(conn, tables=[schema.ApiKeyRow.__table__, schema.ApiRateCounterRow.__table__],
                                    checkfirst=True)


def _m0007_memory_constraints(conn: Connection) -> None:
    """``memories.constraint_kind``: an allergy, diet, dislike or standing "never ..." that every
    request it bears on must respect. Active rows are read once by the rules
    (``memory_core.text.constraints``); an endpoint's analysis marks new memories from now on."""
    if "constraint_kind" not in {c["name"] for c in inspect(conn).get_columns("memories")}:
        conn.exec_driver_sql("ALTER TABLE memories ADD COLUMN constraint_kind VARCHAR(16)")
    conn.exec_driver_sql(
        "CREATE INDEX IF NOT EXISTS ix_memories_user_constraint ON memories (user_id, constraint_kind)")
    from memory_core.text.constraints import constraint_kind

    table = schema.MemoryRow.__table__
    after = ""
    while True:
        rows = conn.execute(
            select(table.c.memory_id, table.c.content)
            .where(table.c.memory_id > after, table.c.status == "active", table.c.constraint_kind.is_(None))
            .order_by(table.c.memory_id).limit(2000)
        ).all()
        if not rows:
            return
        for memory_id, content in rows:
            kind = constraint_kind(content or "")
            if kind is not None:
                conn.execute(update(table).where(table.c.memory_id == memory_id).values(constraint_kind=kind))
        after = rows[-1][0]


def _m0008_message_meta(conn: Connection) -> None:
    """``messages.meta`` (JSON, nullable): what an assistant reply was built from (the memories it
    used, by id, with their scores at the time), so a reopened chat session shows the
    used-memories panel under each reply again. Older messages keep NULL: no panel, as before."""
    if "meta" not in {c["name"] for c in inspect(conn).get_columns("messages")}:
        conn.exec_driver_sql("ALTER TABLE messages ADD COLUMN meta JSON")


MIGRATIONS: list[Migration] = [
    (1, "initial", _m0001_initial),
    (2, "user timeline index", _m0002_user_timeline_index),
    (3, "memory context", _m0003_memory_context),
    (4, "memory event time", _m0004_memory_event_time),
    (5, "told time read again", _m0005_event_time_read_again),
    (6, "api keys", _m0006_api_keys),
    (7, "memory constraints", _m0007_memory_constraints),
    (8, "message meta", _m0008_message_meta),
]


_process_lock = threading.Lock()
_PG_MIGRATION_LOCK_KEY = 727271


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Processes migrating one database take turns for the whole run, not per migration: a
    process that starts while another is migrating waits and then finds every step done, rather
    than slipping in between two steps. PostgreSQL: a session-level advisory lock on a connection
    held for the run. SQLite: DDL runs outside any lock other processes respect, so an advisory
    file lock beside the database file."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as lock_conn:
            lock_conn.exec_driver_sql(f"SELECT pg_advisory_lock({_PG_MIGRATION_LOCK_KEY})")
            try:
                yield
            finally:
                lock_conn.exec_driver_sql(f"SELECT pg_advisory_unlock({_PG_MIGRATION_LOCK_KEY})")
                lock_conn.rollback()
        return
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        yield
        return
    lock_path = Path(database).with_name(Path(database).name + ".migrate.lock")
    with FileLock(lock_path):
        yield


def migrate(engine: Engine) -> list[int]:
    """Apply pending migrations; returns the versions applied now.

    Threads of one process take turns on a lock; processes take turns on an advisory lock
    (PostgreSQL) or a lock file beside the database (SQLite), and then find the work done.
    """
    with _process_lock, migration_lock(engine):
        return _migrate(engine)


def _migrate(engine: Engine) -> list[int]:
    applied_now: list[int] = []
    with engine.begin() as conn:
        schema.SchemaMigrationRow.__table__.create(conn, checkfirst=True)
    for version, name, apply in MIGRATIONS:
        with engine.begin() as conn:
            table = schema.SchemaMigrationRow.__table__
            done = conn.execute(select(table.c.version).where(table.c.version == version)).first()
            if done:
                continue
            apply(conn)
            conn.execute(
                table.insert().values(version=version, name=name, applied_at=datetime.now(timezone.utc))
            )
            applied_now.append(version)
    return applied_now


def current_version(engine: Engine) -> int:
    if not inspect(engine).has_table("schema_migrations"):
        return 0
    with engine.connect() as conn:
        table = schema.SchemaMigrationRow.__table__
        versions = [row[0] for row in conn.execute(select(table.c.version))]
    return max(versions, default=0)
