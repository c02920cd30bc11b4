"""SQL access for the HTTP API's keys and its shared rate-limit counters.

Kept beside the memory repository (same database, same migrations) so the API process needs no
database of its own, and so the API layer itself never touches SQLAlchemy: it gets plain
``ApiKeyRecord`` values and counts. Hashing and key formats are the API's business
(``api/keys.py``); this module only stores what it is given.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from memory_core.errors import ValidationError
from memory_core.storage.schema import ApiKeyRow, ApiRateCounterRow


@dataclass(frozen=True)
class ApiKeyRecord:
    key_id: str
    name: str
    tenant: str
    admin: bool
    secret_hash: str
    rate_limit_per_min: int | None
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None


def _record(row: ApiKeyRow) -> ApiKeyRecord:
    return ApiKeyRecord(key_id=row.key_id, name=row.name, tenant=row.tenant, admin=bool(row.admin),
                        secret_hash=row.secret_hash, rate_limit_per_min=row.rate_limit_per_min,
                        created_at=row.created_at, expires_at=row.expires_at, revoked_at=row.revoked_at)


class ApiKeyRepository:
    """Keys and rate counters in the engine's SQL database (tables of the schema's baseline revision; numbered migration 6 before Alembic)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    # ---- keys -------------------------------------------------------------------------------
    def add(self, record: ApiKeyRecord) -> None:
        """Store a new key; a name already taken is refused (names are what the logs show)."""
        try:
            with self._sessions.begin() as session:
                if session.scalar(select(ApiKeyRow.key_id).where(ApiKeyRow.name == record.name)) is not None:
                    raise ValidationError(f"an API key named {record.name!r} already exists")
                session.add(ApiKeyRow(**record.__dict__))
        except IntegrityError as exc:  # two operators adding the same name at once
            raise ValidationError(f"an API key named {record.name!r} already exists") from exc

    def get(self, key_id: str) -> ApiKeyRecord | None:
        with self._sessions() as session:
            row = session.get(ApiKeyRow, key_id)
            return _record(row) if row is not None else None

    def all(self) -> list[ApiKeyRecord]:
        with self._sessions() as session:
            return [_record(r) for r in session.scalars(select(ApiKeyRow).order_by(ApiKeyRow.tenant, ApiKeyRow.name))]

    def revoke(self, name: str, at: datetime) -> bool:
        """Mark the named key revoked (kept, so the logs' names still resolve); False if unknown."""
        with self._sessions.begin() as session:
            result = session.execute(update(ApiKeyRow).where(ApiKeyRow.name == name, ApiKeyRow.revoked_at.is_(None))
                                     .values(revoked_at=at))
            return bool(result.rowcount)

    # ---- rate counters ----------------------------------------------------------------------
    def hit(self, key_id: str, window_start: int) -> int:
        """Count one request of ``key_id`` in the window starting at ``window_start`` (epoch
        seconds) and return the window's count so far. One atomic upsert, so concurrent API
        processes never lose a count."""
        table = ApiRateCounterRow.__table__
        insert = pg_insert if self.engine.dialect.name == "postgresql" else sqlite_insert
        statement = insert(table).values(key_id=key_id, window_start=window_start, hits=1)
        statement = statement.on_conflict_do_update(index_elements=[table.c.key_id, table.c.window_start],
                                                    set_={"hits": table.c.hits + 1})
        with self.engine.begin() as conn:
            conn.execute(statement)
            return int(conn.execute(select(table.c.hits).where(table.c.key_id == key_id,
                                                                table.c.window_start == window_start)).scalar_one())

    def prune_counters(self, before: int) -> int:
        """Drop counters of windows that started before ``before`` (they can no longer matter)."""
        with self.engine.begin() as conn:
            return int(conn.execute(delete(ApiRateCounterRow.__table__)
                                    .where(ApiRateCounterRow.__table__.c.window_start < before)).rowcount)


def open_api_keys(database_url: str) -> ApiKeyRepository:
    """A key repository on ``database_url`` with the schema migrated (for the operator command,
    which must not load the embedding model just to add a key)."""
    from memory_core.storage.database import create_sql_engine
    from memory_core.storage.migrations import migrate

    sql = create_sql_engine(database_url)
    migrate(sql)
    return ApiKeyRepository(sql)
