"""The telemetry recorder writes queued latency rows and access bumps in bursts, on SQLite and
PostgreSQL: nothing queued before a flush is missing after it, bumps add up, and one bad record
does not lose the rest of its burst."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select

from memory_core.storage.database import create_sql_engine
from memory_core.storage.migrations import migrate
from memory_core.storage.repository import SqlRepository
from memory_core.storage.schema import MemoryRow, RetrievalMetricRow
from memory_core.telemetry import Recorder
from tests.conftest import backend_url

T0 = datetime(2026, 5, 1, 9, tzinfo=timezone.utc)


@pytest.fixture(params=["sqlite", "postgres"])
def repo(request, tmp_path) -> SqlRepository:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'db' / 't.sqlite3'}" if request.param == "sqlite" else backend_url(request)
    engine = create_sql_engine(url)
    migrate(engine)
    return SqlRepository(engine)


def _memory(repo: SqlRepository, memory_id: str) -> None:
    with repo.session() as session:
        repo.insert(session, dict(
            memory_id=memory_id, user_id="u1", session_id=None, content=f"text {memory_id}", summary="",
            importance=3, memory_type="declarative", entities=[], meta={}, status="active",
            created_at=T0, updated_at=T0, expires_at=None, expired_at=None, source=[], access_count=0,
            last_accessed_at=None, superseded_by=None, merged_from=[], vector_written=True,
            content_hash="h", context=None))


def _metric(i: int, **extra: object) -> dict[str, object]:
    return dict(at=T0 + timedelta(seconds=i), user_id="u1", cache_hit=i % 2 == 0, degraded=False, results=5,
                rewrite_ms=0.1, embed_ms=1.0, search_ms=2.0, rerank_ms=0.0, fetch_ms=3.0, total_ms=6.5, **extra)


def _metric_count(repo: SqlRepository) -> int:
    with repo.session() as session:
        return int(session.scalar(select(func.count()).select_from(RetrievalMetricRow)) or 0)


def test_a_burst_from_many_threads_is_all_written_by_the_flush(repo: SqlRepository) -> None:
    _memory(repo, "m1")
    _memory(repo, "m2")
    recorder = Recorder(repo)
    try:
        def search_burst(offset: int) -> None:
            for i in range(150):
                recorder.metric(_metric(offset + i))
                recorder.accessed(["m1"] if i % 3 else ["m1", "m2"], T0 + timedelta(seconds=offset + i))

        threads = [threading.Thread(target=search_burst, args=(k * 1000,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        recorder.flush()
        assert _metric_count(repo) == 600
        m1, m2 = repo.get("m1"), repo.get("m2")
        assert m1 is not None and m2 is not None
        assert m1.access_count == 600 and m2.access_count == 4 * 50
        assert m1.last_accessed_at == T0 + timedelta(seconds=3149)
    finally:
        recorder.close()


def test_an_older_bump_arriving_late_keeps_the_later_access_time(repo: SqlRepository) -> None:
    """Searches on several threads queue their bumps out of order: the last one written is not
    always the latest use (the burst test above saw 09:02:29 instead of 09:52:29 under CI load)."""
    _memory(repo, "m1")
    later, earlier = T0 + timedelta(hours=2), T0 + timedelta(hours=1)
    repo.record_telemetry([], [(["m1"], later)])
    repo.record_telemetry([], [(["m1"], earlier)])
    repo.record_telemetry([], [(["m1"], earlier), (["m1"], T0)])
    record = repo.get("m1")
    assert record is not None and record.access_count == 4 and record.last_accessed_at == later


def test_one_bad_record_does_not_lose_its_burst(repo: SqlRepository, caplog: pytest.LogCaptureFixture) -> None:
    _memory(repo, "m1")
    recorder = Recorder(repo)
    try:
        # Queued while the writer is busy, so all land in one burst with the bad row in the middle.
        gate = threading.Event()
        original = repo.record_telemetry

        def slow_first(metrics, accesses):  # type: ignore[no-untyped-def]
            gate.wait(5)
            return original(metrics, accesses)

        repo.record_telemetry = slow_first  # type: ignore[method-assign]
        recorder.metric(_metric(0))  # the writer takes this one and waits on the gate
        for i in range(1, 11):
            recorder.metric(_metric(i, no_such_column=1) if i == 5 else _metric(i))
            recorder.accessed(["m1"], T0 + timedelta(seconds=i))
        gate.set()
        recorder.flush()
        assert _metric_count(repo) == 10  # 11 queued, the malformed one refused
        m1 = repo.get("m1")
        assert m1 is not None and m1.access_count == 10
        assert any("telemetry write" in r.getMessage() for r in caplog.records)
    finally:
        recorder.close()


def test_close_writes_what_was_queued(repo: SqlRepository) -> None:
    recorder = Recorder(repo)
    for i in range(25):
        recorder.metric(_metric(i))
    recorder.close()
    assert _metric_count(repo) == 25
    with repo.session() as session:
        assert session.scalar(select(func.count()).select_from(MemoryRow)) == 0


def test_records_queued_behind_a_slow_write_go_in_bursts(repo: SqlRepository) -> None:
    """1,000 records queued while a write is slow take a few transactions, not 1,000."""
    recorder = Recorder(repo)
    gate = threading.Event()
    original = repo.record_telemetry
    calls: list[int] = []

    def counted(metrics, accesses):  # type: ignore[no-untyped-def]
        calls.append(len(metrics) + len(accesses))
        gate.wait(5)
        return original(metrics, accesses)

    repo.record_telemetry = counted  # type: ignore[method-assign]
    try:
        recorder.metric(_metric(0))
        for i in range(1, 1000):
            recorder.metric(_metric(i))
        gate.set()
        recorder.flush()
        assert _metric_count(repo) == 1000
        assert sum(calls) == 1000 and len(calls) <= 4, calls
    finally:
        recorder.close()
