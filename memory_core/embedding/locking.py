"""A cross-process file lock for model caches: several processes (app, scheduler, tests,
benchmarks) may prepare the same model folder at once, and must do it once without clashing.

``filelock`` holds the lock (``flock`` on POSIX, a lock file elsewhere); this only makes sure
the folder exists first."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from filelock import FileLock


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path):
        yield
