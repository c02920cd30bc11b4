"""The shared fixtures keep their promises: ``make_engine`` refuses what it does not know, and a
SQLite engine asks for no PostgreSQL or Redis (the fast lane runs without them)."""
from __future__ import annotations

import pytest

from memory_core.cache import InProcessCache


def test_make_engine_refuses_unknown_keywords(make_engine) -> None:  # type: ignore[no-untyped-def]
    """A misspelt setting used to be dropped without a word, so the test checked the defaults."""
    with pytest.raises(TypeError, match="max_input_charz"):
        make_engine(max_input_charz=50)
    with pytest.raises(TypeError, match="colck"):
        make_engine(colck=None)
    with pytest.raises(ValueError, match="sql must be"):
        make_engine(sql="mysql")
    with pytest.raises(ValueError, match="cache must be"):
        make_engine(cache="memcached")


def test_make_engine_applies_settings_and_parts(make_engine) -> None:  # type: ignore[no-untyped-def]
    cache = InProcessCache()
    engine = make_engine(max_input_chars=123, write_limit_chars_per_minute=4_567, cache=cache)
    assert engine.settings.max_input_chars == 123
    assert engine.settings.write_limit_chars_per_minute == 4_567  # any Settings field, not a short list
    assert engine.cache is cache


def test_a_sqlite_engine_needs_no_postgres_or_redis(make_engine, request: pytest.FixtureRequest) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine()
    assert engine.repo.ping()
    assert "pg_url" not in request.fixturenames and "redis_url" not in request.fixturenames


def test_a_postgres_engine_asks_for_postgres(make_engine, request: pytest.FixtureRequest) -> None:  # type: ignore[no-untyped-def]
    """The positive control of the test above: asking for PostgreSQL shows in the request."""
    engine = make_engine(sql="postgres")
    assert engine.repo.ping() and "postgresql" in str(engine.repo.engine.url)
    assert "pg_url" in request.fixturenames and "redis_url" not in request.fixturenames
