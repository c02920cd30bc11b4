"""Import pymilvus safely when ``MILVUS_URI`` names a Milvus Lite file.

pymilvus reads an environment variable of the same name at import time and refuses anything
that is not an http(s) URL ("Illegal uri"). Our setting of that name may be a Lite file path,
so the variable is hidden for the duration of the import and put back straight after.
"""
from __future__ import annotations

import os
import threading

_lock = threading.Lock()


def _import() -> None:
    with _lock:
        value = os.environ.get("MILVUS_URI")
        hide = value is not None and not value.startswith(("http://", "https://", "tcp://", "grpc://", "unix:"))
        if hide:
            del os.environ["MILVUS_URI"]
        try:
            import pymilvus  # noqa: F401
        finally:
            if hide:
                os.environ["MILVUS_URI"] = value  # type: ignore[assignment]


_import()
