"""The SQL adapter's shared part: the engine, one session per unit of work, a ping.

Every repository of ``memory_core/storage`` derives from it; ``SqlRepository`` combines them.
A session is opaque to callers above storage: they get one from ``session()`` to make several
repository calls one transaction, and pass it back; they never query through it.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker


class SqlBase:
    """Holds the engine and makes sessions; the repositories add the queries."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self._sessions.begin() as session:
            yield session

    @property
    def database(self) -> Engine:
        """The SQLAlchemy engine, for the storage adapters that keep their own tables in the same
        database (API keys, sign-in throttle, sign-out list): ``sql_ports.SqlConnection.database``."""
        return self.engine

    @property
    def location(self) -> str:
        """The database URL with its password masked (SQLAlchemy's ``str(url)``)."""
        return str(self.engine.url)

    def ping(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            return True
        except Exception:
            return False
