"""Nothing is lost between SQL and Milvus: crashes, outages and drift are repaired."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory_core import MemoryQuery
from memory_core.vectors.base import VectorRecord
from tests.faults import DownStore, FailingDeletesStore, FailingWritesStore, WriteDuringReconcileStore

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_failed_vector_write_is_kept_and_reconciled(make_engine, make_settings, embedder, sql: str) -> None:
    settings = make_settings()
    store = FailingWritesStore(settings.resolved_milvus_uri, "memories", embedder.dim)
    engine = make_engine(sql=sql, vectors=store, milvus_uri=settings.resolved_milvus_uri)
    result = engine.add("u1", "My passport expires in March 2027, renew it in January")
    assert result.pending_index == result.created and result.created
    record = engine.get(result.created[0])
    assert not record.vector_written and record.content.startswith("My passport")
    assert store.count() == 0

    store.failing = False
    report = engine.reconcile()
    assert report.written == 1 and report.errors == []
    assert engine.get(result.created[0]).vector_written
    assert engine.search("u1", "when does my passport expire").results[0].memory_id == result.created[0]
    again = engine.reconcile()
    assert (again.written, again.removed, again.reembedded) == (0, 0, 0)
    assert store.count() == 1


@pytest.mark.slow  # a subprocess that loads the model and Lite (~6 s); the full run keeps it
def test_process_killed_between_sql_commit_and_vector_write(make_engine, make_settings, model_cache_dir) -> None:
    settings = make_settings()
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from memory_core import open_memory
        from memory_core.config import Settings
        from tests.faults import DiesOnUpsertStore
        settings = Settings(_env_file=None, data_dir={str(settings.data_dir)!r},
                            milvus_uri={settings.resolved_milvus_uri!r}, model_cache_dir={str(model_cache_dir)!r})
        from memory_core.embedding import load_embedder
        embedder = load_embedder(settings.embedding_model, settings.resolved_model_cache_dir)
        store = DiesOnUpsertStore(settings.resolved_milvus_uri, "memories", embedder.dim)
        engine = open_memory(settings, embedder=embedder, vectors=store)
        engine.add("u1", "Remember: the spare key is under the blue flower pot")
        print("not reached")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 17, proc.stderr[-2000:]
    assert "not reached" not in proc.stdout

    engine = make_engine(milvus_uri=settings.resolved_milvus_uri)
    page = engine.list_memories(MemoryQuery(user_id="u1"))
    assert page.total == 1 and not page.items[0].vector_written
    report = engine.reconcile()
    assert report.written == 1
    hits = engine.search("u1", "where is the spare key").results
    assert [h.memory_id for h in hits] == [page.items[0].memory_id]
    assert engine.vectors.count() == 1


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_reconcile_repairs_missing_orphan_and_stale_vectors(make_engine, embedder, sql: str) -> None:
    engine = make_engine(sql=sql)
    ids = [engine.add("u1", text).memory_ids[0] for text in (
        "I am training for the Berlin marathon in September",
        "My cat is called Miso and she is nine years old",
        "我每天早上喝一杯黑咖啡",
    )]
    engine.vectors.delete([ids[0]])  # missing
    orphan_vec = embedder.embed_passages(["ghost memory"])[0]
    engine.vectors.upsert([VectorRecord("ghost-1", "u1", orphan_vec, "ghost memory", 3, 0, 0, "declarative", "x")])
    engine.vectors.upsert([VectorRecord("ghost-2", "nobody", orphan_vec, "ghost", 3, 0, 0, "declarative", "y")])
    record = engine.get(ids[1])
    stale_vec = embedder.embed_passages(["My dog is called Rex"])[0]
    engine.vectors.upsert([VectorRecord(ids[1], "u1", stale_vec, "My dog is called Rex", 3, 0, 0, "declarative", "stale")])

    report = engine.reconcile()
    assert report.errors == []
    assert report.written == 1 and report.reembedded == 1 and report.removed == 2
    hashes = engine.vectors.user_hashes("u1")
    assert hashes == {mid: engine.get(mid).content_hash for mid in ids}
    assert engine.vectors.user_hashes("nobody") == {}
    assert engine.search("u1", "what is my cat called").results[0].memory_id == ids[1] == record.memory_id
    second = engine.reconcile()
    assert (second.written, second.removed, second.reembedded) == (0, 0, 0)


def test_vector_store_down_degrades_search_and_queues_writes(make_engine, make_settings, embedder) -> None:
    settings = make_settings()
    store = DownStore(settings.resolved_milvus_uri, "memories", embedder.dim)
    store.down = False
    engine = make_engine(vectors=store, milvus_uri=settings.resolved_milvus_uri)
    kept = engine.add("u1", "My bank branch is on Rua Augusta in Lisbon").memory_ids[0]
    engine.add("u2", "My bank branch is on Main Street in Boston")

    store.down = True
    assert engine.health()["vectors"] is False
    response = engine.search("u1", "Lisbon bank branch")
    assert response.degraded and response.notices
    assert [r.memory_id for r in response.results] == [kept]
    queued = engine.add("u1", "My new bank card arrives next Tuesday")
    assert queued.pending_index == queued.created

    store.down = False
    engine.reconcile()
    response = engine.search("u1", "new bank card arrives")
    assert not response.degraded
    assert queued.created[0] in [r.memory_id for r in response.results]


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_a_write_during_reconcile_keeps_its_vector(make_engine, make_settings, embedder, sql: str) -> None:
    """Writes commit SQL before Milvus, so reconcile must read Milvus before SQL: read the other
    way round, a memory written between the two reads looked like an orphan vector and lost it."""
    settings = make_settings()
    store = WriteDuringReconcileStore(settings.resolved_milvus_uri, "memories", embedder.dim)
    engine = make_engine(sql=sql, vectors=store, milvus_uri=settings.resolved_milvus_uri)
    engine.add("u1", "I play the cello on Sundays")
    written: list[str] = []

    store.before_read = lambda: written.extend(engine.add("u1", "My bike is a green Brompton").created)
    engine.reconcile("u1")  # the write lands between reconcile's reads of one user
    store.before_read = lambda: written.extend(engine.add("newcomer", "I grow tomatoes on my balcony").created)
    engine.reconcile()  # a new user's first write lands between the reads of the user lists

    assert len(written) == 2
    for memory_id in written:
        record = engine.get(memory_id)
        assert record.vector_written
        assert engine.vectors.user_hashes(record.user_id).get(memory_id) == record.content_hash
    assert engine.search("newcomer", "what do I grow?").results[0].memory_id == written[1]
    again = engine.reconcile()
    assert (again.written, again.removed, again.reembedded) == (0, 0, 0)


@pytest.mark.parametrize("vector_cache_rows", [0, None])  # as on a Milvus server / embedded default
def test_a_repeat_is_not_folded_into_a_memory_that_left_retrieval(make_engine, make_settings, embedder,
                                                                   vector_cache_rows) -> None:
    """An expiry whose vector delete failed leaves the vector for reconcile; saying the fact
    again must make a new active memory, not refresh the expired one (the fact would vanish)."""
    settings = make_settings()
    store = FailingDeletesStore(settings.resolved_milvus_uri, "memories", embedder.dim,
                                vector_cache_rows=vector_cache_rows)
    engine = make_engine(vectors=store, milvus_uri=settings.resolved_milvus_uri)
    old = engine.add("u1", "I am allergic to peanuts").created[0]
    store.failing = True
    engine.expire(old, actor="staff:x")
    store.failing = False
    again = engine.add("u1", "I am allergic to peanuts")
    assert again.created and again.created[0] != old and again.deduplicated == []
    assert engine.get(old).status.value == "expired"
    assert [r.memory_id for r in engine.search("u1", "peanut allergy").results] == again.created
    engine.reconcile()
    assert [r.memory_id for r in engine.search("u1", "peanut allergy").results] == again.created


def test_a_memory_retired_while_it_is_reindexed_keeps_no_vector(make_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Reconcile (or a restore) indexes records read a moment earlier; one expired in between
    must not end with a vector in Milvus and 'written' in SQL."""
    engine = make_engine()
    memory_id = engine.add("dora", "I keep bees in the garden behind my house").created[0]
    engine.vectors.delete([memory_id], user_id="dora")  # drift: the vector went missing
    real = engine.writer.index_records

    def expire_first(records):  # type: ignore[no-untyped-def]
        if any(r.memory_id == memory_id for r in records):
            engine.expire(memory_id, actor="scheduler")  # lands after reconcile read the row
        return real(records)

    monkeypatch.setattr(engine.writer, "index_records", expire_first)
    engine.reconcile("dora")
    monkeypatch.undo()
    record = engine.get(memory_id)
    assert record.status.value == "expired" and not record.vector_written
    assert memory_id not in engine.vectors.user_hashes("dora")
