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

from memory_core import (
    FixedClock,
    MemoryEngine,
    MemoryStatus,
    RetrievalOptions,
    ValidationError,
    archive_files,
    open_memory,
)
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
from memory_core.parts import EngineParts
from tests.conftest import isolated_settings, open_backend_engine

T0 = datetime(2023, 6, 1, 12, tzinfo=timezone.utc)
QUIET = RetrievalOptions(use_cache=False, record=False)
ODD_USER = "../../etc/用户 \"o'brien\"\\x"  # must never become a path


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def engine(request, tmp_path_factory, embedder, model_cache_dir) -> Iterator[MemoryEngine]:  # type: ignore[no-untyped-def]
    eng = open_backend_engine(request, tmp_path_factory, embedder, model_cache_dir, "archive", T0)
    yield eng
    eng.close()


def _archive_on(engine: MemoryEngine, day: datetime) -> dict:
    """The archive job run on ``day``, with the engine's clock set to it."""
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(day)
    return archive_due(engine.parts, now=day)


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

    counts = archive_due(engine.parts, now=day_200)
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

    stats = next(s for s in archive_stats(engine.parts) if s["user_id"] == user)
    assert stats == {"user_id": user, "archived": 2, "file": path.name, "file_bytes": path.stat().st_size,
                     "file_records": 2}

    restored = restore_from_archive(engine.parts, ramen, actor="staff:frank")
    assert restored.status is MemoryStatus.ACTIVE and restored.content == "I tried a new ramen place near the office"
    assert restored.expires_at is not None and restored.expires_at > day_200  # a fresh lifetime
    assert engine.history(ramen)[-1].action == "restore" and engine.history(ramen)[-1].actor == "staff:frank"
    assert engine.search(user, "ramen place near the office", top_k=1, options=QUIET).results[0].memory_id == ramen
    assert {line["record"]["memory_id"] for line in _lines(path)} == {chatter}
    with pytest.raises(ValidationError):
        restore_from_archive(engine.parts, ramen, actor="staff:frank")  # not archived any more

    # A second run finds nothing new for this user (the restored memory was just touched).
    archive_due(engine.parts, now=day_200)
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
    archive_due(engine.parts, now=day_200)
    assert engine.get(used).status is MemoryStatus.ACTIVE  # accessed 100 days ago
    assert engine.get(unused).status is MemoryStatus.ARCHIVED
    day_290 = T0 + timedelta(days=290)
    engine.clock.set(day_290)
    archive_due(engine.parts, now=day_290)
    assert engine.get(used).status is MemoryStatus.ARCHIVED  # untouched for 190 days now


def test_a_failed_rename_changes_nothing(engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    user = f"a-{uuid.uuid4().hex[:8]}"
    first = _add(engine, user, "lol that movie last night was kind of boring", T0, importance=1)
    day_200 = T0 + timedelta(days=200)
    _archive_on(engine, day_200)
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

    monkeypatch.setattr(archive_files.os, "replace", crash)
    counts = archive_due(engine.parts, now=day_400)
    monkeypatch.setattr(archive_files.os, "replace", real_replace)
    assert seen == [("active", [first, second])]
    assert counts["errors"] >= 1
    assert engine.get(second).status is MemoryStatus.ACTIVE and second in engine.vectors.user_hashes(user)
    assert path.read_bytes() == before  # the old file, untouched
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # no temp file left

    # With the disk back, the next run archives it.
    counts = archive_due(engine.parts, now=day_400)
    assert engine.get(second).status is MemoryStatus.ARCHIVED
    assert {line["record"]["memory_id"] for line in _lines(path)} == {first, second}


def test_a_run_while_one_holds_the_lease_skips(engine: MemoryEngine) -> None:
    results: list[dict[str, Any]] = []
    gate = threading.Barrier(2)

    def slow_body() -> None:
        gate.wait()
        results.append(archive_due(engine.parts, now=T0))

    # Hold the lease from this thread while two runs start: both must skip; afterwards a run goes.
    with job_lease(engine.parts, "archive"):
        threads = [threading.Thread(target=slow_body) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [r["skipped"] for r in results] == [1, 1]
    assert archive_due(engine.parts, now=T0, wait=True)["skipped"] == 0


def test_erasure_and_drop(engine: MemoryEngine) -> None:
    user = f"a-{uuid.uuid4().hex[:8]}"
    a = _add(engine, user, "lol that movie last night was kind of boring", T0, importance=1)
    b = _add(engine, user, "I tried a new ramen place near the office", T0, importance=2)
    day_200 = T0 + timedelta(days=200)
    _archive_on(engine, day_200)
    path = archive_path(engine.settings, user)
    assert drop_from_archive(engine.settings, user, [a]) == 1
    assert {line["record"]["memory_id"] for line in _lines(path)} == {b}
    assert erase_user_archive(engine.settings, user) is True and not path.exists()
    assert erase_user_archive(engine.settings, user) is False


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
    _archive_on(engine, day_200)
    cold = engine.get(ramen)
    assert cold.status is MemoryStatus.ARCHIVED and cold.content == "" and cold.content_hash == content_hash
    path = archive_path(engine.settings, user)
    assert path.parent == engine.settings.archive_dir
    assert _lines(path)[0]["record"]["content"] == "I tried a new ramen place near the office"
    back = restore_from_archive(engine.parts, ramen, actor="staff:gina")
    assert back.content == "I tried a new ramen place near the office" and back.content_hash == content_hash
    assert engine.search(user, "ramen near the office", top_k=1, options=QUIET).results[0].memory_id == ramen
    assert not path.exists()  # its last line went back to SQL


def test_an_erasure_during_the_run_leaves_no_archive_file(engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job reads a batch holding two users, then archives them one after the other. An erasure
    request for the second lands while the first is being archived: the second's rows are gone
    before its turn, so its SQL updates match nothing, and its file must not come back (the job
    used to write the file first and leave it, holding the erased user's words)."""
    tag = uuid.uuid4().hex[:8]
    first, erased = f"race-{tag}-a", f"race-{tag}-b"  # sorted: first comes before erased in the batch
    _add(engine, first, "lol that movie last night was kind of boring", T0, importance=1)
    _add(engine, erased, "My bank PIN hint is the name of my first cat Whiskers", T0, importance=1)
    day_200 = T0 + timedelta(days=200)
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(day_200)

    real = archive_module.archive_records
    erasures: list[int] = []

    def archive_records_then_erasure(parts: EngineParts, records: Any, now: datetime, *args: Any,
                                     **kwargs: Any) -> int:
        if records[0].user_id == first:  # the batch is read; the erased user's turn is still to come
            erasures.append(engine.delete_user(erased, actor="staff:erasure"))
        return real(parts, records, now, *args, **kwargs)

    monkeypatch.setattr(archive_module, "archive_records", archive_records_then_erasure)
    counts = archive_due(engine.parts, now=day_200)
    monkeypatch.setattr(archive_module, "archive_records", real)

    assert erasures == [1] and counts["errors"] == 0
    assert not archive_path(engine.settings, erased).exists()
    assert all(s["file"] != archive_path(engine.settings, erased).name for s in archive_stats(engine.parts))
    assert archive_path(engine.settings, first).exists()  # the other user's archiving went ahead


def test_a_memory_changed_before_its_update_leaves_no_line(engine: MemoryEngine) -> None:
    """The module's steps in order: the job reads the due memories, then one of them is edited,
    one hard-deleted and the third stays put. Only the untouched one may be in the file afterwards,
    and a line the file already had for another memory stays."""
    user = f"a-{uuid.uuid4().hex[:8]}"
    old = _add(engine, user, "I tried a new ramen place near the office", T0, importance=2)
    day_200 = T0 + timedelta(days=200)
    _archive_on(engine, day_200)
    assert engine.get(old).status is MemoryStatus.ARCHIVED
    path = archive_path(engine.settings, user)

    edited = _add(engine, user, "lol that movie last night was kind of boring", day_200, importance=1)
    deleted = _add(engine, user, "the weather was grey all weekend", day_200, importance=1)
    kept = _add(engine, user, "I had toast for breakfast", day_200, importance=1)
    day_400 = T0 + timedelta(days=400)
    engine.clock.set(day_400)
    cutoff = day_400 - timedelta(days=engine.settings.archive_after_days)
    due = [r for r in archive_module._due(engine.parts, cutoff, (user, ""), 1000) if r.user_id == user]
    assert {r.memory_id for r in due} == {edited, deleted, kept}

    engine.update(edited, actor="test", importance=2)  # touched: its updated_at moves on
    engine.delete(deleted, actor="test")
    assert archive_module.archive_records(engine.parts, due, day_400) == 1

    assert engine.get(kept).status is MemoryStatus.ARCHIVED
    assert engine.get(edited).status is MemoryStatus.ACTIVE
    lines = {line["record"]["memory_id"]: line for line in _lines(path)}
    assert set(lines) == {old, kept}
    assert lines[old]["record"]["content"] == "I tried a new ramen place near the office"

    # Nothing due applies: the file is left exactly as it was.
    before = _lines(path)
    stale = engine.get(edited)
    engine.clock.set(day_400 + timedelta(minutes=1))  # the edit must move updated_at
    engine.update(edited, actor="test", importance=1)
    assert archive_module.archive_records(engine.parts, [stale], day_400) == 0
    assert _lines(path) == before


def test_a_file_holding_only_unapplied_lines_is_removed(engine: MemoryEngine) -> None:
    """A user without an archive file whose only due memory changes before its update: the file
    written for it would be its only line, so no file may be left."""
    user = f"a-{uuid.uuid4().hex[:8]}"
    memory_id = _add(engine, user, "lol that movie last night was kind of boring", T0, importance=1)
    day_200 = T0 + timedelta(days=200)
    assert isinstance(engine.clock, FixedClock)
    engine.clock.set(day_200)
    stale = engine.get(memory_id)
    engine.update(memory_id, actor="test", importance=2)
    assert archive_module.archive_records(engine.parts, [stale], day_200) == 0
    assert not archive_path(engine.settings, user).exists()
    assert engine.get(memory_id).status is MemoryStatus.ACTIVE


def test_cold_storage_never_loses_the_only_copy(stripping_engine: MemoryEngine) -> None:
    """With content stripped from SQL, an archived memory that is later expired (not restored) is
    an expired row with empty content whose words live only in the archive line. When it is due
    again, the new line must keep those words, not replace them with an empty string."""
    engine = stripping_engine
    user = f"a-{uuid.uuid4().hex[:8]}"
    text = "I tried a new ramen place near the office"
    ramen = _add(engine, user, text, T0, importance=2)
    day_200 = T0 + timedelta(days=200)
    _archive_on(engine, day_200)
    assert engine.get(ramen).content == ""
    engine.expire(ramen, actor="staff:hal")
    assert engine.get(ramen).status is MemoryStatus.EXPIRED and engine.get(ramen).content == ""
    path = archive_path(engine.settings, user)

    # Due again, but edited before its update applies: the line with the words must stay.
    day_400 = T0 + timedelta(days=400)
    engine.clock.set(day_400)
    stale = engine.get(ramen)
    engine.update(ramen, actor="test", importance=1)
    assert archive_module.archive_records(engine.parts, [stale], day_400) == 0
    assert _lines(path)[0]["record"]["content"] == text

    day_600 = T0 + timedelta(days=600)
    engine.clock.set(day_600)
    archive_due(engine.parts, now=day_600)
    assert engine.get(ramen).status is MemoryStatus.ARCHIVED
    assert [line["record"]["content"] for line in _lines(path)] == [text]
    assert engine.restore(ramen, actor="staff:hal").content == text
