"""One meaning for "the SQL database is down", shared by every service that talks to users.

A SQL driver raises its own errors when the server is down, restarting, unreachable or out of
connections; callers above the engine (the chat page, the HTTP API) must say so plainly and keep
what the user sent, not show a driver traceback. ``database_guard`` turns those errors (and only
those: integrity or programming errors are bugs and stay as they are) into
``DatabaseUnavailable``, a ``BackendUnavailable`` whose message is fit to show. Which driver
errors those are is storage's knowledge (``memory_core.storage.errors``).
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

from memory_core.errors import BackendUnavailable
from memory_core.storage.errors import DATABASE_DOWN, is_database_down

__all__ = ["DATABASE_DOWN", "DATABASE_UNAVAILABLE", "DatabaseUnavailable", "database_guard", "is_database_down"]

log = logging.getLogger(__name__)

DATABASE_UNAVAILABLE = "The memory database is unavailable; try again shortly."


class DatabaseUnavailable(BackendUnavailable):
    """The SQL database (messages, memories) cannot be reached; the message is fit to show."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(DATABASE_UNAVAILABLE)
        self.detail = detail


@contextmanager
def database_guard(operation: str) -> Iterator[None]:
    """Turn a driver's "cannot reach the server" into ``DatabaseUnavailable``."""
    try:
        yield
    except DATABASE_DOWN as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.warning("%s: the database is unavailable: %s", operation, detail)
        raise DatabaseUnavailable(detail) from exc
