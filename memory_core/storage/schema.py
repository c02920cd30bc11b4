"""SQL tables: the system of record for memories, their audit history and operational metrics.

SQLAlchemy 2 typed declarative models, portable between SQLite and PostgreSQL. Datetimes are
stored as naive UTC and handed back as aware UTC (``UTCDateTime``), so both databases agree.

The database is made by the Alembic revisions in ``schema_versions/versions`` (explicit DDL),
never from these classes: a change here needs a revision there, and
``tests/test_storage_migrations.py`` fails while a migrated database and these models differ.
(Comments below that name a "migration N" mean the numbered migrations before Alembic,
frozen in ``legacy_migrations.py``.)
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Float, Index, Integer, LargeBinary, SmallInteger, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Naive-UTC storage, aware-UTC values: SQLite has no time zones and PostgreSQL's would differ."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc)


# BigInteger autoincrement does not work on SQLite; this maps to INTEGER there.
AutoId = BigInteger().with_variant(Integer, "sqlite")


class Base(DeclarativeBase):
    pass


class MemoryRow(Base):
    __tablename__ = "memories"

    memory_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(256), index=True)
    session_id: Mapped[str | None] = mapped_column(String(256))
    content: Mapped[str] = mapped_column(Text)
    summary: Mapped[str] = mapped_column(Text, default="")
    importance: Mapped[int] = mapped_column(SmallInteger)
    memory_type: Mapped[str] = mapped_column(String(16))
    entities: Mapped[list[str]] = mapped_column(JSON, default=list)
    # ``metadata`` is reserved on declarative classes: the attribute is ``meta``, the column keeps the name.
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="active")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    expired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    source: Mapped[list[str]] = mapped_column(JSON, default=list)
    access_count: Mapped[int] = mapped_column(Integer, default=0)
    last_accessed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    superseded_by: Mapped[str | None] = mapped_column(String(64))
    merged_from: Mapped[list[str]] = mapped_column(JSON, default=list)
    vector_written: Mapped[bool] = mapped_column(Boolean, default=False)
    content_hash: Mapped[str] = mapped_column(String(64))
    # The conversation turn this memory answered (migration 3); part of its retrieval key only.
    context: Mapped[str | None] = mapped_column(Text, nullable=True)
    # When what it tells happened, from its own time words read as of created_at (migration 4;
    # ``memory_core.text.event_time``): "yesterday" written on 4 Oct is [3 Oct, 4 Oct). None
    # when its words name no time.
    event_start: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    event_end: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # An allergy, diet, dislike or standing "never ..." (migration 6; memory_core.text.constraints):
    # retrieval offers a user's constraints to every request they bear on.
    constraint_kind: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # The values of its PII placeholders, Fernet-encrypted (revision 0002; memory_core/pii_vault.py).
    sealed: Mapped[str | None] = mapped_column(Text, nullable=True)

    __table_args__ = (
        Index("ix_memories_user_status", "user_id", "status"),
        Index("ix_memories_pending", "vector_written", "status"),
        Index("ix_memories_user_hash", "user_id", "content_hash"),
        Index("ix_memories_created", "created_at"),
        # Neighbour expansion: a user's active memory written just before / after a hit.
        Index("ix_memories_user_status_created", "user_id", "status", "created_at"),
        # A question that names a time: the memories whose told time falls inside it.
        Index("ix_memories_user_event", "user_id", "event_start", "event_end"),
        # The user's constraints, offered to every request they bear on.
        Index("ix_memories_user_constraint", "user_id", "constraint_kind"),
    )


class EnglishVectorRow(Base):
    """A memory's vector from the English encoder (revision 0005; memory_core/english_leg.py).
    Valid only for the model and the text it was made from: a row whose ``model`` or
    ``content_hash`` differs from the memory's is ignored and replaced when next needed. Deleted
    with its memory (a user's erasure removes them all)."""

    __tablename__ = "english_vectors"

    memory_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(256), index=True)
    model: Mapped[str] = mapped_column(String(128))
    content_hash: Mapped[str] = mapped_column(String(64))
    vector: Mapped[bytes] = mapped_column(LargeBinary)  # float16, little-endian


class HistoryRow(Base):
    """Append-only audit log: the app never updates or deletes these rows."""

    __tablename__ = "memory_history"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    memory_id: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[str] = mapped_column(String(256), index=True)
    action: Mapped[str] = mapped_column(String(32))
    actor: Mapped[str] = mapped_column(String(256))
    at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    before: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    note: Mapped[str] = mapped_column(Text, default="")


class MessageRow(Base):
    """Chat messages: the provenance that memories point back to through ``source``."""

    __tablename__ = "messages"

    message_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(256), index=True)
    session_id: Mapped[str] = mapped_column(String(256), index=True)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # What the app needs to show the message again, e.g. which memories an assistant reply was
    # built from (``services.turn_info``); None for most messages. Added by migration 8.
    meta: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)


class RetrievalMetricRow(Base):
    """One row per search: per-stage latency for the analytics page."""

    __tablename__ = "retrieval_metrics"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    user_id: Mapped[str] = mapped_column(String(256))
    cache_hit: Mapped[bool] = mapped_column(Boolean)
    degraded: Mapped[bool] = mapped_column(Boolean, default=False)
    results: Mapped[int] = mapped_column(Integer)
    rewrite_ms: Mapped[float] = mapped_column(Float, default=0.0)
    embed_ms: Mapped[float] = mapped_column(Float, default=0.0)
    search_ms: Mapped[float] = mapped_column(Float, default=0.0)
    rerank_ms: Mapped[float] = mapped_column(Float, default=0.0)
    fetch_ms: Mapped[float] = mapped_column(Float, default=0.0)
    total_ms: Mapped[float] = mapped_column(Float, default=0.0)


class JobRunRow(Base):
    __tablename__ = "job_runs"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    job: Mapped[str] = mapped_column(String(64), index=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    outcome: Mapped[str] = mapped_column(String(16))
    counts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    detail: Mapped[str] = mapped_column(Text, default="")


class JobLockRow(Base):
    """A lease so that, with several app processes, a job runs in one of them only."""

    __tablename__ = "job_locks"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ApiKeyRow(Base):
    """A key of the HTTP API (``api/keys.py``). Only a hash of its secret is kept; ``key_id`` is
    the public part written into the key itself, so a request finds its row without a scan."""

    __tablename__ = "api_keys"

    key_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    tenant: Mapped[str] = mapped_column(String(64), index=True)
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    secret_hash: Mapped[str] = mapped_column(String(128))
    rate_limit_per_min: Mapped[int | None] = mapped_column(Integer, nullable=True)  # None = the default
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class ApiRateCounterRow(Base):
    """Requests of one API key in one fixed window: the rate limit shared by every API process
    when no Redis is configured."""

    __tablename__ = "api_rate_counters"

    key_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    window_start: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)  # epoch s
    hits: Mapped[int] = mapped_column(Integer, default=0)
