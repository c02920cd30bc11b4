"""The reconcile job after deliberately broken states (vector missing, orphan vector, stale
vector), and the job lease: a second run skips or waits, a foreign holder blocks until its lease
expires. Real Milvus Lite, SQLite and PostgreSQL."""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest

from memory_core import MemoryEngine, RetrievalOptions
from memory_core.indexing import vector_record
from memory_core.maintenance import job_lease, run_reconcile
from memory_core.maintenance.locks import LeaseBusy
from memory_core.vectors.base import VectorRecord
from tests.conftest import open_backend_engine

T0 = datetime(2024, 9, 1, 12, tzinfo=timezone.utc)
QUIET = RetrievalOptions(use_cache=False, record=False)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def engine(request, tmp_path_factory, embedder, model_cache_dir) -> Iterator[MemoryEngine]:  # type: ignore[no-untyped-def]
    eng = open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, "reconcile", T0)
    yield eng
    eng.close()


def _clean(engine: MemoryEngine) -> None:
    counts = run_reconcile(engine.parts, wait=True)
    assert counts["skipped"] == 0 and counts["errors"] == 0
    again = run_reconcile(engine.parts, wait=True)
    assert (again["written"], again["removed"], again["reembedded"]) == (0, 0, 0)


def test_reconcile_repairs_missing_orphan_and_stale_vectors(engine: MemoryEngine) -> None:
    user = f"r-{uuid.uuid4().hex[:8]}"
    ids = [engine.add(user, text).created[0] for text in (
        "I keep bees on the roof of my building", "My passport expires in March 2027",
        "我每天早上六点起床跑步", "I am learning Portuguese for a trip to Lisbon")]
    _clean(engine)
    bees, passport, running, portuguese = ids

    # 1. A vector went missing (a delete that should not have happened).
    engine.vectors.delete([bees])
    # 2. Orphans: a vector with no SQL row, for a known user and for a user SQL never had.
    vec = engine.embedder.embed_passages(["ghost memory"])[0]
    ghost = VectorRecord(memory_id=f"ghost-{uuid.uuid4().hex[:8]}", user_id=user, vector=vec, text="ghost memory",
                         importance=3, created_at=int(T0.timestamp()), expires_at=0, memory_type="declarative",
                         content_hash="x" * 64)
    stranger = replace(ghost, memory_id=f"ghost-{uuid.uuid4().hex[:8]}", user_id=f"gone-{uuid.uuid4().hex[:6]}")
    engine.vectors.upsert([ghost, stranger])
    # 3. Stale: the vector holds another text's embedding under a wrong hash.
    record = engine.get(passport)
    wrong = engine.embedder.embed_passages(["I like strawberry ice cream"])[0]
    engine.vectors.upsert([replace(vector_record(record, wrong), content_hash="0" * 64)])
    assert bees not in engine.vectors.user_hashes(user)
    assert engine.vectors.user_hashes(user)[passport] == "0" * 64

    counts = run_reconcile(engine.parts)
    assert counts["skipped"] == 0 and counts["errors"] == 0
    assert (counts["written"], counts["removed"], counts["reembedded"]) == (1, 2, 1)
    hashes = engine.vectors.user_hashes(user)
    assert set(hashes) == set(ids)
    assert all(hashes[mid] == engine.get(mid).content_hash for mid in ids)
    assert stranger.user_id not in set(engine.vectors.all_user_ids())
    # Retrieval sees the repaired vectors.
    assert engine.search(user, "beekeeping on the roof", top_k=1, options=QUIET).results[0].memory_id == bees
    assert engine.search(user, "when does my passport expire?", top_k=1, options=QUIET).results[0].memory_id == passport
    assert running in [r.memory_id for r in engine.search(user, "早上跑步", options=QUIET).results]
    # Idempotent.
    again = run_reconcile(engine.parts)
    assert (again["written"], again["removed"], again["reembedded"]) == (0, 0, 0)


def test_vectors_of_retired_memories_are_removed(engine: MemoryEngine) -> None:
    user = f"r-{uuid.uuid4().hex[:8]}"
    mid = engine.add(user, "I used to collect vintage stamps").created[0]
    _clean(engine)
    engine.expire(mid, actor="staff:hal")
    record = engine.get(mid)
    vec = engine.embedder.embed_passages([record.content])[0]
    engine.vectors.upsert([vector_record(record, vec)])  # a vector that outlived its memory's expiry
    counts = run_reconcile(engine.parts, user_id=user)
    assert counts["removed"] == 1 and mid not in engine.vectors.user_hashes(user)


def test_second_run_skips_or_waits(engine: MemoryEngine) -> None:
    entered = threading.Event()

    def hold_lease() -> None:
        with job_lease(engine.parts, "reconcile"):
            entered.set()
            time.sleep(1.0)

    holder = threading.Thread(target=hold_lease)
    holder.start()
    entered.wait(5)
    skipped = run_reconcile(engine.parts)
    started = time.monotonic()
    waited = run_reconcile(engine.parts, wait=True)
    elapsed = time.monotonic() - started
    holder.join()
    assert skipped["skipped"] == 1 and "already running" in skipped["reason"]
    assert waited["skipped"] == 0 and elapsed >= 0.3  # it waited for the holder to finish


def test_a_lease_held_by_another_process(engine: MemoryEngine) -> None:
    now = datetime.now(timezone.utc)
    name, other = "maintenance.reconcile", f"elsewhere:1:{uuid.uuid4().hex[:6]}"
    assert engine.repo.try_lock(name, other, now, now + timedelta(seconds=60))
    try:
        counts = run_reconcile(engine.parts)
        assert counts["skipped"] == 1 and "another process" in counts["reason"]
        with pytest.raises(LeaseBusy), job_lease(engine.parts, "reconcile", wait=True, timeout_s=0.5):
            pass
    finally:
        engine.repo.release_lock(name, other)
    assert run_reconcile(engine.parts)["skipped"] == 0
    # A crashed holder's lease expires and is taken over.
    assert engine.repo.try_lock(name, other, now - timedelta(seconds=120), now - timedelta(seconds=60))
    assert run_reconcile(engine.parts)["skipped"] == 0


def test_the_lease_is_renewed_while_a_long_job_runs(engine: MemoryEngine) -> None:
    from sqlalchemy import select

    from memory_core.storage.schema import JobLockRow

    # Renewal every lease_s/3 leaves a full second of slack for a busy machine.
    with job_lease(engine.parts, "long", lease_s=1.5) as holder:
        time.sleep(3.5)  # more than twice the lease: only renewal keeps it
        with engine.repo.session() as session:
            row = session.scalars(select(JobLockRow).where(JobLockRow.name == "maintenance.long")).one()
            assert row.holder == holder and row.expires_at > datetime.now(timezone.utc)
        assert not engine.repo.try_lock("maintenance.long", "intruder", datetime.now(timezone.utc),
                                        datetime.now(timezone.utc) + timedelta(seconds=5))
    with engine.repo.session() as session:  # released at the end
        assert session.scalars(select(JobLockRow).where(JobLockRow.name == "maintenance.long")).first() is None
