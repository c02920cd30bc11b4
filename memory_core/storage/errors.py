"""What the SQL driver's errors mean to the layers above: "the database is down" or not.

The driver (through SQLAlchemy) raises its own errors when the server is down, restarting,
unreachable or out of connections. Only storage knows those classes; callers above ask
``is_database_down`` or catch ``DATABASE_DOWN``, so no service or pipeline imports SQLAlchemy.
Integrity and programming errors are bugs and are not in the tuple.
"""
from __future__ import annotations

from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

DATABASE_DOWN: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, DisconnectionError,
                                                  PoolTimeoutError)


def is_database_down(exc: BaseException) -> bool:
    return isinstance(exc, DATABASE_DOWN)
