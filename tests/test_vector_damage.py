"""A damaged Milvus Lite file (issue 19, item 6): the app starts, says what happened, answers
from SQL meanwhile, and rebuilds the index from SQL with nothing lost; a file another process
holds is never touched."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memory_core import MemoryQuery, open_memory
from memory_core.errors import BackendUnavailable
from memory_core.vectors.lite_damage import held_by_another_process, looks_damaged
from tests.conftest import isolated_settings
from tests.fixtures_models import DelegatingEmbedder

FACTS = {"u-en": ["I am allergic to penicillin", "My locker code is 4821", "I live in Porto"],
         "u-zh": ["我对芒果过敏", "我住在杭州市西湖区", "我女儿在学钢琴"]}


class _HeldEmbedder(DelegatingEmbedder):
    """Passages wait for ``release`` (the rebuild re-embeds every memory); queries do not."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        super().__init__(inner)
        self.release = threading.Event()

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        assert self.release.wait(120), "the test never released the rebuild"
        return self.inner.embed_passages(texts)


def _store_with_facts(tmp_path: Path, model_cache_dir: Path, embedder, url: str = "") -> tuple:  # type: ignore[no-untyped-def]
    settings = isolated_settings(tmp_path, model_cache_dir, url)
    engine = open_memory(settings, embedder=embedder)
    for user, facts in FACTS.items():
        for fact in facts:
            engine.add(user, fact)
    engine.close()
    return settings, Path(settings.resolved_milvus_uri)


# one kind of damage in the fast lane, both in the full run (each costs ~6 s of Lite restarts)
@pytest.mark.parametrize("damage", ["truncated", pytest.param("garbage", marks=pytest.mark.slow)])
def test_a_damaged_lite_file_is_moved_aside_and_rebuilt_from_sql(tmp_path: Path, model_cache_dir: Path, embedder,
                                                                  damage: str) -> None:
    settings, path = _store_with_facts(tmp_path, model_cache_dir, embedder)
    size = path.stat().st_size
    if damage == "truncated":
        with open(path, "r+b") as handle:
            handle.truncate(size // 3)
    else:
        path.write_bytes(b"not a database at all" * 5)

    held = _HeldEmbedder(embedder)
    engine = open_memory(settings, embedder=held)  # must not raise
    try:
        health = engine.health()
        assert health["sql"] is True and health["vectors_rebuilding"] is True
        damaged = list(path.parent.glob(f"{path.name}.damaged-*"))
        assert len(damaged) == 1  # kept for inspection, never deleted
        # Meanwhile: answers from SQL, and says so.
        during = engine.search("u-zh", "芒果", min_relevance=0.0)
        assert during.degraded and during.notices
        assert any("芒果" in r.content for r in during.results)
        assert engine.search("u-en", "penicillin", min_relevance=0.0).degraded

        held.release.set()
        deadline = time.monotonic() + 120
        while engine.health()["vectors_rebuilding"] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not engine.health()["vectors_rebuilding"]
        assert "rebuilt 6 vectors" in engine.health()["vectors_note"]
        after = engine.search("u-zh", "我对什么水果过敏")
        assert not after.degraded and "芒果" in after.results[0].content
        assert engine.search("u-en", "which antibiotic must I avoid?").results[0].content == FACTS["u-en"][0]
        # Nothing lost, nobody mixed up; the run is in the job log for staff.
        for user, facts in FACTS.items():
            assert sorted(r.content for r in engine.list_memories(MemoryQuery(user_id=user)).items) == sorted(facts)
        assert engine.vectors.count() == 6
        run = engine.repo.job_runs("rebuild")[0]
        assert run.outcome == "ok" and run.counts["written"] == 6
    finally:
        held.release.set()
        engine.close()


def test_a_lite_file_held_by_another_process_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    path.write_bytes(b"x" * 100)
    lock = tmp_path / ".held.db.lock"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time\n"
        f"h = open({str(lock)!r}, 'a'); fcntl.lockf(h, fcntl.LOCK_EX)\n"
        "print('held', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert held_by_another_process(path) and not looks_damaged(path)
    finally:
        holder.kill()
        holder.wait()
    assert not held_by_another_process(path) and looks_damaged(path)


def test_a_server_uri_or_a_missing_file_is_never_treated_as_damage(tmp_path: Path) -> None:
    assert not looks_damaged(tmp_path / "missing.db")
    from memory_core.vector_open import open_vectors
    from memory_core.config import Settings

    settings = Settings(_env_file=None, milvus_uri="http://127.0.0.1:1", milvus_timeout_s=1,  # type: ignore[call-arg]
                        data_dir=tmp_path)
    with pytest.raises(BackendUnavailable):
        open_vectors(settings, 8)
