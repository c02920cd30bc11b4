"""Revoked sign-in tokens (``services.session_token``) in the app's SQL database, so that every
app process sees a sign-out. Kept here: only ``memory_core/storage`` knows SQLAlchemy."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


class SqlRevocations:
    """Revoked token nonces in a ``session_revocations`` table of the app's SQL database (every
    app process sees a sign-out); rows are dropped once the token would have expired anyway."""

    def __init__(self, engine: "Engine") -> None:
        from sqlalchemy import Column, Float, MetaData, String, Table

        self._engine = engine
        self._table = Table("session_revocations", MetaData(), Column("nonce", String(64), primary_key=True),
                            Column("expires_at", Float, nullable=False))
        try:
            self._table.create(engine, checkfirst=True)
        except Exception:  # another process created it between the check and the create
            from sqlalchemy import inspect

            if not inspect(engine).has_table("session_revocations"):
                raise

    def revoke(self, nonce: str, expires_at: float) -> None:
        from sqlalchemy import delete, insert, select

        t = self._table
        with self._engine.begin() as conn:
            conn.execute(delete(t).where(t.c.expires_at < time.time()))
            if conn.execute(select(t.c.nonce).where(t.c.nonce == nonce)).first() is None:
                conn.execute(insert(t).values(nonce=nonce, expires_at=float(expires_at)))

    def is_revoked(self, nonce: str) -> bool:
        from sqlalchemy import select

        with self._engine.connect() as conn:
            return conn.execute(select(self._table.c.nonce).where(self._table.c.nonce == nonce)).first() is not None
