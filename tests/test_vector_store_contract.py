"""The vector-store port's contract, held by Milvus Lite and by the in-memory store alike.

Every test runs on both (``store`` is parametrised): the in-memory store stands in for Milvus
Lite in the fast test lane, and these are the assertions that make it a fair stand-in (hostile
ids, every filter, user isolation, delete by id and by owner, upsert, keyword search in Chinese,
English and mixed text, validation before any write). What only Milvus has (shards, the Lite
child process, the per-user cache, server errors) stays in ``test_milvus_store.py``.

One store per kind is shared by the module (starting Lite costs ~1.5 s); every test works on its
own user ids (a uuid prefix) and measures ``count`` as a difference, so tests stay independent.
Vectors are random unit vectors; no model is needed.
"""
from __future__ import annotations

import threading
from typing import Iterator

import numpy as np
import pytest

from memory_core.errors import BackendUnavailable, ValidationError
from memory_core.vectors import MilvusVectorStore, VectorStore
from memory_core.vectors.base import VectorFilter
from memory_core.vectors.memory_store import InMemoryVectorStore
from tests.vector_support import DIM, HOSTILE_USER_IDS, RNG, rec, uid, unit

KINDS = ["milvus-lite", "memory"]


def open_store(kind: str, tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    if kind == "milvus-lite":
        return MilvusVectorStore(str(tmp_path_factory.mktemp("milvus") / "vectors.db"), "memories", DIM, timeout_s=10)
    return InMemoryVectorStore(DIM)


@pytest.fixture(scope="module", params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VectorStore]:
    s = open_store(request.param, tmp_path_factory)
    yield s
    s.close()


def test_round_trip_upsert_search_delete(store: VectorStore) -> None:
    user, prefix = f"user-{uid()}", uid()
    records = [rec(f"{prefix}-{i}", user, text=f"item {i} about gardening") for i in range(5)]
    before = store.count()
    store.upsert(records)
    assert store.count() == before + 5  # visible to the very next call (Strong / Lite)

    hits = store.search_dense(records[2].vector, VectorFilter(user_id=user), 3)
    assert hits[0].memory_id == records[2].memory_id
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert [h.rank for h in hits] == [0, 1, 2]
    assert hits[0].score >= hits[1].score >= hits[2].score

    kw = store.search_keyword("gardening", VectorFilter(user_id=user), 10)
    assert {h.memory_id for h in kw} == {r.memory_id for r in records}
    assert all(h.score > 0 for h in kw)

    store.delete([records[2].memory_id, records[3].memory_id])
    remaining = store.search_dense(records[2].vector, VectorFilter(user_id=user), 10)
    assert {h.memory_id for h in remaining} == {records[i].memory_id for i in (0, 1, 4)}
    assert store.count() == before + 3
    store.delete_user(user)
    assert store.count() == before
    assert store.user_hashes(user) == {}


def test_upsert_replaces_vector_without_duplicates(store: VectorStore) -> None:
    user, mid = f"user-{uid()}", f"m-{uid()}"
    old, new = unit(), unit()
    before = store.count()
    store.upsert([rec(mid, user, old, content_hash="old")])
    store.upsert([rec(mid, user, new, content_hash="new", text="replacement text")])
    assert store.count() == before + 1
    hits = store.search_dense(new, VectorFilter(user_id=user), 5)
    assert [h.memory_id for h in hits] == [mid]
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert store.user_hashes(user) == {mid: "new"}
    assert [h.memory_id for h in store.search_keyword("replacement", VectorFilter(user_id=user), 5)] == [mid]
    # a repeated id inside one call: the last one wins, still one row
    store.upsert([rec(mid, user, old, content_hash="a"), rec(mid, user, new, content_hash="b")])
    assert store.count() == before + 1
    assert store.user_hashes(user) == {mid: "b"}
    store.delete_user(user)


def test_hostile_user_ids_never_see_each_other(store: VectorStore) -> None:
    prefix = uid()
    shared_vector = unit()
    owned: dict[str, set[str]] = {}
    records = []
    for i, user in enumerate(HOSTILE_USER_IDS):
        ids = {f"{prefix}-{i}-{j}" for j in range(3)}
        owned[user] = ids
        records += [
            rec(m, user, shared_vector, text=f"secret mango 芒果 {m}", content_hash=f"h-{m}") for m in sorted(ids)
        ]
    store.upsert(records)
    try:
        for user in HOSTILE_USER_IDS:
            flt = VectorFilter(user_id=user)
            dense = {h.memory_id for h in store.search_dense(shared_vector, flt, 100)}
            keyword = {h.memory_id for h in store.search_keyword("secret 芒果", flt, 100)}
            assert dense == owned[user], user
            assert keyword == owned[user], user
            assert store.user_hashes(user) == {m: f"h-{m}" for m in owned[user]}
        assert set(HOSTILE_USER_IDS) <= set(store.all_user_ids())
        # deleting one hostile user touches nobody else
        store.delete_user('" or user_id != "')
        assert store.user_hashes('" or user_id != "') == {}
        for user in HOSTILE_USER_IDS:
            if user != '" or user_id != "':
                assert set(store.user_hashes(user)) == owned[user]
    finally:
        for user in HOSTILE_USER_IDS:
            store.delete_user(user)


def test_expiry_filter(store: VectorStore) -> None:
    user, p = f"user-{uid()}", uid()
    now = 1_750_000_000
    v = unit()
    store.upsert(
        [
            rec(f"{p}-never", user, v, expires_at=0),
            rec(f"{p}-past", user, v, expires_at=now - 1),
            rec(f"{p}-exact", user, v, expires_at=now),  # expires_at <= now: expired
            rec(f"{p}-future", user, v, expires_at=now + 1),
        ]
    )
    live = {h.memory_id for h in store.search_dense(v, VectorFilter(user_id=user, now=now), 10)}
    assert live == {f"{p}-never", f"{p}-future"}
    live_kw = {h.memory_id for h in store.search_keyword("note", VectorFilter(user_id=user, now=now), 10)}
    assert live_kw == live
    everything = {h.memory_id for h in store.search_dense(v, VectorFilter(user_id=user), 10)}
    assert len(everything) == 4
    store.delete_user(user)


def test_fade_from_keeps_rows_of_that_importance_past_their_date(store: VectorStore) -> None:
    """``fade_from``: a row of at least that importance stays searchable past ``expires_at``
    (it faded), one below it does not; in the dense and the keyword search alike."""
    user, p = f"user-{uid()}", uid()
    now = 1_750_000_000
    v = unit()
    store.upsert([
        rec(f"{p}-faded", user, v, importance=3, expires_at=now - 1),
        rec(f"{p}-expired", user, v, importance=2, expires_at=now - 1),
        rec(f"{p}-kept", user, v, importance=2, expires_at=now + 1),
    ])
    fading = VectorFilter(user_id=user, now=now, fade_from=3)
    assert {h.memory_id for h in store.search_dense(v, fading, 10)} == {f"{p}-faded", f"{p}-kept"}
    assert {h.memory_id for h in store.search_keyword("note", fading, 10)} == {f"{p}-faded", f"{p}-kept"}
    assert {h.memory_id for h in store.search_dense(v, VectorFilter(user_id=user, now=now), 10)} == {f"{p}-kept"}
    store.delete_user(user)


def test_type_importance_time_and_id_filters(store: VectorStore) -> None:
    user, p = f"user-{uid()}", uid()
    v = unit()
    store.upsert(
        [
            rec(f"{p}-a", user, v, memory_type="episodic", importance=1, created_at=100),
            rec(f"{p}-b", user, v, memory_type="declarative", importance=4, created_at=200),
            rec(f"{p}-c", user, v, memory_type="procedural", importance=5, created_at=300),
            rec(f"{p}-d", user, v, memory_type="declarative", importance=2, created_at=400),
        ]
    )

    def ids(**kwargs: object) -> set[str]:
        flt = VectorFilter(user_id=user, **kwargs)  # type: ignore[arg-type]
        dense = {h.memory_id[len(p) + 1 :] for h in store.search_dense(v, flt, 10)}
        keyword = {h.memory_id[len(p) + 1 :] for h in store.search_keyword("note", flt, 10)}
        assert dense == keyword
        return dense

    assert ids(memory_types=("declarative",)) == {"b", "d"}
    assert ids(memory_types=("episodic", "procedural")) == {"a", "c"}
    assert ids(min_importance=4) == {"b", "c"}
    assert ids(created_from=200, created_to=400) == {"b", "c"}  # from inclusive, to exclusive
    assert ids(created_from=250) == {"c", "d"}
    assert ids(memory_ids=(f"{p}-a", f"{p}-d", "missing")) == {"a", "d"}
    assert ids(memory_types=("declarative",), min_importance=3, created_to=1000) == {"b"}
    # told-time ids widen the write-time window only; the other clauses still bind them
    assert ids(created_from=200, created_to=300, or_memory_ids=(f"{p}-d", "missing")) == {"b", "d"}
    assert ids(created_from=200, created_to=300, min_importance=3, or_memory_ids=(f"{p}-d",)) == {"b"}
    assert ids(or_memory_ids=(f"{p}-a",)) == {"a", "b", "c", "d"}
    store.delete_user(user)


KEYWORD_DOCS = {
    "zh-raw": "我对芒果过敏，不能吃芒果",
    "zh-seg": "我 喜欢 在 北京 爬山",
    "en-raw": "Alice loves hiking in the Mountains every weekend",
    "en-seg": "bob is allerg to peanut",
    "mixed-raw": "明天下午和Alice开会讨论Milvus项目",
    "mixed-seg": "下周 去 上海 attend the pycon confer",
    "other": "今天天气很好 the weather is nice",
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("芒果", "zh-raw"),  # raw Chinese query, raw Chinese document
        ("过敏", "zh-raw"),
        ("北京", "zh-seg"),  # raw query, pre-segmented document
        ("北京 爬山", "zh-seg"),  # pre-segmented query
        ("我喜欢爬山", "zh-seg"),
        ("hiking", "en-raw"),
        ("HIKE", "en-raw"),  # case folding + stemming
        ("mountain", "en-raw"),
        ("peanuts allergy", "en-seg"),  # raw query, pre-stemmed document
        ("alice 开会", "mixed-raw"),
        ("milvus", "mixed-raw"),
        ("上海 pycon", "mixed-seg"),
        ("conference in 上海", "mixed-seg"),
    ],
)
def test_keyword_search_zh_en_mixed(store: VectorStore, keyword_user: str, query: str, expected: str) -> None:
    hits = store.search_keyword(query, VectorFilter(user_id=keyword_user), 3)
    assert hits, query
    assert hits[0].memory_id == f"kw-{expected}"


@pytest.mark.parametrize("query", ["", "   ", "!!!", "，。？", "😀"])
def test_keyword_search_with_nothing_to_match_returns_empty(
    store: VectorStore, keyword_user: str, query: str
) -> None:
    assert store.search_keyword(query, VectorFilter(user_id=keyword_user), 5) == []


@pytest.fixture(scope="module")
def keyword_user(store: VectorStore) -> Iterator[str]:
    user = f"kw-user-{uid()}"
    store.upsert([rec(f"kw-{k}", user, text=t) for k, t in KEYWORD_DOCS.items()])
    yield user
    store.delete_user(user)


def test_invalid_inputs_are_rejected_before_writing(store: VectorStore) -> None:
    user = f"user-{uid()}"
    before = store.count()
    bad_records = [
        rec("ok-1", user, np.ones(DIM + 1, dtype=np.float32)),
        rec("ok-1", user, np.full(DIM, np.nan, dtype=np.float32)),
        rec("ok-1", user, np.zeros(DIM, dtype=np.float32)),
        rec("it's", user),
        rec("ok-1", "bad\x00user"),
        rec("ok-1", user, memory_type="diary"),
        rec("ok-1", user, importance="high"),  # type: ignore[arg-type]
    ]
    for bad in bad_records:
        with pytest.raises(ValidationError):
            store.upsert([rec(f"good-{uid()}", user), bad])  # the good one must not be written either
    assert store.count() == before
    with pytest.raises(ValidationError):
        store.search_dense(unit(), VectorFilter(user_id=user), 0)
    with pytest.raises(ValidationError):
        store.search_dense(unit(DIM + 2), VectorFilter(user_id=user), 5)
    with pytest.raises(ValidationError):
        store.delete(["fine", 'not"fine'])


def test_long_text_and_unicode_user_id_fit(store: VectorStore) -> None:
    user = "😀" * 256  # 256 characters, 1,024 UTF-8 bytes
    mid = f"m-{uid()}"
    store.upsert([rec(mid, user, text="长" * 40_000)])  # 120,000 bytes: truncated to the column
    assert store.user_hashes(user) == {mid: "h"}
    assert [h.memory_id for h in store.search_keyword("长", VectorFilter(user_id=user), 3)] == [mid]
    store.delete_user(user)


def test_concurrent_threads(store: VectorStore) -> None:
    user = f"user-{uid()}"
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(10):
                store.upsert([rec(f"t{n}-{i}-{uid()}", user, text=f"thread {n} row {i}")])
                store.search_dense(unit(), VectorFilter(user_id=user), 5)
                store.search_keyword("thread", VectorFilter(user_id=user), 5)
                store.user_hashes(user)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(store.user_hashes(user)) == 40
    store.delete_user(user)


def test_search_dense_many_equals_single_searches(store: VectorStore) -> None:
    user = f"many-{uid()}"
    vectors = RNG.standard_normal((30, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.upsert([rec(f"n{i}-{uid()}", user, vectors[i], expires_at=(5 if i % 3 == 0 else 0)) for i in range(30)])
    queries = [unit() for _ in range(5)]
    flt = VectorFilter(user_id=user, now=10)  # every third vector expired
    batched = store.search_dense_many(queries, flt, 4)
    assert [[h.memory_id for h in hits] for hits in batched] == [
        [h.memory_id for h in store.search_dense(q, flt, 4)] for q in queries]
    assert all(len(hits) == 4 for hits in batched)
    assert store.search_dense_many([], flt, 4) == []
    assert store.search_dense_many(queries[:2], VectorFilter(user_id=f"nobody-{uid()}"), 4) == [[], []]
    store.delete_user(user)


def test_dense_scores_are_cosine_and_ranked(store: VectorStore) -> None:
    user, p = f"cos-{uid()}", uid()
    q = unit()
    other = unit()
    other -= (other @ q) * q  # orthogonal to q
    other /= np.linalg.norm(other)
    store.upsert([rec(f"{p}-same", user, q), rec(f"{p}-ortho", user, other),
                  rec(f"{p}-opposite", user, -q), rec(f"{p}-half", user, (q + other) / np.linalg.norm(q + other))])
    hits = store.search_dense(q * 3.0, VectorFilter(user_id=user), 10)  # an unnormalised query: cosine all the same
    assert [h.memory_id[len(p) + 1:] for h in hits] == ["same", "half", "ortho", "opposite"]
    assert [h.score for h in hits] == pytest.approx([1.0, 2 ** -0.5, 0.0, -1.0], abs=1e-4)
    assert [h.rank for h in hits] == [0, 1, 2, 3]
    assert len(store.search_dense(q, VectorFilter(user_id=user), 2)) == 2
    store.delete_user(user)


def test_delete_by_id_with_owner_touches_only_that_owners_rows(store: VectorStore) -> None:
    a, b = f"own-a-{uid()}", f"own-b-{uid()}"
    ids_a = [f"da-{uid()}" for _ in range(3)]
    ids_b = [f"db-{uid()}" for _ in range(3)]
    store.upsert([rec(m, a) for m in ids_a] + [rec(m, b) for m in ids_b])
    store.delete([ids_a[0], ids_b[0]])  # owners unknown to delete(): both go
    assert set(store.user_hashes(a)) == set(ids_a[1:])
    assert set(store.user_hashes(b)) == set(ids_b[1:])
    store.delete([ids_a[1], ids_b[1]], user_id=a)  # b's id passed as a's is left alone
    assert set(store.user_hashes(a)) == {ids_a[2]}
    assert set(store.user_hashes(b)) == set(ids_b[1:])
    store.delete([ids_b[1]], user_id=f"nobody-{uid()}")
    store.delete([ids_b[1]], user_id='o"wn\\er')  # quotes in the owner: escaped, a no-op
    assert set(store.user_hashes(b)) == set(ids_b[1:])
    store.delete([])  # nothing to delete is not an error
    with pytest.raises(ValidationError):
        store.delete([ids_b[1]], user_id="bad\x00owner")
    assert set(store.user_hashes(b)) == set(ids_b[1:])
    store.delete_user(a)
    assert store.user_hashes(a) == {} and set(store.user_hashes(b)) == set(ids_b[1:])
    assert a not in set(store.all_user_ids()) and b in set(store.all_user_ids())
    store.delete_user(b)


def test_insert_new_then_upsert_of_the_same_id_leaves_one_copy(store: VectorStore) -> None:
    user = f"ins-{uid()}"
    n1, n2 = f"n1-{uid()}", f"n2-{uid()}"
    v, w = unit(), unit()
    before = store.count()
    store.insert_new([rec(n1, user, v), rec(n2, user)])
    assert store.count() == before + 2
    store.upsert([rec(n1, user, w)])  # the retry
    hits = store.search_dense(w, VectorFilter(user_id=user), 10)
    assert [h.memory_id for h in hits].count(n1) == 1 and store.count() == before + 2
    assert hits[0].memory_id == n1 and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert set(store.user_hashes(user)) == {n1, n2}
    store.delete_user(user)


@pytest.mark.parametrize("bad", [
    VectorFilter(user_id="bad\x00user"),
    VectorFilter(user_id="u", now=1.5),  # type: ignore[arg-type]
    VectorFilter(user_id="u", memory_types=("diary",)),
    VectorFilter(user_id="u", memory_types="episodic"),  # type: ignore[arg-type]
    VectorFilter(user_id="u", min_importance=True),  # type: ignore[arg-type]
    VectorFilter(user_id="u", created_from=2**63),
    VectorFilter(user_id="u", memory_ids=('x"y',)),
    VectorFilter(user_id="u", created_from=1, or_memory_ids=("it's",)),
])
def test_bad_filters_are_refused_by_every_search(store: VectorStore, bad: VectorFilter) -> None:
    with pytest.raises(ValidationError):
        store.search_dense(unit(), bad, 5)
    with pytest.raises(ValidationError):
        store.search_dense_many([unit()], bad, 5)
    with pytest.raises(ValidationError):
        store.search_keyword("note", bad, 5)


def test_a_closed_store_answers_nothing(tmp_path_factory: pytest.TempPathFactory, kind: str) -> None:
    s = open_store(kind, tmp_path_factory)
    user = f"closed-{uid()}"
    s.upsert([rec(f"c-{uid()}", user)])
    assert s.ping()
    s.close()
    assert not s.ping()
    with pytest.raises(BackendUnavailable):
        s.count()
    with pytest.raises(BackendUnavailable):
        s.search_dense(unit(), VectorFilter(user_id=user), 5)
    s.close()  # closing twice is harmless


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)
