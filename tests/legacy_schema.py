"""Databases as the numbered migrations (before Alembic) left them, frozen here as their DDL.

Taken from the last numbered code (commit d0a1ffe, ``memory_core/storage/migrations.py``) by
dumping what it created on SQLite and PostgreSQL: ``make_legacy_database(engine, 8)`` is a
database that code migrated to its last step, ``make_legacy_database(engine, 1)`` one made by its
first step only (before told times, context keys, constraints, message meta and API keys),
each with ``schema_migrations`` saying so. Used to check that Alembic takes them over.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine, text

_TYPES = {
    "sqlite": {"dt": "DATETIME", "id": "INTEGER NOT NULL", "serial": "INTEGER NOT NULL"},
    "postgresql": {"dt": "TIMESTAMP WITHOUT TIME ZONE", "id": "BIGSERIAL NOT NULL", "serial": "SERIAL NOT NULL"},
}

# Step 1's tables; ``{late}`` marks where the columns later steps added sit in a database that
# was created after those steps (step 1 built its tables from the models of the day).
_STEP_1 = [
    """CREATE TABLE memories (memory_id VARCHAR(64) NOT NULL, user_id VARCHAR(256) NOT NULL,
    session_id VARCHAR(256), content TEXT NOT NULL, summary TEXT NOT NULL, importance SMALLINT NOT NULL,
    memory_type VARCHAR(16) NOT NULL, entities JSON NOT NULL, metadata JSON NOT NULL, status VARCHAR(16) NOT NULL,
    created_at {dt} NOT NULL, updated_at {dt} NOT NULL, expires_at {dt}, expired_at {dt}, source JSON NOT NULL,
    access_count INTEGER NOT NULL, last_accessed_at {dt}, superseded_by VARCHAR(64), merged_from JSON NOT NULL,
    vector_written BOOLEAN NOT NULL, content_hash VARCHAR(64) NOT NULL, {late_memories} PRIMARY KEY (memory_id))""",
    "CREATE INDEX ix_memories_user_id ON memories (user_id)",
    "CREATE INDEX ix_memories_user_status ON memories (user_id, status)",
    "CREATE INDEX ix_memories_pending ON memories (vector_written, status)",
    "CREATE INDEX ix_memories_user_hash ON memories (user_id, content_hash)",
    "CREATE INDEX ix_memories_created ON memories (created_at)",
    """CREATE TABLE memory_history (id {id}, memory_id VARCHAR(64) NOT NULL, user_id VARCHAR(256) NOT NULL,
    action VARCHAR(32) NOT NULL, actor VARCHAR(256) NOT NULL, at {dt} NOT NULL, "before" JSON, "after" JSON,
    note TEXT NOT NULL, PRIMARY KEY (id))""",
    "CREATE INDEX ix_memory_history_memory_id ON memory_history (memory_id)",
    "CREATE INDEX ix_memory_history_user_id ON memory_history (user_id)",
    "CREATE INDEX ix_memory_history_at ON memory_history (at)",
    """CREATE TABLE messages (message_id VARCHAR(64) NOT NULL, user_id VARCHAR(256) NOT NULL,
    session_id VARCHAR(256) NOT NULL, role VARCHAR(16) NOT NULL, content TEXT NOT NULL, created_at {dt} NOT NULL,
    {late_messages} PRIMARY KEY (message_id))""",
    "CREATE INDEX ix_messages_user_id ON messages (user_id)",
    "CREATE INDEX ix_messages_session_id ON messages (session_id)",
    """CREATE TABLE retrieval_metrics (id {id}, at {dt} NOT NULL, user_id VARCHAR(256) NOT NULL,
    cache_hit BOOLEAN NOT NULL, degraded BOOLEAN NOT NULL, results INTEGER NOT NULL, rewrite_ms FLOAT NOT NULL,
    embed_ms FLOAT NOT NULL, search_ms FLOAT NOT NULL, rerank_ms FLOAT NOT NULL, fetch_ms FLOAT NOT NULL,
    total_ms FLOAT NOT NULL, PRIMARY KEY (id))""",
    "CREATE INDEX ix_retrieval_metrics_at ON retrieval_metrics (at)",
    """CREATE TABLE job_runs (id {id}, job VARCHAR(64) NOT NULL, started_at {dt} NOT NULL, finished_at {dt},
    outcome VARCHAR(16) NOT NULL, counts JSON NOT NULL, detail TEXT NOT NULL, PRIMARY KEY (id))""",
    "CREATE INDEX ix_job_runs_job ON job_runs (job)",
    "CREATE INDEX ix_job_runs_started_at ON job_runs (started_at)",
    """CREATE TABLE job_locks (name VARCHAR(64) NOT NULL, holder VARCHAR(128) NOT NULL, expires_at {dt} NOT NULL,
    PRIMARY KEY (name))""",
]
_LATE_MEMORIES = "context TEXT, event_start {dt}, event_end {dt}, constraint_kind VARCHAR(16),"
_LATE_MESSAGES = "meta JSON,"
# What steps 2-8 add to a database made before them (step 5 re-reads data only).
_STEPS_2_TO_8 = [
    "CREATE INDEX ix_memories_user_status_created ON memories (user_id, status, created_at)",
    "CREATE INDEX ix_memories_user_event ON memories (user_id, event_start, event_end)",
    """CREATE TABLE api_keys (key_id VARCHAR(32) NOT NULL, name VARCHAR(128) NOT NULL, tenant VARCHAR(64) NOT NULL,
    admin BOOLEAN NOT NULL, secret_hash VARCHAR(128) NOT NULL, rate_limit_per_min INTEGER, created_at {dt} NOT NULL,
    expires_at {dt}, revoked_at {dt}, PRIMARY KEY (key_id), UNIQUE (name))""",
    "CREATE INDEX ix_api_keys_tenant ON api_keys (tenant)",
    """CREATE TABLE api_rate_counters (key_id VARCHAR(32) NOT NULL, window_start BIGINT NOT NULL,
    hits INTEGER NOT NULL, PRIMARY KEY (key_id, window_start))""",
    "CREATE INDEX ix_memories_user_constraint ON memories (user_id, constraint_kind)",
]
_SCHEMA_MIGRATIONS = """CREATE TABLE schema_migrations (version {serial}, name VARCHAR(128) NOT NULL,
    applied_at {dt} NOT NULL, PRIMARY KEY (version))"""
NAMES = {1: "initial", 2: "user timeline index", 3: "memory context", 4: "memory event time",
         5: "told time read again", 6: "api keys", 7: "memory constraints", 8: "message meta"}


def make_legacy_database(engine: Engine, version: int) -> None:
    """Version 8: a database the numbered code created fresh and brought to its last step.
    Version 1: one its first step made before any later column existed."""
    assert version in (1, 8), "the numbered code left databases at step 1 (old ones) or 8 (current ones)"
    types = _TYPES[engine.dialect.name]
    late = version == 8
    statements = [_SCHEMA_MIGRATIONS] + _STEP_1 + (_STEPS_2_TO_8 if late else [])
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement.format(
                late_memories=_LATE_MEMORIES.format(**types) if late else "",
                late_messages=_LATE_MESSAGES if late else "", **types)))
        for step in range(1, version + 1):
            conn.execute(text("INSERT INTO schema_migrations (version, name, applied_at) VALUES (:v, :n, :at)"),
                         {"v": step, "n": NAMES[step], "at": datetime(2026, 11, 1)})
