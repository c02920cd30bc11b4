"""Database and vector-store locations as text that names a place but holds no secret.

In storage because it parses with SQLAlchemy's URL rules (the same ones the engine connects
with), and only ``memory_core/storage`` knows SQLAlchemy.
"""
from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url


def location_without_password(url: str) -> str:
    """``url`` with any password removed, and a local SQLite or Milvus Lite path made absolute
    (two processes started from different directories still name the same files)."""
    if "://" not in url:  # a Milvus Lite file path
        return Path(url).resolve().as_posix()
    try:
        parsed = make_url(url)
    except Exception:  # not a SQLAlchemy URL (e.g. http://milvus:19530 parses, odd ones may not)
        return url.split("@", 1)[-1]
    if parsed.drivername.startswith("sqlite") and parsed.database not in (None, "", ":memory:"):
        parsed = parsed.set(database=Path(parsed.database).resolve().as_posix())
    return parsed._replace(password=None).render_as_string(hide_password=False)  # set() ignores None
