"""Migrations and the repository on SQLite and PostgreSQL."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import inspect

from memory_core.storage.database import create_sql_engine
from memory_core.storage.migrations import MIGRATIONS, current_version, migrate
from memory_core.storage.repository import SqlRepository
from tests.conftest import fresh_pg_schema


@pytest.fixture(params=["sqlite", "postgres"])
def sql_url(request, tmp_path, pg_url) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'db' / 'm.sqlite3'}"
    return fresh_pg_schema(pg_url)


def test_migrations_apply_once_and_concurrently(sql_url: str) -> None:
    engine = create_sql_engine(sql_url)
    applied: list[list[int]] = []
    threads = [threading.Thread(target=lambda: applied.append(migrate(engine))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(v for run in applied for v in run) == [m[0] for m in MIGRATIONS]
    assert current_version(engine) == MIGRATIONS[-1][0]
    assert migrate(engine) == []
    tables = set(inspect(engine).get_table_names())
    assert {"memories", "memory_history", "messages", "retrieval_metrics", "job_runs", "job_locks"} <= tables
    columns = {c["name"] for c in inspect(engine).get_columns("memories")}
    assert {"metadata", "superseded_by", "vector_written", "content_hash", "access_count", "source"} <= columns


def test_job_lease_is_exclusive_until_it_expires(sql_url: str) -> None:
    engine = create_sql_engine(sql_url)
    migrate(engine)
    repo = SqlRepository(engine)
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    assert repo.try_lock("merge", "proc-a", now, now + timedelta(minutes=5))
    assert not repo.try_lock("merge", "proc-b", now + timedelta(minutes=1), now + timedelta(minutes=6))
    assert repo.try_lock("merge", "proc-a", now + timedelta(minutes=1), now + timedelta(minutes=6))  # renew
    assert repo.try_lock("merge", "proc-b", now + timedelta(minutes=7), now + timedelta(minutes=12))  # expired
    repo.release_lock("merge", "proc-b")
    assert repo.try_lock("merge", "proc-c", now + timedelta(minutes=8), now + timedelta(minutes=13))
    run = repo.start_job("merge", now)
    repo.finish_job(run, now + timedelta(seconds=3), "ok", {"merged": 2})
    (job,) = repo.job_runs("merge")
    assert job.outcome == "ok" and job.counts == {"merged": 2} and job.finished_at == now + timedelta(seconds=3)
