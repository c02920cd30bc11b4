"""Two fixed sleeps of the Milvus client libraries that the tests wait through without need,
replaced (for the test process only) by looks at the same real Milvus that end as soon as it has
answered. What the libraries decide and return stays the same; only the idle time goes.

* pymilvus waits for a new index by sleeping 0.5 s before each look at its state
  (``GrpcHandler.wait_for_creating_index``): every collection the store creates cost at least
  1 s (two indexes, dense and BM25), though Milvus builds the index of an empty collection at
  once. The store creates a shard collection on a user's first write, so most engine tests paid
  it. ``poll_index_state_quickly`` looks after 5 ms, then twice as long each time up to the same
  0.5 s; it still returns only when Milvus says the index is built (or failed), within the same
  timeout.
* milvus-lite starts its server process and sleeps 0.5 s to see whether it dies at once
  (``Server.start``: alive after 0.5 s is "started", dead is "failed"). Every engine on a new
  Lite file paid it. Measured here: a healthy server has its socket after ~20 ms; one on a
  damaged file (truncated, garbage) exits after ~25 ms without ever making it.
  ``start_lite_when_it_listens`` watches the same process every 5 ms: dead is "failed", as
  before; its socket there (and the process alive) is "started"; neither after 0.5 s is
  "started", as before.

Each replacement is installed only over the library code it was written from (the versions
pinned in requirements.txt: pymilvus 2.5.18, milvus-lite 2.5.1); if that code has changed, the
library's own wait is kept and the tests are only slower.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import time
import warnings
from typing import Any, Callable, Optional

FIRST_LOOK_S = 0.005
LONGEST_WAIT_S = 0.5  # pymilvus' fixed interval, and milvus-lite's start-up wait

# start of the sha256 of the replaced functions' source, as shipped in the pinned versions
INDEX_WAIT_DIGEST = "3d5736933566986c"
LITE_START_DIGEST = "945765322661355a"


def _digest(fn: Callable[..., Any]) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]


def _unchanged(fn: Callable[..., Any], expected: str, what: str) -> bool:
    if _digest(fn) == expected:
        return True
    warnings.warn(f"{what} is not the code tests/milvus_waits.py was written from: its own wait is kept",
                  stacklevel=3)
    return False


def poll_index_state_quickly() -> Callable[[], None]:
    """Install the quicker index wait on pymilvus' gRPC handler; returns the undo."""
    from pymilvus.client import grpc_handler
    from pymilvus.client.types import IndexState
    from pymilvus.decorators import retry_on_rpc_failure
    from pymilvus.exceptions import MilvusException

    handler = grpc_handler.GrpcHandler
    original = handler.__dict__["wait_for_creating_index"]
    if not _unchanged(original, INDEX_WAIT_DIGEST, "pymilvus' GrpcHandler.wait_for_creating_index"):
        return lambda: None

    @retry_on_rpc_failure()
    def wait_for_creating_index(self: Any, collection_name: str, index_name: str,
                                timeout: Optional[float] = None, **kwargs: Any) -> tuple[bool, str]:
        timestamp = self.alloc_timestamp()
        start = time.time()
        pause = FIRST_LOOK_S
        while True:
            time.sleep(pause)
            state, fail_reason = self.get_index_state(collection_name, index_name, timeout=timeout,
                                                      timestamp=timestamp, **kwargs)
            if state == IndexState.Finished:
                return True, fail_reason
            if state == IndexState.Failed:
                return False, fail_reason
            if isinstance(timeout, int) and time.time() - start > timeout:
                raise MilvusException(message=f"collection {collection_name} create index {index_name} "
                                              f"timeout in {timeout}s")
            pause = min(pause * 2, LONGEST_WAIT_S)

    handler.wait_for_creating_index = wait_for_creating_index  # type: ignore[method-assign]

    def undo() -> None:
        handler.wait_for_creating_index = original  # type: ignore[method-assign]

    return undo


def start_lite_when_it_listens() -> Callable[[], None]:
    """Install the quicker start-up check on milvus-lite's ``Server``; returns the undo."""
    import fcntl
    import subprocess

    from milvus_lite import server as lite

    original = lite.Server.__dict__["start"]
    if not _unchanged(original, LITE_START_DIGEST, "milvus-lite's Server.start"):
        return lambda: None

    def start(self: Any) -> bool:
        assert self._p is None, "Server already started"
        self._lock_fd = open(self._lock_path, 'a')
        try:
            fcntl.lockf(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            start_env = {
                "LD_LIBRARY_PATH": str(self._bin_path) + ':' + os.environ.get('LD_LIBRARY_PATH', ''),
                "DYLD_LIBRARY_PATH": str(self._bin_path) + ':' + os.environ.get('LD_LIBRARY_PATH', ''),
            }
            src_env = os.environ.copy()
            src_env.pop("LD_LIBRARY_PATH", None)
            src_env.pop("DYLD_LIBRARY_PATH", None)
            start_env.update(src_env)
            self._p = subprocess.Popen(args=self.args, env=start_env, cwd=str(self._work_dir))
            deadline = time.monotonic() + LONGEST_WAIT_S
            while True:
                if self._p.poll() is not None:  # died during start-up: "failed", as the library says
                    lite.logger.error("Start milvus-lite failed")
                    return False
                listening = self._address is None and os.path.exists(self._uds_path)
                if listening or time.monotonic() >= deadline:
                    return True
                time.sleep(FIRST_LOOK_S)
        except BlockingIOError:
            lite.logger.error("Open %s failed, the file has been opened by another program", self._db_file)
            return False

    lite.Server.start = start  # type: ignore[method-assign]

    def undo() -> None:
        lite.Server.start = original  # type: ignore[method-assign]

    return undo
