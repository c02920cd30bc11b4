"""A fixed sleep of milvus-lite that the tests wait through without need, replaced (for the test
process only) by looks at the same real server that end as soon as it has answered. What the
library decides stays the same; only the idle time goes.

milvus-lite starts its server process and sleeps 0.5 s to see whether it dies at once
(``Server.start``: alive after 0.5 s is "started", dead is "failed"). Every engine on a new Lite
file paid it. Measured here: a healthy server has its socket after ~20 ms; one on a damaged file
(truncated, garbage) exits after ~25 ms without ever making it. ``start_lite_when_it_listens``
watches the same process every 5 ms: dead is "failed", as before; its socket there (and the
process alive) is "started"; neither after 0.5 s is "started", as before. (pymilvus' 0.5 s sleeps
while waiting for a new index were replaced here too at first; the store itself no longer uses
that wait: ``memory_core.vectors.schema.wait_for_indexes``.)

The replacement is installed only over the library code it was written from (milvus-lite 2.5.1,
pinned in requirements.txt); if that code has changed, the library's own wait is kept and the
tests are only slower.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import time
import warnings
from typing import Any, Callable

FIRST_LOOK_S = 0.005
LONGEST_WAIT_S = 0.5  # milvus-lite's start-up wait

# start of the sha256 of the replaced function's source, as shipped in the pinned version
LITE_START_DIGEST = "945765322661355a"


def _digest(fn: Callable[..., Any]) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]


def _unchanged(fn: Callable[..., Any], expected: str, what: str) -> bool:
    if _digest(fn) == expected:
        return True
    warnings.warn(f"{what} is not the code tests/milvus_waits.py was written from: its own wait is kept",
                  stacklevel=3)
    return False


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
