"""The sign-in throttle's counters in SQL (``login_throttle``), shared by every app process.

The throttle's policy lives in ``services/throttle.py``; this is its store, here because it
speaks SQL. The table is the sign-in's own, created on first use (not part of the memory
schema's migrations); rows hold a key hash, a count and the last failure time only.
"""
from __future__ import annotations

from typing import Sequence

from sqlalchemy import Column, Engine, Float, Integer, MetaData, String, Table, case, delete, inspect, select, update
from sqlalchemy.exc import IntegrityError


class SqlThrottleStore:
    """Counters in a ``login_throttle`` table of the app's SQL database, so every app process
    (and replica) counts the same failures. The table is the sign-in's own, created on first
    use; rows hold a key hash, a count and the last failure time only."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._table = Table("login_throttle", MetaData(), Column("key", String(64), primary_key=True),
                            Column("failures", Integer, nullable=False), Column("last_failure", Float, nullable=False))
        try:
            self._table.create(engine, checkfirst=True)
        except Exception:  # another process created it between the check and the create
            if not inspect(engine).has_table("login_throttle"):
                raise

    def counts(self, keys: Sequence[str], now: float, window_s: float) -> dict[str, tuple[int, float]]:
        t = self._table
        with self._engine.connect() as conn:
            rows = {r.key: (int(r.failures), float(r.last_failure))
                    for r in conn.execute(select(t).where(t.c.key.in_(list(keys))))}
        out = {}
        for key in keys:
            count, last = rows.get(key, (0, 0.0))
            out[key] = (count, last) if now - last < window_s else (0, last)
        return out

    def add_failure(self, keys: Sequence[str], now: float, window_s: float) -> None:
        t = self._table
        for key in keys:
            # One UPDATE is atomic on both SQLite and PostgreSQL: two processes counting the
            # same failure at once both land. A first failure inserts; losing that race to
            # another process means its row now exists, so the update is tried once more.
            bump = (update(t).where(t.c.key == key)
                    .values(failures=case((t.c.last_failure > now - window_s, t.c.failures + 1), else_=1),
                            last_failure=now))
            for attempt in range(2):
                try:
                    with self._engine.begin() as conn:
                        if conn.execute(bump).rowcount == 0:
                            conn.execute(t.insert().values(key=key, failures=1, last_failure=now))
                    break
                except IntegrityError:
                    if attempt:
                        raise

    def clear(self, keys: Sequence[str]) -> None:
        with self._engine.begin() as conn:
            conn.execute(delete(self._table).where(self._table.c.key.in_(list(keys))))

    def prune(self, before: float) -> int:
        with self._engine.begin() as conn:
            return int(conn.execute(delete(self._table).where(self._table.c.last_failure < before)).rowcount or 0)
