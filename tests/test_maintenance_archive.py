"""Archiving: low-importance, long-untouched memories go to a per-user gzip JSON-lines file
(named by a hash of the user id), out of Milvus; restore brings them back. Crash safety: the
file is complete and renamed into place before SQL changes; a failed rename changes nothing."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import threading
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

from memory_core import FixedClock, MemoryEngine, MemoryStatus, RetrievalOptions, ValidationError, open_memory
from memory_core.maintenance import archive as archive_module
from memory_core.maintenance import (
    archive_due,
    archive_path,
    archive_stats,
    drop_from_archive,
    erase_user_archive,
    restore_from_archive,
)
from memory_core.maintenance.locks import job_lease
from tests.conftest import isolated_settings, open_backend_engine

T0 = datetime(2023, 6, 1, 12, tzinfo=timezone.utc)
QUIET = RetrievalOptions(use_cache=False, record=False)
ODD_USER = "../../etc/用户 \"o'brien\"\\x"  # must never become a path


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def engine(request, tmp_path_factory, embedder, model_cache_dir, pg_url) -> Iterator[MemoryEngine]:  # type: ignore[no-untyped-def]
    eng = open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, pg_url, "archive", T0)
    yield eng
    eng.close()


def _add(engine: MemoryEngine, user: str, text: str, at: datetime, importance: int) -> str:
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(at)
    result = engine.add(user, text)
    assert len(result.created) == 1
    memory_id = result.created[0]
    if engine.get(memory_id).importance != importance:
        engine.update(memory_id, actor="test", importance=importance)
    return memory_id


def _lines(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_archive_round_trip(engine: MemoryEngine) -> None:
    user = f"{ODD_USER}-{uuid.uuid4().hex[:6]}"
    chatter = _add(engine, user, "lol that movie last night was kind of boring", T0, importance=1)
    ramen = _add(engine, user, "I tried a new ramen place near the office", T0, importance=2)
    hobby = _add(engine, user, "I go climbing at the bouldering gym on Thursdays", T0, importance=3)
    allergy = _add(engine, user, "I am allergic to penicillin", T0, importance=5)
    day_200 = T0 + timedelta(days=200)
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(day_200)

    counts = archive_due(engine, now=day_200)
    assert counts["skipped"] == 0 and counts["errors"] == 0 and counts["archived"] >= 2
    for memory_id in (chatter, ramen):
        record = engine.get(memory_id)
        assert record.status is MemoryStatus.ARCHIVED
        assert engine.history(memory_id)[-1].action == "archive"
    assert {engine.get(m).status for m in (hobby, allergy)} == {MemoryStatus.ACTIVE}
    assert set(engine.vectors.user_hashes(user)) == {hobby, allergy}
    assert ramen not in [r.memory_id for r in engine.search(user, "ramen place near the office", options=QUIET).results]

    path = archive_path(engine.settings, user)
    assert path.name == hashlib.sha256(user.encode("utf-8")).hexdigest() + ".jsonl.gz"
    assert path.parent == engine.settings.data_dir / "archive" and path.exists()
    lines = {line["record"]["memory_id"]: line for line in _lines(path)}
    assert set(lines) == {chatter, ramen}
    assert lines[ramen]["record"]["content"] == "I tried a new ramen place near the office"
    assert lines[ramen]["record"]["user_id"] == user and lines[ramen]["record"]["status"] == "active"

    stats = next(s for s in archive_stats(engine) if s["user_id"] == user)
    assert stats == {"user_id": user, "archived": 2, "file": path.name, "file_bytes": path.stat().st_size,
                     "file_records": 2}

    restored = restore_from_archive(engine, ramen, actor="staff:frank")
    assert restored.status is MemoryStatus.ACTIVE and restored.content == "I tried a new ramen place near the office"
    assert restored.expires_at is not None and restored.expires_at > day_200  # a fresh lifetime
    assert engine.history(ramen)[-1].action == "restore" and engine.history(ramen)[-1].actor == "staff:frank"
    assert engine.search(user, "ramen place near the office", top_k=1, options=QUIET).results[0].memory_id == ramen
    assert {line["record"]["memory_id"] for line in _lines(path)} == {chatter}
    with pytest.raises(ValidationError):
        restore_from_archive(engine, ramen, actor="staff:frank")  # not archived any more

    # A second run finds nothing new for this user (the restored memory was just touched).
    archive_due(engine, now=day_200)
    assert engine.get(ramen).status is MemoryStatus.ACTIVE


def test_retrieval_keeps_a_memory_out_of_the_archive(engine: MemoryEngine) -> None:
    user = f"a-{uuid.uuid4().hex[:8]}"
    used = _add(engine, user, "I tried a new ramen place near the office", T0, importance=2)
    unused = _add(engine, user, "lol that movie last night was kind of boring", T0, importance=1)
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(T0 + timedelta(days=100))
    hits = engine.search(user, "ramen place near the office", top_k=1).results  # a real, recorded retrieval
    assert hits[0].memory_id == used
    engine.flush()
    day_200 = T0 + timedelta(days=200)
    engine.clock.set(day_200)
    archive_due(engine, now=day_200)
    assert engine.get(used).status is MemoryStatus.ACTIVE  # accessed 100 days ago
    assert engine.get(unused).status is MemoryStatus.ARCHIVED
    day_290 = T0 + timedelta(days=290)
    engine.clock.set(day_290)
    archive_due(engine, now=day_290)
    assert engine.get(used).status is MemoryStatus.ARCHIVED  # untouched for 190 days now


def test_a_failed_rename_changes_nothing(engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    user = f"a-{uuid.uuid4().hex[:8]}"
    first = _add(engine, user, "lol that movie last night was kind of boring", T0, importance=1)
    day_200 = T0 + timedelta(days=200)
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(day_200)
    archive_due(engine, now=day_200)
    path = archive_path(engine.settings, user)
    before = path.read_bytes()
    second = _add(engine, user, "I tried a new ramen place near the office", day_200, importance=2)
    day_400 = T0 + timedelta(days=400)
    engine.clock.set(day_400)

    real_replace = os.replace
    seen: list[tuple[str, list[str]]] = []

    def crash(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == path:
            # At the rename the temp file is complete, and SQL has not been touched yet.
            seen.append((engine.get(second).status.value, [line["record"]["memory_id"] for line in _lines(Path(src))]))
            raise OSError("injected: power cut before the rename")
        real_replace(src, dst)

    monkeypatch.setattr(archive_module.os, "replace", crash)
    counts = archive_due(engine, now=day_400)
    monkeypatch.setattr(archive_module.os, "replace", real_replace)
    assert seen == [("active", [first, second])]
    assert counts["errors"] >= 1
    assert engine.get(second).status is MemoryStatus.ACTIVE and second in engine.vectors.user_hashes(user)
    assert path.read_bytes() == before  # the old file, untouched
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # no temp file left

    # With the disk back, the next run archives it.
    counts = archive_due(engine, now=day_400)
    assert engine.get(second).status is MemoryStatus.ARCHIVED
    assert {line["record"]["memory_id"] for line in _lines(path)} == {first, second}


def test_a_run_while_one_holds_the_lease_skips(engine: MemoryEngine) -> None:
    results: list[dict[str, Any]] = []
    gate = threading.Barrier(2)

    def slow_body() -> None:
        gate.wait()
        results.append(archive_due(engine, now=T0))

    # Hold the lease from this thread while two runs start: both must skip; afterwards a run goes.
    with job_lease(engine, "archive"):
        threads = [threading.Thread(target=slow_body) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [r["skipped"] for r in results] == [1, 1]
    assert archive_due(engine, now=T0, wait=True)["skipped"] == 0


def test_erasure_and_drop(engine: MemoryEngine) -> None:
    user = f"a-{uuid.uuid4().hex[:8]}"
    a = _add(engine, user, "lol that movie last night was kind of boring", T0, importance=1)
    b = _add(engine, user, "I tried a new ramen place near the office", T0, importance=2)
    day_200 = T0 + timedelta(days=200)
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(day_200)
    archive_due(engine, now=day_200)
    path = archive_path(engine.settings, user)
    assert drop_from_archive(engine, user, [a]) == 1
    assert {line["record"]["memory_id"] for line in _lines(path)} == {b}
    assert erase_user_archive(engine, user) is True and not path.exists()
    assert erase_user_archive(engine, user) is False


@pytest.fixture(scope="module")
def stripping_engine(tmp_path_factory, embedder, model_cache_dir) -> Iterator[MemoryEngine]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("archive-strip")
    eng = open_memory(isolated_settings(tmp, model_cache_dir, archive_strip_content=True, archive_dir=tmp / "cold"),
                      clock=FixedClock(T0), embedder=embedder)
    yield eng
    eng.close()


def test_cold_storage_moves_content_out_of_sql_and_back(stripping_engine: MemoryEngine) -> None:
    engine = stripping_engine
    user = f"a-{uuid.uuid4().hex[:8]}"
    ramen = _add(engine, user, "I tried a new ramen place near the office", T0, importance=2)
    content_hash = engine.get(ramen).content_hash
    day_200 = T0 + timedelta(days=200)
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(day_200)
    archive_due(engine, now=day_200)
    cold = engine.get(ramen)
    assert cold.status is MemoryStatus.ARCHIVED and cold.content == "" and cold.content_hash == content_hash
    path = archive_path(engine.settings, user)
    assert path.parent == engine.settings.archive_dir
    assert _lines(path)[0]["record"]["content"] == "I tried a new ramen place near the office"
    back = restore_from_archive(engine, ramen, actor="staff:gina")
    assert back.content == "I tried a new ramen place near the office" and back.content_hash == content_hash
    assert engine.search(user, "ramen near the office", top_k=1, options=QUIET).results[0].memory_id == ramen
    assert not path.exists()  # its last line went back to SQL
