"""Stop a Milvus Lite child process when the last store of its file in this process closes.

Why: pymilvus keeps a Lite child (~140 MB) running until the process exits, even after every
client of its file is closed: a process that opens and closes stores (the test suite, an app
that reopens its engine) piled them up until the kernel killed it (127 children, 18 GB). Stores
count themselves in (``lite_opened``) and out (``lite_closed``) per file; the last one out stops
the child with milvus_lite's own ``release_server`` (the data is on disk, and reopening starts a
new child).
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path

log = logging.getLogger(__name__)

_open: dict[str, int] = {}  # Lite file -> stores of this process that have it open
_open_lock = threading.Lock()


def lite_key(uri: str) -> str:
    """The file's absolute, resolved path: how milvus_lite's server manager keys its children."""
    return str(Path(uri).absolute().resolve())


def lite_opened(uri: str) -> str:
    """One more store of this process has the Lite file ``uri`` open; returns its key."""
    key = lite_key(uri)
    with _open_lock:
        _open[key] = _open.get(key, 0) + 1
    return key


def lite_closed(key: str) -> None:
    """One store of this Lite file closed; stop the child once none is left."""
    with _open_lock:
        left = _open.get(key, 0) - 1
        if left > 0:
            _open[key] = left
            return
        _open.pop(key, None)
        try:
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(key)
        except Exception as exc:  # noqa: BLE001 - the child then lives until the process exits, as before
            log.debug("could not stop the Milvus Lite child of %s: %s", key, exc)


def stores_open(uri: str) -> int:
    """How many stores of this process have the Lite file ``uri`` open (for diagnostics and tests)."""
    with _open_lock:
        return _open.get(lite_key(uri), 0)
