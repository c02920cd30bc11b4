"""PostgreSQL connections cut mid-run: the pool recovers (pre-ping), nothing lost or doubled.

The cut happens in a TCP relay in front of the machine's PostgreSQL (``tests.faults``), so the
test looks to the engine exactly like a server restart without restarting a shared server.
"""
from __future__ import annotations

from memory_core import MemoryQuery
from tests.conftest import fresh_pg_schema
from tests.faults import PostgresRelay


def test_postgres_connections_cut_mid_run_lose_nothing(make_engine, pg_url) -> None:
    relay = PostgresRelay()
    try:
        engine = make_engine(sql="postgres", database_url=relay.url_through(fresh_pg_schema(pg_url)))
        facts = ["My locker code ends with 77", "My sister lives in Porto", "I play the cello on Sundays"]
        before = [engine.add("pg-user", fact).memory_ids[0] for fact in facts]
        assert engine.search("pg-user", "locker code").results
        relay.drop_connections()  # every pooled connection is now dead, as after a restart
        after = engine.add("pg-user", "After the restart I still remember my bike is blue").memory_ids[0]
        response = engine.search("pg-user", "what colour is my bike")
        assert response.results[0].memory_id == after
        page = engine.list_memories(MemoryQuery(user_id="pg-user"))
        assert page.total == 4 and {r.memory_id for r in page.items} == set(before) | {after}
        assert all(r.vector_written for r in page.items)
        assert engine.vectors.count() == 4
        report = engine.reconcile()
        assert (report.written, report.removed, report.reembedded, report.errors) == (0, 0, 0, [])
    finally:
        relay.close()
