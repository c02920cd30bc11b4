"""Two app replicas (two processes, tests/replica_worker.py) on one Milvus server, one PostgreSQL
database and one Redis: 16 users writing and searching on both at once lose nothing, duplicate
nothing and never see each other's memories; a write in one replica retires the results the
other has cached for that user; each scheduled job fired in both runs once.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from memory_core import MemoryQuery, MemoryStatus, RetrievalOptions, open_memory
from tests.conftest import fresh_pg_schema

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
FRESH = RetrievalOptions(use_cache=False, record=False)
USERS = 16
# Six unrelated facts per user (so none supersedes, merges with or duplicates another), each
# with a made-up word of its own that only this user's fact holds.
FACTS = [
    ("My cat is called {code} and she sleeps on the piano", "what is my cat called"),
    ("I collect old stamps from the island of {code}", "which island are my stamps from"),
    ("Last spring I ran the {code} marathon with my brother", "which marathon did I run"),
    ("我最喜欢的茶叫{code}，每天早上都喝", "我最喜欢什么茶"),
    ("My dentist is Dr {code} and her clinic moved to Lisbon", "who is my dentist"),
    ("Our book club is reading a novel by {code} this month", "what is the book club reading"),
]
SYLLABLES = ["ka", "zo", "mi", "ru", "te", "vo", "lu", "pa", "ne", "qi", "sa", "do", "bu", "fe", "go", "ji"]


def code(user: int, fact: int) -> str:
    """A word no other (user, fact) has: three syllables spelling the pair in base 16."""
    n = user * len(FACTS) + fact + 300  # three syllables for every pair
    return "".join(SYLLABLES[(n >> shift) & 15] for shift in (8, 4, 0)).capitalize()


class Replica:
    """A replica process and its JSON-lines pipe."""

    def __init__(self, settings: dict[str, Any], log: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self._log = open(log, "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.replica_worker", json.dumps(settings)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
                                     cwd=ROOT, env=env)
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.log = log
        ready = self._next(600)
        assert ready.get("ready"), ready

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            return json.loads(self._lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"replica did not answer in {timeout} s; log:\n{self.log.read_text()[-3000:]}")

    def send(self, **command: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def call(self, timeout: float = 900, **command: Any) -> dict[str, Any]:
        self.send(**command)
        answer = self._next(timeout)
        assert answer["ok"], answer
        return answer

    def close(self) -> None:
        try:
            self.send(op="quit")
            self.proc.wait(timeout=60)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._log.close()


@pytest.fixture
def deployment(milvus_server, pg_url, redis_url, model_cache_dir, tmp_path) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """Settings every replica shares: the server's collection, one PostgreSQL schema, one Redis
    namespace (dropped afterwards)."""
    import redis
    from pymilvus import MilvusClient

    namespace = f"replicas-{uuid.uuid4().hex[:10]}"
    settings = {
        "data_dir": str(tmp_path / "data"), "database_url": fresh_pg_schema(pg_url),
        "milvus_uri": milvus_server.uri, "milvus_collection": f"r_{uuid.uuid4().hex[:12]}",
        "milvus_timeout_s": 10, "redis_url": redis_url, "cache_namespace": namespace,
        "model_cache_dir": str(model_cache_dir), "openai_base_url": "", "llm_model": "",
    }
    yield settings
    client = MilvusClient(uri=milvus_server.uri, timeout=30, alias=f"test-drop-{uuid.uuid4().hex}")
    try:
        client.drop_collection(settings["milvus_collection"], timeout=30)
    finally:
        client.close()
    r = redis.Redis.from_url(redis_url)
    for key in r.scan_iter(match=f"ltm:{namespace}*"):
        r.delete(key)


def test_two_replicas_sixteen_users_nothing_lost_duplicated_or_crossed(deployment, embedder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from memory_core.config import Settings

    replicas = [Replica(deployment, tmp_path / f"replica-{i}.log") for i in range(2)]
    try:
        assert replicas[0].proc.pid != replicas[1].proc.pid
        users = [f"user-{i:02d}" if i % 4 else f'user-{i:02d}" or user_id != "' for i in range(USERS)]

        # 1. Both replicas at once, every user on both: even facts on one, odd facts on the other.
        for r, replica in enumerate(replicas):
            jobs = [{"user": user, "texts": [FACTS[j][0].format(code=code(u, j)) for j in range(r, len(FACTS), 2)],
                     "queries": [FACTS[j][1] for j in range(r, len(FACTS), 2)]} for u, user in enumerate(users)]
            replica.send(op="load", jobs=jobs, threads=8)
        loads = [replica._next(1800) for replica in replicas]
        jobs = [job for load in loads for job in load["jobs"]]
        assert all(load["ok"] for load in loads), loads
        assert [job["errors"] for job in jobs if job["errors"]] == []
        crossed = [(job["user"], hit["user"]) for job in jobs for s in job["searches"] for hit in s["results"]
                   if hit["user"] != job["user"]]
        assert crossed == []  # 0 cross-user results
        assert sum(len(s["results"]) for job in jobs for s in job["searches"]) > len(jobs)  # searches found things

        # 2. The books: every written memory is active once in SQL, once on the server, and found.
        engine = open_memory(Settings(_env_file=None, **deployment), embedder=embedder)  # type: ignore[call-arg]
        try:
            created = {mid for job in jobs for added in job["added"] for mid in added["created"]}
            assert len(created) == USERS * len(FACTS)  # every add made its own memory
            lost, duplicated = [], []
            for u, user in enumerate(users):
                active = engine.list_memories(MemoryQuery(user_id=user, statuses=(MemoryStatus.ACTIVE,),
                                                          limit=100)).items
                for j in range(len(FACTS)):
                    holders = [m for m in active if code(u, j) in m.content]
                    lost += [(user, j)] if not holders else []
                    duplicated += [(user, j)] if len(holders) > 1 else []
                assert engine.vectors.user_hashes(user) == {m.memory_id: m.content_hash for m in active}, user
                for j in range(len(FACTS)):
                    top = engine.search(user, code(u, j), top_k=1, min_relevance=0.0, options=FRESH).results
                    assert top and code(u, j) in top[0].content and top[0].user_id == user, (user, j)
            assert (lost, duplicated) == ([], [])
            assert engine.vectors.count() == USERS * len(FACTS)  # no stray or twice-written vector rows
        finally:
            engine.close()

        # 3. A write in one replica retires what the other cached for that user (shared Redis).
        a, b = replicas
        query = "what is the name of my pony"
        first = a.call(op="search", user=users[1], query=query)
        assert not first["cache_hit"]
        assert a.call(op="search", user=users[1], query=query)["cache_hit"]  # cached in Redis
        pony = b.call(op="add", user=users[1], text="My pony is named Biscuit and lives on my uncle's farm")
        after = a.call(op="search", user=users[1], query=query)
        assert not after["cache_hit"] and pony["ids"][0] in [hit["id"] for hit in after["results"]]
        assert pony["ids"][0] not in [hit["id"] for hit in b.call(op="search", user=users[2], query=query)["results"]]

        # 4. Both replicas' schedulers fire the same slot of each job: it runs once, in one of them.
        for name in ("expiry_cleanup", "reconcile"):
            for replica in replicas:
                replica.send(op="job", name=name)
            outcomes = sorted(replica._next(600)["outcome"] for replica in replicas)
            assert outcomes == ["ok", "skipped"], (name, outcomes)
            assert [r.call(op="job", name=name)["outcome"] for r in replicas] == ["skipped", "skipped"]
    finally:
        for replica in replicas:
            replica.close()


def test_the_replica_load_benchmark_checks_and_measures_each_part(milvus_server, model_cache_dir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``python -m bench.load.replicas`` on the session's server, briefly: two replica processes
    split the users, nothing is lost, duplicated or crossed, and the CPU of each part is read."""
    from bench.load.replicas import run

    row = run(milvus_server, replicas=2, users=4, seconds=3, workdir=tmp_path, model_cache_dir=model_cache_dir,
              time_tick_ms=None, settle_s=10.0)
    assert row["replicas"] == 2 and row["users"] == 4 and row["mode"] == "replicas"
    assert row["ops"] > 0 and row["errors"] == 0, row["error_kinds"]
    assert (row["lost"], row["duplicated"], row["cross_user_results"], row["missing_vectors"]) == (0, 0, 0, 0)
    cores = row["cpu_cores"]
    assert set(cores) == {"replicas", "milvus", "postgres", "redis", "machine"}
    assert cores["replicas"] > 0 and cores["milvus"] > 0  # both worked during the run
    assert all(0 <= v <= (os.cpu_count() or 1) + 0.5 for v in cores.values()), cores


def test_cpu_meter_counts_a_busy_process_and_not_an_idle_one() -> None:
    """The benchmark's CPU reading (/proc ticks over the run, in cores)."""
    import time

    from bench.load.replicas import CpuMeter

    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    time.sleep(1)  # past the interpreter's start-up
    try:
        meter = CpuMeter({"me": lambda: [os.getpid()], "idle": lambda: [idle.pid]})
        meter.start()
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:
            sum(i * i for i in range(10_000))
        cores = meter.stop()
    finally:
        idle.kill()
    # a busy loop gets at least a share of a core even on a loaded machine; a sleeper gets none
    assert cores["me"] > 0.05 and cores["idle"] < 0.02 and cores["machine"] >= cores["me"] - 0.05, cores
