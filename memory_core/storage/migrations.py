"""Numbered schema migrations, applied in order and recorded in ``schema_migrations``.

Each migration is a function of a connection. Migration 1 creates the tables as they were
first designed; later changes must be new numbered functions with explicit DDL, never edits
to an applied one. Running ``migrate`` twice, or from two processes, is safe.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from sqlalchemy import Connection, Engine, inspect, select

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


MIGRATIONS: list[Migration] = [
    (1, "initial", _m0001_initial),
]


def migrate(engine: Engine) -> list[int]:
    """Apply pending migrations; returns the versions applied now."""
    applied_now: list[int] = []
    with engine.begin() as conn:
        schema.SchemaMigrationRow.__table__.create(conn, checkfirst=True)
    for version, name, apply in MIGRATIONS:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Serialise concurrent migrators (several app processes starting at once).
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727271)")
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
