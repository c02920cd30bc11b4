"""Shared fixtures: real SQLite and PostgreSQL, real Redis, real Milvus Lite, the real model.

PostgreSQL gets a fresh database per test session (dropped afterwards); Redis keys get a
per-test prefix; every engine gets its own Milvus Lite store under ``tmp_path``. In the fast lane
(``-m "not slow"``) the modules listed in ``tests/lanes.py`` run on an in-memory vector store and
the hashing embedder instead, which pass the same contract tests.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import pytest

if TYPE_CHECKING:
    from datetime import datetime

    from memory_core.config import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RUST_LOG", "error")  # milvus-lite's tantivy logs every commit at INFO

# Shared fixtures live in plain modules, registered as plugins (importing them here would
# shadow the fixture names that other fixtures take as arguments).
pytest_plugins = ("tests.lanes", "tests.fixtures_models", "tests.fixtures_milvus_server", "tests.app_support")

PG_ADMIN_URL = os.environ.get("TEST_PG_ADMIN_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")
REDIS_TEST_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(scope="session", autouse=True)
def _no_idle_milvus_client_waits() -> Iterator[None]:
    """milvus-lite sleeps 0.5 s after starting its server; the tests look sooner, at the same
    real server, and decide as the library does (``tests/milvus_waits.py``)."""
    from tests.milvus_waits import start_lite_when_it_listens

    undo = [start_lite_when_it_listens()]
    yield
    for step in undo:
        step()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A throw-away PostgreSQL database on the local server."""
    from sqlalchemy import create_engine, text

    name = f"ltm_test_{uuid.uuid4().hex[:10]}"
    # pre-ping: a test restarts PostgreSQL mid-run, and teardown must not trip on a dead connection
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))  # name is generated above, not input
    except Exception as exc:  # pragma: no cover - environment problem, stated plainly
        pytest.fail(f"PostgreSQL at 127.0.0.1:5432 is required for these tests: {exc}")
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    yield url
    with admin.connect() as conn:
        conn.execute(text(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"))
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
    admin.dispose()


def fresh_pg_schema(pg_url: str) -> str:
    """A URL whose connections live in a new, empty schema of the test database."""
    from sqlalchemy import create_engine, text

    schema = f"s_{uuid.uuid4().hex[:12]}"
    engine = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))  # generated name, not input
    engine.dispose()
    return f"{pg_url}?options=-csearch_path%3D{schema}"


def isolated_settings(tmp: Path, model_cache_dir: Path, database_url: str = "", **extra: object) -> "Settings":
    """Settings for a store under ``tmp``: embedded Milvus Lite, no Redis, the offline LLM."""
    from memory_core.config import Settings

    return Settings(_env_file=None, data_dir=tmp / "data", database_url=database_url,  # type: ignore[call-arg]
                    milvus_uri=str(tmp / "m.db"), model_cache_dir=model_cache_dir, redis_url="",
                    openai_base_url="", openai_api_key=None, llm_model="", **extra)


def backend_url(request) -> str:  # type: ignore[no-untyped-def]
    """The database URL for a fixture parametrised over "sqlite"/"postgres": "" (the default
    SQLite file under the data dir) or a fresh PostgreSQL schema. PostgreSQL is asked for only
    by the postgres instance, so the SQLite instance runs without it."""
    if request.param == "postgres":
        return fresh_pg_schema(request.getfixturevalue("pg_url"))
    return ""


def backend_engine_fixture(name: str, at: "datetime"):  # type: ignore[no-untyped-def]
    """A module-scoped ``engine`` fixture over both SQL backends ("sqlite", "postgres") with a
    FixedClock at ``at``, for a test module to bind: ``engine = backend_engine_fixture("truth", START)``."""

    @pytest.fixture(scope="module", params=["sqlite", "postgres"])
    def engine(request, tmp_path_factory, embedder, model_cache_dir):  # type: ignore[no-untyped-def]
        made = open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, name, at)
        yield made
        made.close()

    return engine


def open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, name: str,  # type: ignore[no-untyped-def]
                        at: "datetime"):
    """A module-scoped engine on the SQL backend named by ``request.param`` ("sqlite"/"postgres"),
    with a FixedClock at ``at`` (for fixtures parametrised over both backends)."""
    from memory_core import FixedClock, open_memory

    tmp = tmp_path_factory.mktemp(name)
    return open_memory(isolated_settings(tmp, model_cache_dir, backend_url(request)), clock=FixedClock(at),
                       embedder=embedder)


@pytest.fixture(scope="session")
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS_TEST_URL, socket_timeout=2).ping()
    except Exception as exc:  # pragma: no cover
        pytest.fail(f"Redis at {REDIS_TEST_URL} is required for these tests: {exc}")
    return REDIS_TEST_URL


@pytest.fixture
def make_settings(tmp_path: Path, model_cache_dir: Path) -> Callable[..., "object"]:
    """Settings for an isolated store under tmp_path; keyword overrides win."""
    from memory_core.config import Settings

    def _make(**overrides: object) -> Settings:
        values: dict[str, object] = dict(
            data_dir=tmp_path / "data",
            milvus_uri=str(tmp_path / f"m{uuid.uuid4().hex[:8]}.db"),
            model_cache_dir=model_cache_dir,
            redis_url="",
            openai_base_url="",
            openai_api_key=None,
            llm_model="",
        )
        values.update(overrides)
        return Settings(_env_file=None, **values)  # type: ignore[call-arg]

    return _make


_ENGINE_PARTS = frozenset({"clock", "vectors", "llm", "reranker"})


@pytest.fixture
def make_engine(request, make_settings, embedder):  # type: ignore[no-untyped-def]
    """Build engines on a chosen SQL backend and cache; all are closed after the test.

    ``sql``: "sqlite" (default) or "postgres"; ``cache``: "memory" (default), "redis" or a
    ready ``ResultCache``. Other keywords are Settings fields or the parts ``clock``,
    ``vectors``, ``llm``, ``reranker``; anything else is a ``TypeError`` (a misspelt setting
    silently dropped made a test check the defaults instead). PostgreSQL and Redis are asked
    for only when used, so a SQLite test runs without them."""
    from memory_core import open_memory
    from memory_core.cache import RedisCache, ResultCache
    from memory_core.config import Settings
    from tests.lanes import uses_fake_parts, wants_real_parts

    engines = []
    # a test marked ``real_parts`` in a module on the stand-ins embeds with the real model
    model = request.getfixturevalue("real_embedder") if uses_fake_parts(request) and wants_real_parts(request) \
        else embedder

    def _make(sql: str = "sqlite", cache: object = "memory", **kwargs: object):  # type: ignore[no-untyped-def]
        unknown = sorted(k for k in kwargs if k not in _ENGINE_PARTS and k not in Settings.model_fields)
        if unknown:
            raise TypeError(f"make_engine() got unexpected keyword argument(s): {', '.join(unknown)}")
        if sql not in ("sqlite", "postgres"):
            raise ValueError(f"sql must be 'sqlite' or 'postgres', not {sql!r}")
        if not (cache in ("memory", "redis") or isinstance(cache, ResultCache)):
            raise ValueError(f"cache must be 'memory', 'redis' or a ResultCache, not {cache!r}")
        overrides = {k: v for k, v in kwargs.items() if k not in _ENGINE_PARTS}
        if sql == "postgres":
            overrides.setdefault("database_url", fresh_pg_schema(request.getfixturevalue("pg_url")))
        settings = make_settings(**overrides)
        parts = {k: v for k, v in kwargs.items() if k in _ENGINE_PARTS}
        if cache == "redis":
            parts["cache"] = RedisCache(request.getfixturevalue("redis_url"), prefix=f"ltmtest:{uuid.uuid4().hex[:8]}")
        elif isinstance(cache, ResultCache):
            parts["cache"] = cache  # a ready cache object (e.g. one pointed at a dead Redis)
        engine = open_memory(settings, embedder=model, **parts)
        engines.append(engine)
        return engine

    yield _make
    for engine in engines:
        try:
            engine.close()
        except Exception:
            pass


# The fast lane (``scripts/run-tests.sh -m "not slow"``) leaves out what costs most and adds least
# to a quick loop: the PostgreSQL twin of a test that also runs on SQLite, a real browser, model
# conversion and precision checks, subprocess servers, property searches and benchmark harnesses.
# CI runs everything.
_SLOW_FILES = frozenset({
    "test_browser.py", "test_embedding_onnx.py", "test_embedding.py", "test_properties.py", "test_bench_quality.py",
    "test_bench_latency.py", "test_api_deploy.py", "test_mcp.py", "test_deploy.py", "test_faults_postgres.py",
    "test_truth_data.py",
})


# The files that take longest in the full run (measured, longest first). With ``--dist loadfile``
# a worker runs a whole file, and xdist hands files out in the order the workers collected them
# (its default orders them by test count instead: these few-test files then came last, and one
# worker ran the 2-3 minute server files alone at the end). Run them first; the rest follow by
# test count, as xdist would order them.
_LONGEST_FIRST = (
    "test_server_contract.py", "test_server_replicas.py", "test_embedding_onnx.py", "test_truth_over_time.py",
    "test_embedding.py", "test_services_chat.py", "test_services_admin.py", "test_engine_retrieval.py",
    "test_engine_cache.py", "test_pii_vault.py", "test_app_pages.py", "test_api_deploy.py",
    "test_storage_migrations.py", "test_maintenance_expiry.py", "test_milvus_store.py", "test_bench_quality.py",
    "test_properties.py", "test_mcp.py",
)


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # keep the order chosen below (xdist's controller reads it)


def _longest_first(items) -> None:  # type: ignore[no-untyped-def]
    counts: dict[object, int] = {}
    for item in items:
        counts[item.path] = counts.get(item.path, 0) + 1
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -counts[item.path], str(item.path)))


def pytest_collection_modifyitems(config, items) -> None:  # type: ignore[no-untyped-def]
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.path.name in _SLOW_FILES or "postgres" in params.values() or "postgres" in item.name:
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):  # an xdist worker: its order is the order files are handed out
        _longest_first(items)
