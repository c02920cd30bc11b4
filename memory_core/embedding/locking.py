"""A cross-process file lock for model caches: several processes (app, scheduler, tests,
benchmarks) may prepare the same model folder at once, and must do it once without clashing.

``filelock`` holds the lock (``flock`` on POSIX, a lock file elsewhere); this only makes sure
the folder exists first."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from filelock import FileLock


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path):
        yield


def publish_folder(target_dir: Path, ready: Callable[[], bool], build: Callable[[Path], None]) -> Path:
    """Make the model folder ``target_dir`` once across processes; return it.

    ``ready()`` says whether a finished folder is already there (checked again under the lock, as
    another process may have finished while this one waited); ``build(tmp)`` writes the folder's
    files, its marker last, into a temporary sibling that is then renamed into place, replacing a
    stale or foreign folder. Temporary folders left by a crashed build are removed."""
    target_dir = Path(target_dir)
    if ready():
        return target_dir
    parent = target_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    with file_lock(parent / f".{target_dir.name}.lock"):
        if ready():
            return target_dir
        for stale in parent.glob(f".{target_dir.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target_dir.name}.tmp-", dir=parent))
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache may be shared by services
        try:
            build(tmp)
            if target_dir.exists():
                old = parent / f".{target_dir.name}.tmp-old-{os.getpid()}"
                target_dir.rename(old)
                shutil.rmtree(old, ignore_errors=True)
            tmp.rename(target_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return target_dir
