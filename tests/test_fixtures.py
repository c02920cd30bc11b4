"""The shared fixtures keep their promises: ``make_engine`` refuses what it does not know, and a
SQLite engine asks for no PostgreSQL or Redis (the fast lane runs without them); engines get the
parts of their lane (tests/lanes.py)."""
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


# ---- lanes (tests/lanes.py): which parts an engine gets ------------------------------------------
def _is_stand_in(engine) -> bool:  # type: ignore[no-untyped-def]
    from memory_core.embedding.hashing import HashingEmbedder
    from memory_core.vectors import MilvusVectorStore
    from memory_core.vectors.memory_store import InMemoryVectorStore

    fake = isinstance(engine.vectors, InMemoryVectorStore) and isinstance(engine.embedder, HashingEmbedder)
    real = isinstance(engine.vectors, MilvusVectorStore) and not isinstance(engine.embedder, HashingEmbedder)
    assert fake or real, (type(engine.vectors), type(engine.embedder))  # never a mix
    return fake


def test_engines_get_the_stand_ins_only_in_the_fast_lane(make_engine, make_settings, tmp_path,  # type: ignore[no-untyped-def]
                                                         request: pytest.FixtureRequest) -> None:
    """This module is listed in FAKE_PARTS_FILES: its engines run on the stand-ins when the run
    leaves slow tests out, on Milvus Lite and e5 otherwise (the full run), whether made by
    ``make_engine`` or opened from settings alone (as the app opens its engine)."""
    from memory_core import open_memory
    from tests.lanes import FAKE_PARTS_FILES, fake_parts_run

    assert "test_fixtures.py" in FAKE_PARTS_FILES
    expected = fake_parts_run(request.config)
    assert _is_stand_in(make_engine()) is expected
    settings = make_settings(milvus_uri=str(tmp_path / "reopen.db"))
    engine = open_memory(settings)
    try:
        assert _is_stand_in(engine) is expected
        stored = engine.add("u1", "My locker code is 4821").created[0]
    finally:
        engine.close()
    again = open_memory(settings)  # reopened on the same settings, its vectors are still there
    try:
        assert again.vectors.user_hashes("u1").keys() == {stored}
    finally:
        again.close()


@pytest.mark.real_parts
def test_a_test_marked_real_parts_gets_the_real_parts_in_every_lane(make_engine, make_settings) -> None:  # type: ignore[no-untyped-def]
    from memory_core import open_memory

    assert not _is_stand_in(make_engine())
    engine = open_memory(make_settings())
    try:
        assert not _is_stand_in(engine)
    finally:
        engine.close()


@pytest.mark.parametrize(("expression", "leaves_out"), [
    ("", False), ("slow", False), ("e2e or slow", False),
    ("not slow", True), ("not  slow", True), ("not slow and not e2e", True), ("not (slow or e2e)", True),
])
def test_which_marker_expressions_make_the_fast_lane(expression: str, leaves_out: bool) -> None:
    from types import SimpleNamespace

    from tests.lanes import leaves_out_slow

    config = SimpleNamespace(getoption=lambda name, default=None: expression)
    assert leaves_out_slow(config) is leaves_out  # type: ignore[arg-type]
