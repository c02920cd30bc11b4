"""Session fixture: a real Milvus 2.3.5 standalone server (PyPI ``milvus``) on a free loopback
port, started once per test process and stopped at its end (bench/milvus_server.py says how it is
kept off every other interface).

Where the machine cannot run it (the package, ``unshare``/``socat``/``ip`` or the permission to
create a network namespace is missing) the tests that need it are skipped with that reason; set
``MEMORY_TEST_MILVUS_SERVER=require`` (CI) to make that a failure instead. A server that has
everything it needs but does not come up is a failure, never a skip.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from bench.milvus_server import LocalMilvusServer, MilvusServerUnavailable, preflight


def _unavailable(reason: str) -> None:
    message = f"a real Milvus server cannot run here: {reason}"
    if os.environ.get("MEMORY_TEST_MILVUS_SERVER", "").lower() == "require":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalMilvusServer]:
    """The running server; ``.uri`` is ``http://127.0.0.1:<port>``. Tests that kill it must
    ``start()`` it again before they return (the data survives: same folder, same uri)."""
    reason = preflight()
    if reason:
        _unavailable(reason)
    server = LocalMilvusServer(Path(tmp_path_factory.mktemp("milvus-server")))
    try:
        server.start()
    except MilvusServerUnavailable as exc:
        _unavailable(str(exc))
    try:
        yield server
    finally:
        server.stop(timeout_s=5)  # its data is thrown away: no need to wait for a clean shutdown
