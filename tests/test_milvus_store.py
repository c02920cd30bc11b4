"""MilvusVectorStore against a real Milvus Lite 2.5.1 in a temporary directory.

Starting Lite costs ~1.5 s, so one module-scoped store is shared; every test works on its own
user ids (a uuid prefix) and measures ``count`` as a difference, so tests stay independent.
Vectors are random unit vectors; no model is needed.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from memory_core.config import Settings
from memory_core.errors import BackendUnavailable, ValidationError
from memory_core.vectors import MilvusVectorStore, open_vector_store
from memory_core.vectors.base import VectorFilter
from tests.vector_support import DIM, RNG, rec, uid, unit


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusVectorStore]:
    path = tmp_path_factory.mktemp("milvus") / "vectors.db"
    s = MilvusVectorStore(str(path), "memories", DIM, timeout_s=10)
    yield s
    s.close()


def test_second_store_on_same_file_has_its_own_connection(store: MilvusVectorStore, tmp_path: Path) -> None:
    other = MilvusVectorStore(store._uri, "memories", DIM)  # noqa: SLF001 - same Lite file
    assert other.ping()
    other.close()
    assert not other.ping()
    with pytest.raises(BackendUnavailable):
        other.count()
    assert store.ping()  # closing the other store did not close ours
    store.upsert([rec(f"m-{uid()}", f"dim-{uid()}")])  # shards are created on first write
    with pytest.raises(ValidationError, match="16-d"):
        MilvusVectorStore(store._uri, "memories", DIM * 2)  # noqa: SLF001


def _lite_children() -> int:
    """Milvus Lite server processes that are children of this process (Linux /proc)."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"milvus" in cmdline:
            count += 1
    return count


def test_closing_the_last_store_of_a_file_stops_its_lite_child(tmp_path: Path) -> None:
    """pymilvus kept every Lite child until the process exited: a process that opens and closes
    stores piled them up (~140 MB each) until the kernel killed it."""
    before = _lite_children()
    first = MilvusVectorStore(str(tmp_path / "a.db"), "memories", DIM)
    second = MilvusVectorStore(str(tmp_path / "a.db"), "memories", DIM)
    first.upsert([rec("m-1", "u1")])
    assert _lite_children() == before + 1
    first.close()
    assert second.count() == 1  # the other store of the file still works
    second.close()
    assert _lite_children() == before
    again = MilvusVectorStore(str(tmp_path / "a.db"), "memories", DIM)  # data on disk, new child
    assert again.count() == 1
    again.close()
    assert _lite_children() == before


@pytest.mark.slow  # ~6 s of writing 16k rows; the full run keeps it (the fast lane's budget)
def test_user_hashes_pages_past_16384_rows(store: MilvusVectorStore) -> None:
    user, p = f"bulk-{uid()}", uid()
    n = 20_000
    vectors = RNG.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.upsert([rec(f"{p}-{i}", user, vectors[i], text="bulk", content_hash=f"c{i}") for i in range(n)])
    hashes = store.user_hashes(user)
    assert len(hashes) == n
    assert hashes[f"{p}-0"] == "c0" and hashes[f"{p}-{n - 1}"] == f"c{n - 1}"
    assert user in set(store.all_user_ids())
    store.delete_user(user)
    assert store.user_hashes(user) == {}
    assert user not in set(store.all_user_ids())


@pytest.mark.slow  # ~8 s of waiting for a killed Lite child to time out; the full run keeps it
def test_ping_and_backend_loss_map_to_backend_unavailable(tmp_path: Path) -> None:
    from milvus_lite.server_manager import server_manager_instance

    path = tmp_path / "doomed.db"
    s = MilvusVectorStore(str(path), "memories", DIM, timeout_s=2)
    assert s.ping()
    server = server_manager_instance._servers[str(path.resolve())]  # noqa: SLF001 - our own child
    os.kill(server._p.pid, signal.SIGKILL)  # noqa: SLF001
    server._p.wait(timeout=10)  # noqa: SLF001
    started = time.monotonic()
    assert s.ping() is False
    with pytest.raises(BackendUnavailable):
        s.search_dense(unit(), VectorFilter(user_id="u"), 5)
    assert time.monotonic() - started < 30  # bounded by the int timeout, not 75 retries
    s.close()
    server_manager_instance.release_server(str(path))


def test_unreachable_server_is_backend_unavailable() -> None:
    started = time.monotonic()
    with pytest.raises(BackendUnavailable):
        MilvusVectorStore("http://127.0.0.1:9", "memories", DIM, timeout_s=1)
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("name", ["bad name.db", "x" * 34 + ".db", "ü.db"])
def test_invalid_lite_file_names_are_rejected(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValidationError):
        MilvusVectorStore(str(tmp_path / name), "memories", DIM)


def test_open_vector_store_creates_parent_directory(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "nested" / "data")  # type: ignore[call-arg]
    s = open_vector_store(settings, DIM)
    try:
        assert (tmp_path / "nested" / "data").is_dir()
        assert s.ping() and s.count() == 0
        assert s.collection == settings.milvus_collection and not s.is_server
    finally:
        s.close()


def test_lite_file_held_by_another_process_is_backend_unavailable(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "held.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pymilvus import MilvusClient; "
         "MilvusClient(sys.argv[1]); print('ready', flush=True); time.sleep(120)", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(BackendUnavailable, match="one process"):
            MilvusVectorStore(str(path), "memories", DIM, timeout_s=2)
    finally:
        holder.terminate()
        holder.wait(timeout=30)


# ---------------------------------------------------------------- sharding (Milvus Lite)


def test_shard_of_is_a_stable_hash_independent_of_the_process() -> None:
    import hashlib

    from memory_core.vectors.milvus_store import shard_collection, shard_of

    for user in ["alice", "用户😀", 'a"b', "x" * 256]:
        expected = int.from_bytes(hashlib.blake2b(user.encode("utf-8"), digest_size=8).digest(), "big") % 64
        assert shard_of(user, 64) == expected  # not Python's salted hash(): same in every process
    assert shard_of("alice", 1) == 0
    assert shard_collection("memories", 1, 0) == "memories"  # one shard = the legacy collection
    assert shard_collection("memories", 8, 3) == "memories__8_3"


def _users_on_distinct_shards(store: MilvusVectorStore, count: int) -> list[str]:
    users: dict[str, str] = {}
    n = 0
    while len(users) < count:
        candidate = f"sharded-{n}-{uid()}"
        users.setdefault(store.shard_name(candidate), candidate)
        n += 1
    return list(users.values())


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusVectorStore]:
    path = tmp_path_factory.mktemp("sharded") / "sharded.db"
    s = MilvusVectorStore(str(path), "memories", DIM, timeout_s=10, shards=4)
    yield s
    s.close()


def test_sharded_store_routes_reads_and_writes_per_user_and_isolates(sharded: MilvusVectorStore) -> None:
    assert sharded.shards == 4
    a, b, c = _users_on_distinct_shards(sharded, 3)
    same_shard_as_a = next(u for u in (f"peer-{i}" for i in range(10_000)) if sharded.shard_name(u) == sharded.shard_name(a))
    v = unit()
    before = sharded.count()
    sharded.upsert([rec(f"s{i}-{uid()}", u, v, text="shared word")
                    for i, u in enumerate((a, b, c, same_shard_as_a))])
    assert sharded.count() == before + 4
    for user in (a, b, c, same_shard_as_a):
        # the identical vector and word are stored for all four; each user sees only their own
        dense = sharded.search_dense(v, VectorFilter(user_id=user), 10)
        keyword = sharded.search_keyword("shared", VectorFilter(user_id=user), 10)
        assert len(dense) == 1 and len(keyword) == 1
        assert set(sharded.user_hashes(user)) == {dense[0].memory_id} == {keyword[0].memory_id}
    assert {a, b, c, same_shard_as_a} <= set(sharded.all_user_ids())
    # a user with no vectors, whose shard may not exist yet, reads as empty
    assert sharded.search_dense(v, VectorFilter(user_id=f"nobody-{uid()}"), 5) == []
    for user in (a, b, c, same_shard_as_a):
        sharded.delete_user(user)
    assert sharded.count() == before


def test_sharded_delete_by_id_and_delete_user_cross_shards(sharded: MilvusVectorStore) -> None:
    a, b = _users_on_distinct_shards(sharded, 2)
    ids_a = [f"da-{uid()}" for _ in range(3)]
    ids_b = [f"db-{uid()}" for _ in range(3)]
    sharded.upsert([rec(m, a) for m in ids_a] + [rec(m, b) for m in ids_b])
    sharded.delete([ids_a[0], ids_b[0]])  # ids of two shards in one call; owners unknown to delete()
    assert set(sharded.user_hashes(a)) == set(ids_a[1:])
    assert set(sharded.user_hashes(b)) == set(ids_b[1:])
    # with the owner named, only that user's shard and rows are touched: b's id passed as a's is
    # left alone, and a user whose shard was never created deletes nothing and does not fail
    sharded.delete([ids_a[1], ids_b[1]], user_id=a)
    assert set(sharded.user_hashes(a)) == {ids_a[2]}
    assert set(sharded.user_hashes(b)) == set(ids_b[1:])
    sharded.delete([ids_b[1]], user_id=f"nobody-{uid()}")
    sharded.delete([ids_b[1]], user_id='o"wn\\er')  # quotes in the owner: escaped, no-op
    assert set(sharded.user_hashes(b)) == set(ids_b[1:])
    sharded.delete_user(a)
    assert sharded.user_hashes(a) == {} and set(sharded.user_hashes(b)) == set(ids_b[1:])
    assert a not in set(sharded.all_user_ids()) and b in set(sharded.all_user_ids())
    sharded.delete_user(b)


def test_layout_is_read_back_from_disk_and_new_shards_are_seen_by_other_instances(
    sharded: MilvusVectorStore,
) -> None:
    uri = sharded._uri  # noqa: SLF001 - the same Lite file
    other = MilvusVectorStore(uri, "memories", DIM, shards=16)  # asks for 16: the store has 4
    try:
        assert other.shards == 4
        users = _users_on_distinct_shards(sharded, 4)  # every shard, some possibly not created yet
        mids = {u: f"x-{uid()}" for u in users}
        other.upsert([rec(mids[u], u) for u in users])  # may create shards `sharded` has not seen
        for u in users:
            assert set(sharded.user_hashes(u)) == {mids[u]}
            assert other.shard_name(u) == sharded.shard_name(u)
        assert set(users) <= set(sharded.all_user_ids())
        sharded.delete(list(mids.values()))
        assert all(other.user_hashes(u) == {} for u in users)
    finally:
        other.close()


def test_single_collection_layout_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "legacy.db"
    legacy = MilvusVectorStore(str(path), "memories", DIM, shards=1)  # the pre-sharding layout
    legacy.upsert([rec("old-1", "u1")])
    assert legacy.shard_name("u1") == "memories"
    legacy.close()
    reopened = MilvusVectorStore(str(path), "memories", DIM)  # default would shard; the disk says 1
    try:
        assert reopened.shards == 1 and reopened.user_hashes("u1") == {"old-1": "h"}
    finally:
        reopened.close()


def test_shards_argument_is_validated(tmp_path: Path) -> None:
    for bad in (0, -1, 2000, True, 2.0):
        with pytest.raises(ValidationError):
            MilvusVectorStore(str(tmp_path / "v.db"), "memories", DIM, shards=bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------- per-user vector cache (Milvus Lite)


def test_cached_dense_search_equals_milvus_under_every_filter(sharded: MilvusVectorStore) -> None:
    """The cache answers dense searches in-process; a cache-less store on the same file asks
    Milvus. Both must return the same ids in the same order with the same scores."""
    uncached = MilvusVectorStore(sharded._uri, "memories", DIM, shards=sharded.shards,  # noqa: SLF001
                                 vector_cache_rows=0)
    try:
        user = f"cache-{uid()}"
        types = ["episodic", "declarative", "procedural"]
        n = 60
        vectors = RNG.standard_normal((n, DIM)).astype(np.float32) * 3  # not unit: cosine must normalise
        ids = [f"c{i:02d}-{uid()}" for i in range(n)]
        sharded.upsert([rec(ids[i], user, vectors[i], importance=1 + i % 5, created_at=1_000 + i,
                            expires_at=(2_000 if i % 4 == 0 else 0), memory_type=types[i % 3]) for i in range(n)])
        assert sharded.load_user_vectors(user)  # searches would also load it, in the background
        filters = [
            VectorFilter(user_id=user),
            VectorFilter(user_id=user, now=2_000),
            VectorFilter(user_id=user, now=1_500, memory_types=("episodic", "procedural")),
            VectorFilter(user_id=user, min_importance=4, created_from=1_010, created_to=1_050),
            VectorFilter(user_id=user, memory_ids=tuple(ids[::7])),
            VectorFilter(user_id=user, created_from=1_020, created_to=1_030, or_memory_ids=tuple(ids[::9])),
            VectorFilter(user_id=user, now=1_500, created_to=1_010, or_memory_ids=tuple(ids[40:44])),
            VectorFilter(user_id=user, created_to=1_000),  # nothing
        ]
        for flt in filters:
            q = unit()
            mine = sharded.search_dense(q, flt, 10)
            theirs = uncached.search_dense(q, flt, 10)
            assert [h.memory_id for h in mine] == [h.memory_id for h in theirs], flt
            assert np.allclose([h.score for h in mine], [h.score for h in theirs], atol=1e-5)
            assert [h.rank for h in mine] == list(range(len(mine)))
            # the batched form (one matrix product for the batch) answers each query the same
            others = [unit() * 2.5, unit()]
            batched = sharded.search_dense_many([q, *others], flt, 10)
            expected = [theirs] + [uncached.search_dense(o, flt, 10) for o in others]
            assert [[h.memory_id for h in hits] for hits in batched] == [[h.memory_id for h in hits] for hits in expected]
            assert all(np.allclose([h.score for h in a], [h.score for h in b], atol=1e-5) for a, b in zip(batched, expected))
        assert sharded._vcache is not None and sharded._vcache.get(user) is not None  # noqa: SLF001
        assert len(sharded.search_dense_many([unit()] * 3, VectorFilter(user_id=user), 100)[2]) == n  # limit > rows
        sharded.delete_user(user)
    finally:
        uncached.close()


def test_cache_follows_every_write_and_is_shared_by_instances(sharded: MilvusVectorStore) -> None:
    user = f"coherent-{uid()}"
    a, b = unit(), unit()
    sharded.upsert([rec("w1-" + user[-12:], user, a), rec("w2-" + user[-12:], user, b)])
    flt = VectorFilter(user_id=user)
    assert sharded.load_user_vectors(user)
    assert sharded.search_dense(a, flt, 1)[0].memory_id == "w1-" + user[-12:]
    other = MilvusVectorStore(sharded._uri, "memories", DIM, shards=sharded.shards)  # noqa: SLF001 - same file
    try:
        other.upsert([rec("w1-" + user[-12:], user, b)])  # re-embedded through another instance
        top = sharded.search_dense(b, flt, 2)
        assert top[0].score == pytest.approx(top[1].score, abs=1e-5)  # both now hold b
        other.upsert([rec("w3-" + user[-12:], user, -a)])  # new row
        assert {h.memory_id for h in sharded.search_dense(a, flt, 10)} == {f"w{i}-" + user[-12:] for i in (1, 2, 3)}
        other.delete(["w2-" + user[-12:]])
        assert {h.memory_id for h in sharded.search_dense(a, flt, 10)} == {f"w{i}-" + user[-12:] for i in (1, 3)}
        other.delete_user(user)
        assert sharded.search_dense(a, flt, 10) == []
    finally:
        other.close()


def test_failed_upsert_drops_the_users_cached_vectors(tmp_path: Path) -> None:
    s = MilvusVectorStore(str(tmp_path / "fail.db"), "memories", DIM, shards=2)
    try:
        user = "u-fail"
        s.upsert([rec("f1", user)])
        assert s.load_user_vectors(user)
        assert s._vcache is not None and s._vcache.get(user) is not None  # noqa: SLF001
        s._client.close()  # noqa: SLF001 - the next write fails with an unknown outcome
        with pytest.raises(Exception):
            s.upsert([rec("f2", user)])
        assert s._vcache.get(user) is None  # noqa: SLF001
    finally:
        s.close()


def test_user_cache_is_bounded_by_rows() -> None:
    from memory_core.vectors.user_cache import UserVectorCache, UserVectors

    def entry(n: int) -> UserVectors:
        rows = [{"memory_id": f"m{i}", "embedding": unit().tolist(), "importance": 3, "created_at": 1,
                 "expires_at": 0, "memory_type": "episodic"} for i in range(n)]
        return UserVectors.from_rows(rows, DIM)

    cache = UserVectorCache(max_rows=25)
    for user in ("a", "b", "c"):
        cache.install(user, entry(10), cache.ticket(user))
    assert cache.get("a") is None and cache.get("b") is not None and cache.rows == 20  # LRU evicted a
    ticket = cache.ticket("d")
    cache.upserted("d", lambda: entry(1))  # a write during d's load ...
    cache.install("d", entry(5), ticket)  # ... so the loaded (stale) entry is not installed
    assert cache.get("d") is None
    cache.install("e", entry(30), cache.ticket("e"))  # larger than the whole cache: not kept
    assert cache.get("e") is None


def test_a_cache_miss_is_answered_by_milvus_and_warms_in_the_background(tmp_path: Path) -> None:
    s = MilvusVectorStore(str(tmp_path / "warm.db"), "memories", DIM, shards=2)
    try:
        user = "u-warm"
        v = unit()
        s.upsert([rec("k1", user, v), rec("k2", user)])
        assert s._vcache is not None and s._vcache.get(user) is None  # noqa: SLF001
        assert s.search_dense(v, VectorFilter(user_id=user), 1)[0].memory_id == "k1"  # Milvus answered
        deadline = time.monotonic() + 30
        while s._vcache.get(user) is None and time.monotonic() < deadline:  # noqa: SLF001
            time.sleep(0.05)
        assert s._vcache.get(user) is not None  # noqa: SLF001 - the background load installed it
        assert s.search_dense(v, VectorFilter(user_id=user), 1)[0].memory_id == "k1"  # the cache answered
    finally:
        s.close()


def test_prepare_user_loads_before_the_first_search_and_is_idempotent(tmp_path: Path) -> None:
    s = MilvusVectorStore(str(tmp_path / "prep.db"), "memories", DIM, shards=2)
    uncached = MilvusVectorStore(str(tmp_path / "prep.db"), "memories", DIM, shards=2, vector_cache_rows=0)
    try:
        user, v = "u-prep", unit()
        s.upsert([rec("p1", user, v), rec("p2", user), rec("p3", "u-other", v)])
        assert s._vcache is not None and s._vcache.get(user) is None  # noqa: SLF001
        assert s.prepare_user(user, wait=True) is True
        assert set(s._vcache.get(user).ids) == {"p1", "p2"}  # noqa: SLF001 - only the user's own rows
        assert s.prepare_user(user) is True  # already loaded: nothing scheduled
        flt = VectorFilter(user_id=user)
        assert [h.memory_id for h in s.search_dense(v, flt, 5)] == [h.memory_id for h in uncached.search_dense(v, flt, 5)]
        assert uncached.prepare_user(user, wait=True) is False  # no cache (a server store): nothing to prepare
        with pytest.raises(ValidationError):
            s.prepare_user("bad\x00id", wait=True)
        assert s.prepare_user("u-other") is False  # background load scheduled
        deadline = time.monotonic() + 30
        while s._vcache.get("u-other") is None and time.monotonic() < deadline:  # noqa: SLF001
            time.sleep(0.05)
        assert s._vcache.get("u-other") is not None  # noqa: SLF001
    finally:
        uncached.close()
        s.close()


def test_insert_new_then_upsert_of_the_same_id_leaves_one_copy(tmp_path: Path) -> None:
    """The write pipeline inserts fresh ids; if that insert's outcome was unknown and reconcile
    re-indexes the id with upsert, the store still holds exactly one row for it."""
    s = MilvusVectorStore(str(tmp_path / "ins.db"), "memories", DIM, shards=2, vector_cache_rows=0)
    try:
        v, w = unit(), unit()
        s.insert_new([rec("n1", "u-ins", v), rec("n2", "u-ins")])
        assert s.count() == 2
        s.upsert([rec("n1", "u-ins", w)])  # the retry
        hits = s.search_dense(w, VectorFilter(user_id="u-ins"), 10)
        assert [h.memory_id for h in hits].count("n1") == 1 and s.count() == 2
        assert hits[0].memory_id == "n1" and hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert set(s.user_hashes("u-ins")) == {"n1", "n2"}
    finally:
        s.close()


def test_batched_cache_search_scores_in_blocks_with_the_same_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user with many rows times a big batch is scored a block of queries at a time (bounded
    memory); the answers must not depend on the block size."""
    from memory_core.vectors import user_cache
    from memory_core.vectors.user_cache import UserVectors

    vectors = RNG.standard_normal((50, DIM)).astype(np.float32)
    rows = [{"memory_id": f"m{i:02d}", "embedding": vectors[i].tolist(), "importance": 3, "created_at": i,
             "expires_at": 0, "memory_type": "episodic"} for i in range(50)]
    entry = UserVectors.from_rows(rows, DIM)
    queries = RNG.standard_normal((7, DIM)).astype(np.float32)
    flt = VectorFilter(user_id="u", created_from=5)
    whole = entry.search_many(queries, flt, 6)
    monkeypatch.setattr(user_cache, "SCORE_BLOCK_CELLS", 45 * 2)  # two queries per block over 45 rows
    blocked = entry.search_many(queries, flt, 6)
    assert [[(h.memory_id, h.rank) for h in hits] for hits in blocked] == [[(h.memory_id, h.rank) for h in hits] for hits in whole]
    assert len(blocked) == 7 and all(len(hits) == 6 for hits in blocked)
    assert [h.memory_id for h in blocked[3]] == [h.memory_id for h in entry.search(queries[3], flt, 6)]


class _IndexStates:
    """Answers describe_index with the states given, one per look (fault injection for the
    waits a real Milvus never shows on demand; the success path runs on Lite in every test)."""

    def __init__(self, *states: str) -> None:
        self.states = list(states)
        self.looks = 0

    def describe_index(self, name, index_name, timeout=None):  # type: ignore[no-untyped-def]
        self.looks += 1
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return {"state": state, "index_state_fail_reason": "disk full" if state == "Failed" else ""}


def test_a_new_collections_index_wait_looks_soon_and_says_why_it_failed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from memory_core.errors import ValidationError
    from memory_core.vectors import schema
    from memory_core.vectors.schema import wait_for_indexes

    pauses: list[float] = []
    monkeypatch.setattr(schema.time, "sleep", pauses.append)
    building = _IndexStates("InProgress", "InProgress", "Finished")
    wait_for_indexes(building, "c", ["embedding"], timeout=5)  # type: ignore[arg-type]
    assert building.looks == 3 and pauses == [0.005, 0.01]  # not pymilvus' 0.5 s before every look
    monkeypatch.undo()
    with pytest.raises(ValidationError, match="disk full"):
        wait_for_indexes(_IndexStates("InProgress", "Failed"), "c", ["embedding", "sparse"], timeout=5)  # type: ignore[arg-type]
    with pytest.raises(TimeoutError, match="'sparse' index"):
        wait_for_indexes(_IndexStates("InProgress"), "c", ["sparse"], timeout=0.05)  # type: ignore[arg-type]
