"""Engine construction for SQLite (embedded) and PostgreSQL (production)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url


def create_sql_engine(url: str) -> Engine:
    """An engine with the settings each backend needs to be safe under threads and restarts.

    SQLite: WAL + busy timeout so Streamlit's threads and the scheduler do not trip over locks.
    PostgreSQL: ``pool_pre_ping`` so a restarted server costs one reconnect, not a failed request.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()
            # SQLite's own lower() folds ASCII only, so a text search for "zürich" missed
            # "ZÜRICH" here while PostgreSQL found it: the same Unicode lowercasing as Python.
            dbapi_conn.create_function("lower", 1, _unicode_lower, deterministic=True)

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20, pool_recycle=1800)


def _unicode_lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value
