"""Baseline: the schema as the numbered migrations 1-8 left it (December 2026).

Written out as explicit DDL, frozen: it never reads the ORM models, so a later model change
cannot change what this revision creates (the old migration 1 built its tables from the models
of the day, so databases made at different times differed). Types are the database types
(``DateTime``, ``JSON``): the models' ``UTCDateTime`` only converts values in Python.
Databases made by the numbered migrations are brought to version 8 by ``legacy_migrations``
and stamped with this revision instead of running it.

Revision ID: 0001
Revises: none
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# BIGINT ids (BIGSERIAL on PostgreSQL); SQLite autoincrements only an INTEGER PRIMARY KEY.
_AUTO_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "memories",
        sa.Column("memory_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("session_id", sa.String(256), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("importance", sa.SmallInteger(), nullable=False),
        sa.Column("memory_type", sa.String(16), nullable=False),
        sa.Column("entities", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("expired_at", sa.DateTime(), nullable=True),
        sa.Column("source", sa.JSON(), nullable=False),
        sa.Column("access_count", sa.Integer(), nullable=False),
        sa.Column("last_accessed_at", sa.DateTime(), nullable=True),
        sa.Column("superseded_by", sa.String(64), nullable=True),
        sa.Column("merged_from", sa.JSON(), nullable=False),
        sa.Column("vector_written", sa.Boolean(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("context", sa.Text(), nullable=True),
        sa.Column("event_start", sa.DateTime(), nullable=True),
        sa.Column("event_end", sa.DateTime(), nullable=True),
        sa.Column("constraint_kind", sa.String(16), nullable=True),
        sa.PrimaryKeyConstraint("memory_id"),
    )
    op.create_index("ix_memories_user_id", "memories", ["user_id"])
    op.create_index("ix_memories_user_status", "memories", ["user_id", "status"])
    op.create_index("ix_memories_pending", "memories", ["vector_written", "status"])
    op.create_index("ix_memories_user_hash", "memories", ["user_id", "content_hash"])
    op.create_index("ix_memories_created", "memories", ["created_at"])
    op.create_index("ix_memories_user_status_created", "memories", ["user_id", "status", "created_at"])
    op.create_index("ix_memories_user_event", "memories", ["user_id", "event_start", "event_end"])
    op.create_index("ix_memories_user_constraint", "memories", ["user_id", "constraint_kind"])

    op.create_table(
        "memory_history",
        sa.Column("id", _AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("memory_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(256), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.Column("note", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_memory_history_memory_id", "memory_history", ["memory_id"])
    op.create_index("ix_memory_history_user_id", "memory_history", ["user_id"])
    op.create_index("ix_memory_history_at", "memory_history", ["at"])

    op.create_table(
        "messages",
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("session_id", sa.String(256), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("meta", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("message_id"),
    )
    op.create_index("ix_messages_user_id", "messages", ["user_id"])
    op.create_index("ix_messages_session_id", "messages", ["session_id"])

    op.create_table(
        "retrieval_metrics",
        sa.Column("id", _AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("cache_hit", sa.Boolean(), nullable=False),
        sa.Column("degraded", sa.Boolean(), nullable=False),
        sa.Column("results", sa.Integer(), nullable=False),
        sa.Column("rewrite_ms", sa.Float(), nullable=False),
        sa.Column("embed_ms", sa.Float(), nullable=False),
        sa.Column("search_ms", sa.Float(), nullable=False),
        sa.Column("rerank_ms", sa.Float(), nullable=False),
        sa.Column("fetch_ms", sa.Float(), nullable=False),
        sa.Column("total_ms", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_retrieval_metrics_at", "retrieval_metrics", ["at"])

    op.create_table(
        "job_runs",
        sa.Column("id", _AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("job", sa.String(64), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("counts", sa.JSON(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_job_runs_job", "job_runs", ["job"])
    op.create_index("ix_job_runs_started_at", "job_runs", ["started_at"])

    op.create_table(
        "job_locks",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )

    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("tenant", sa.String(64), nullable=False),
        sa.Column("admin", sa.Boolean(), nullable=False),
        sa.Column("secret_hash", sa.String(128), nullable=False),
        sa.Column("rate_limit_per_min", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("key_id"),
        sa.UniqueConstraint("name"),
    )
    op.create_index("ix_api_keys_tenant", "api_keys", ["tenant"])

    op.create_table(
        "api_rate_counters",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("window_start", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key_id", "window_start"),
    )


def downgrade() -> None:
    for table in ("api_rate_counters", "api_keys", "job_locks", "job_runs", "retrieval_metrics", "messages",
                  "memory_history", "memories"):
        op.drop_table(table)  # its indexes go with it
