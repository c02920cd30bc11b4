"""The engine's contract on a real Milvus server (2.3.5 standalone, tests/fixtures_milvus_server.py):
one collection with ``user_id`` as partition key, Strong consistency, the keyword leg in SQL (the
server has no BM25), everything else on the server.

Write, search, isolation with hostile ids, filters, expiry, supersede, delete, erase, reconcile,
read-your-writes across two engines (also with reads relaxed for settled users), and a ``kill -9`` of the server mid-run with nothing lost
once it is back and reconcile has run.
"""
from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterator

import pytest

from memory_core import FixedClock, MemoryEngine, MemoryQuery, MemoryStatus, RetrievalOptions, SearchFilters, open_memory
from memory_core.maintenance import expire_due
from memory_core.sql_keyword import NOTICE
from memory_core.types import TimeRange
from memory_core.vectors import KeywordSearchUnavailable, VectorFilter, VectorRecord
from tests.conftest import fresh_pg_schema
from tests.test_engine_isolation import HOSTILE_IDS

pytestmark = pytest.mark.slow
T0 = datetime(2025, 5, 1, 9, 0, tzinfo=timezone.utc)
FRESH = RetrievalOptions(use_cache=False, record=False)


@pytest.fixture
def server_engine(milvus_server, make_settings, embedder, pg_url) -> Iterator[Callable[..., MemoryEngine]]:  # type: ignore[no-untyped-def]
    """Engines on the session's Milvus server, each on a collection of its own (or a shared one
    when ``collection`` is given); closed, and their collections dropped, after the test."""
    from pymilvus import MilvusClient

    engines: list[MemoryEngine] = []
    collections: set[str] = set()

    def _make(sql: str = "sqlite", collection: str | None = None, database_url: str | None = None,
              **parts: object) -> MemoryEngine:
        name = collection or f"t_{uuid.uuid4().hex[:12]}"
        collections.add(name)
        url = database_url if database_url is not None else (fresh_pg_schema(pg_url) if sql == "postgres" else "")
        settings = make_settings(milvus_uri=milvus_server.uri, milvus_collection=name, database_url=url,
                                 milvus_timeout_s=3)
        engine = open_memory(settings, embedder=embedder, **parts)  # type: ignore[arg-type]
        engines.append(engine)
        return engine

    yield _make
    for engine in engines:
        try:
            engine.close()
        except Exception:  # noqa: BLE001
            pass
    client = MilvusClient(uri=milvus_server.uri, timeout=30, alias=f"test-drop-{uuid.uuid4().hex}")
    try:
        for name in collections:
            client.drop_collection(name, timeout=30)
    finally:
        client.close()


def _eventually(read: Callable[[], object], timeout_s: float = 180.0) -> object:
    """``read()`` once the restarted server answers (``BackendUnavailable`` until then)."""
    import time

    from memory_core.errors import BackendUnavailable

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return read()
        except BackendUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def _ids(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.memory_id for r in response.results]


def test_the_store_reads_the_server_and_lays_out_for_it(server_engine, milvus_server) -> None:  # type: ignore[no-untyped-def]
    from pymilvus import MilvusClient

    from memory_core.health import check

    engine = server_engine()
    store = engine.vectors
    assert (store.caps.kind, store.caps.version, store.caps.bm25) == ("server", (2, 3, 5), False)
    assert store.is_server and store.shards == 1 and not store.native_keyword
    health = engine.health()
    assert health["vectors"] is True and health["keyword_search"] == "sql"
    assert health["vector_server_version"].startswith("v2.3.5")
    probe = check(engine.settings)  # the container health check, which opens no store
    assert probe["ok"] and probe["keyword_search"] == "sql"
    with pytest.raises(KeywordSearchUnavailable, match="2.5"):
        store.search_keyword("hiking", VectorFilter(user_id="u1"), 5)

    client = MilvusClient(uri=milvus_server.uri, timeout=30, alias=f"test-describe-{uuid.uuid4().hex}")
    try:
        info = client.describe_collection(store.collection, timeout=30)
    finally:
        client.close()
    fields = {f["name"]: f for f in info["fields"]}
    assert fields["user_id"].get("is_partition_key") is True and info["num_partitions"] == 64
    assert info["consistency_level"] == 0  # Strong
    assert "sparse" not in fields  # no BM25 on this server: nothing half-made


def test_hostile_user_ids_are_kept_apart_on_the_server(server_engine, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = server_engine()
    own: dict[str, str] = {}
    for index, user in enumerate(HOSTILE_IDS):
        own[user] = engine.add(user, f"My secret code word is zebra{index} and I like green tea number {index}").memory_ids[0]
    for user in HOSTILE_IDS:
        for query in ("secret code word", "green tea", "zebra"):
            response = engine.search(user, query, top_k=10, options=FRESH)
            assert _ids(response) == [own[user]], (user, query)
            assert not response.degraded and any("Keyword matching ran in the database" in n for n in response.notices)
        # the server's own filter, without SQL's second look: one user's partition, one user's rows
        hits = engine.vectors.search_dense(embedder.embed_query("secret code word"), VectorFilter(user_id=user), 50)
        assert [h.memory_id for h in hits] == [own[user]]
    assert engine.vectors.count() == len(HOSTILE_IDS)
    assert NOTICE.split(":")[0] in engine.search(HOSTILE_IDS[0], "zebra0", options=FRESH).notices[0]


def test_filters_expiry_supersede_delete_and_erase(server_engine) -> None:  # type: ignore[no-untyped-def]
    clock = FixedClock(T0)
    engine = server_engine(clock=clock)
    user, other = "ana", "ben"
    chatter = engine.add(user, "lol the weather was kind of boring today", at=T0).memory_ids[0]
    old_code = engine.add(user, "My locker code is 4821", at=T0).memory_ids[0]
    may = engine.add(user, "I ran the Lisbon half marathon in early May", at=T0).memory_ids[0]
    june = engine.add(user, "In June I ran a trail race in Sintra", at=T0 + timedelta(days=40)).memory_ids[0]
    bens = engine.add(other, "I ran the Lisbon half marathon too", at=T0).memory_ids[0]
    if engine.get(chatter).importance != 1:
        engine.update(chatter, actor="test", importance=1)  # a 30-day memory
    clock.set(T0 + timedelta(days=41))

    # filters: a hard time range, on the server's filter and in SQL's check
    may_only = SearchFilters(time_range=TimeRange(start=T0 - timedelta(days=1), end=T0 + timedelta(days=10)))
    assert set(_ids(engine.search(user, "race I ran", top_k=10, filters=may_only, options=FRESH))) <= {
        may, chatter, old_code}
    assert may in _ids(engine.search(user, "race I ran", top_k=10, filters=may_only, options=FRESH))
    assert june not in _ids(engine.search(user, "race I ran", top_k=10, filters=may_only, options=FRESH))
    assert bens not in _ids(engine.search(user, "Lisbon half marathon", top_k=10, options=FRESH))

    # expiry: past its 30 days the chatter is not found, and the daily job takes its vector away
    assert chatter not in _ids(engine.search(user, "weather boring", top_k=10, min_relevance=0.0, options=FRESH))
    expire_due(engine, clock.now())
    assert engine.get(chatter).status is MemoryStatus.EXPIRED
    assert chatter not in engine.vectors.user_hashes(user)

    # supersede: the correction replaces the old value, whose vector leaves the server
    new_code = engine.add(user, "My locker code is 4827").created[0]
    assert engine.get(old_code).status is MemoryStatus.SUPERSEDED
    assert old_code not in engine.vectors.user_hashes(user) and new_code in engine.vectors.user_hashes(user)
    top = engine.search(user, "locker code", top_k=3, options=FRESH).results
    assert "4827" in top[0].content and not any("4821" in r.content for r in top)

    # delete one, then erase the user: nothing of theirs stays on the server, the other user's does
    engine.delete(june, actor="test")
    assert june not in engine.vectors.user_hashes(user)
    assert june not in _ids(engine.search(user, "trail race Sintra", top_k=10, options=FRESH))
    engine.delete_user(user, actor="test")
    assert engine.vectors.user_hashes(user) == {}
    assert engine.search(user, "Lisbon half marathon", options=FRESH).results == []
    assert engine.vectors.user_hashes(other) == {bens: engine.get(bens).content_hash}


def test_reconcile_repairs_missing_orphan_and_stale_vectors_on_the_server(server_engine, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = server_engine()
    ids = [engine.add("u1", text).memory_ids[0] for text in (
        "I am training for the Berlin marathon in September",
        "My cat is called Miso and she is nine years old",
        "我每天早上喝一杯黑咖啡",
    )]
    engine.vectors.delete([ids[0]])  # missing
    ghost = embedder.embed_passages(["ghost memory"])[0]
    engine.vectors.upsert([VectorRecord("ghost-1", "u1", ghost, "ghost memory", 3, 0, 0, "declarative", "x")])
    engine.vectors.upsert([VectorRecord("ghost-2", "nobody", ghost, "ghost", 3, 0, 0, "declarative", "y")])
    stale = embedder.embed_passages(["My dog is called Rex"])[0]
    engine.vectors.upsert([VectorRecord(ids[1], "u1", stale, "My dog is called Rex", 3, 0, 0, "declarative", "stale")])

    report = engine.reconcile()
    assert report.errors == [] and (report.written, report.reembedded, report.removed) == (1, 1, 2)
    assert engine.vectors.user_hashes("u1") == {mid: engine.get(mid).content_hash for mid in ids}
    assert engine.vectors.user_hashes("nobody") == {}
    assert _ids(engine.search("u1", "what is my cat called", options=FRESH))[0] == ids[1]
    again = engine.reconcile()
    assert (again.written, again.removed, again.reembedded) == (0, 0, 0)


def test_read_your_writes_across_two_engines(server_engine, pg_url, embedder) -> None:  # type: ignore[no-untyped-def]
    """Two engines (two connections, as two replicas would hold) on one collection and one
    database: what one writes, the other finds at once, and a delete is gone at once."""
    url = fresh_pg_schema(pg_url)
    collection = f"t_{uuid.uuid4().hex[:12]}"
    writer = server_engine(collection=collection, database_url=url)
    reader = server_engine(collection=collection, database_url=url)
    for i, (thing, place) in enumerate([("passport", "the top drawer"), ("spare key", "the blue flower pot"),
                                        ("bike lock", "the garage shelf"), ("雨伞", "门后的柜子里")]):
        memory_id = writer.add("ryw", f"The {thing} is kept in {place}").memory_ids[0]
        assert reader.search("ryw", f"where is the {thing}", top_k=1, options=FRESH).results[0].memory_id == memory_id
    vector = embedder.embed_passages(["a vector written and read back at once"])[0]
    flt = VectorFilter(user_id="ryw-store")
    for i in range(20):  # the store alone, no SQL in between: Strong consistency on the server
        record = VectorRecord(f"ryw-{i}", "ryw-store", vector, "x", 3, 0, 0, "declarative", f"h{i}")
        writer.vectors.upsert([record])
        assert f"ryw-{i}" in {h.memory_id for h in reader.vectors.search_dense(vector, flt, 50)}
        writer.vectors.delete([f"ryw-{i}"], user_id="ryw-store")
        assert f"ryw-{i}" not in {h.memory_id for h in reader.vectors.search_dense(vector, flt, 50)}


def test_settled_users_read_bounded_and_still_find_every_write(server_engine, pg_url, redis_url) -> None:  # type: ignore[no-untyped-def]
    """Two replicas sharing PostgreSQL, Redis and a collection, with reads relaxed for settled
    users (``milvus_settle_s``): right after a write in one replica the other reads Strong and
    finds it (zh/en); once the window (longer than the server's 5 s grace time) has passed, it
    reads Bounded, without waiting for a time tick, and still finds everything, deletes included."""
    import time

    from memory_core.cache import RedisCache

    url, collection, prefix = fresh_pg_schema(pg_url), f"t_{uuid.uuid4().hex[:12]}", f"ltmtest:{uuid.uuid4().hex[:8]}"
    settle = 6.0
    writer = server_engine(collection=collection, database_url=url,
                           cache=RedisCache(redis_url, prefix=prefix, settle_s=settle))
    reader = server_engine(collection=collection, database_url=url,
                           cache=RedisCache(redis_url, prefix=prefix, settle_s=settle))
    sent: list[str] = []  # the consistency of each search request the reader sends
    client_search = reader.vectors._client.search  # type: ignore[attr-defined]

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        sent.append(kwargs.get("consistency_level", "Strong (collection default)"))
        return client_search(*args, **kwargs)

    reader.vectors._client.search = spy  # type: ignore[attr-defined]
    facts = [("en", "My sister's cat is called Pickle", "what is my sister's cat called"),
             ("zh", "我的自行车锁密码是七七八八", "我的自行车锁密码是多少")]
    ids = {}
    for lang, text, question in facts:
        ids[lang] = writer.add(f"settle-{lang}", text).memory_ids[0]
        sent.clear()
        found = reader.search(f"settle-{lang}", question, top_k=1, options=FRESH)
        assert found.results and found.results[0].memory_id == ids[lang], lang
        assert sent and "Bounded" not in sent, sent  # just written: Strong
    time.sleep(settle + 0.5)  # the real property: Milvus' own grace time, on real time
    for lang, _text, question in facts:
        sent.clear()
        found = reader.search(f"settle-{lang}", question, top_k=1, options=FRESH)
        assert found.results and found.results[0].memory_id == ids[lang], lang
        assert sent and set(sent) == {"Bounded"}, sent
    # a settled user writes again: the write's own searches (near-duplicates, the conflict check
    # against what this very write stored) read Strong in the writing replica
    writer_sent: list[str] = []
    writer_search = writer.vectors._client.search  # type: ignore[attr-defined]

    def writer_spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        writer_sent.append(kwargs.get("consistency_level", "Strong (collection default)"))
        return writer_search(*args, **kwargs)

    writer.vectors._client.search = writer_spy  # type: ignore[attr-defined]
    assert writer.cache.settled("settle-zh")
    moved = writer.add_many([{"user_id": "settle-zh", "content": "我住在成都"},
                             {"user_id": "settle-zh", "content": "我搬家了，现在住在杭州"}])
    assert writer_sent and "Bounded" not in writer_sent, writer_sent
    first = moved[0].memory_ids[0]
    assert writer.get(first).status.value == "superseded"  # the batch's own conflict was seen
    writer.delete(ids["en"], actor="user:settle-en")
    sent.clear()
    after = reader.search("settle-en", "what is my sister's cat called", top_k=3, options=FRESH)
    assert ids["en"] not in {r.memory_id for r in after.results}
    assert "Bounded" not in sent  # the delete marked the user again


def test_server_killed_mid_run_loses_nothing_after_reconcile(server_engine, milvus_server) -> None:  # type: ignore[no-untyped-def]
    """``kill -9`` of the server between writes: what it had acknowledged survives the restart,
    what was written while it was down waits in SQL, and reconcile brings the two together."""
    engine = server_engine()
    user = "survivor"
    before = [engine.add(user, text).memory_ids[0] for text in (
        "My grandmother's name was Rosa and she grew lemons",
        "I keep my running shoes in the hallway closet",
        "我女儿的生日是九月十二号",
    )]
    killed = threading.Event()
    during: list[str] = []
    pending: list[str] = []

    def writer() -> None:
        texts = ["The plumber comes on Thursday at ten", "My library card number ends in 77",
                 "I parked the car on level three", "我把护照放在书桌抽屉里"]
        for i, text in enumerate(texts):
            if i == 1:
                milvus_server.kill()  # kill -9 of every server process, mid-run
                killed.set()
            result = engine.add(user, text)
            during.extend(result.created)
            pending.extend(result.pending_index)

    thread = threading.Thread(target=writer)
    thread.start()
    thread.join(timeout=600)
    assert killed.is_set() and not thread.is_alive()
    assert len(pending) >= 3  # written while the server was dead: kept in SQL, vector pending

    milvus_server.start(wait_loaded=False)  # same data folder, same uri
    # While the server reloads its collection (reads fail with "collection not loaded" for ~25 s
    # on 2.3.5), a search still answers: from SQL, saying so, if the server cannot yet.
    recovering = engine.search(user, "where are my running shoes", top_k=1, options=FRESH)
    assert recovering.results and "running shoes" in recovering.results[0].content
    assert not recovering.degraded or "degraded" in " ".join(recovering.notices)
    milvus_server.wait_loaded()
    # "Loaded" can still answer a first read slowly on a busy machine (the suite runs on two
    # workers): read until it answers, the point here is what survived, not how fast.
    in_milvus = _eventually(lambda: engine.vectors.user_hashes(user))
    assert set(before) <= set(in_milvus)  # acknowledged before the kill: survived it
    report = engine.reconcile()
    assert report.errors == [] and report.written == len(pending)
    active = engine.list_memories(MemoryQuery(user_id=user, statuses=(MemoryStatus.ACTIVE,), limit=100)).items
    assert {m.memory_id for m in active} == set(before) | set(during)
    assert engine.vectors.user_hashes(user) == {m.memory_id: m.content_hash for m in active}
    assert all(engine.get(m).vector_written for m in during)
    assert engine.search(user, "when does the plumber come", top_k=1, options=FRESH).results[0].content.startswith(
        "The plumber")
