"""Milvus Lite's child process writes an INFO line to stderr for every index commit (its
tantivy text index ignores ``RUST_LOG``), thousands of lines for a library user of
``open_memory()`` or a benchmark. The child inherits file descriptor 2 when pymilvus starts
it, so for that moment only, fd 2 points at ``/dev/null`` (or at the file named by
``MILVUS_LITE_STDERR``, to keep what it says); this process's own stderr is restored at once.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterator

_SWAP = threading.Lock()  # two engines opening at once must not restore each other's fd


@contextmanager
def lite_child_stderr() -> Iterator[None]:
    """While the block runs, a child started by this process writes its stderr elsewhere."""
    target = os.environ.get("MILVUS_LITE_STDERR") or os.devnull
    with _SWAP:
        try:
            sink = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError:
            yield  # an unwritable log path costs only the noise, never the store
            return
        saved = os.dup(2)
        try:
            os.dup2(sink, 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(sink)
