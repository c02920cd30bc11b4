"""Server capabilities and the SQL keyword leg (the BM25 leg where a Milvus server has none).

The SQL leg is checked against the real thing: on Milvus Lite (which has BM25) both legs run on
the same memories and must find the same best memory, never another user's, and honour every
``VectorFilter`` clause the way the Milvus filter does.
"""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from memory_core import FixedClock
from memory_core.lifecycle import epoch
from memory_core.sql_keyword import bm25_rank, like_term
from memory_core.text.keywords import bigram_chars, bigram_token, bm25_text, keyword_text
from memory_core.vectors.base import VectorFilter
from memory_core.vectors.server_caps import (
    MIN_SERVER_VERSION,
    UnsupportedServer,
    caps_for_version,
    parse_version,
)

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)


def test_server_version_decides_the_keyword_leg() -> None:
    assert parse_version("v2.3.5-lite") == (2, 3, 5)
    assert parse_version("2.5") == (2, 5, 0)
    old, new = caps_for_version("v2.3.5-lite"), caps_for_version("v2.5.4")
    assert (old.bm25, old.partition_key) == (False, True)
    assert (new.bm25, new.partition_key) == (True, True)
    assert not caps_for_version("v2.4.15").bm25  # sparse vectors, but no BM25 function yet
    assert caps_for_version("v2.6.0").bm25


@pytest.mark.parametrize("reported", ["v2.2.16", "v2.3.4", "1.1.0"])
def test_a_server_older_than_supported_is_refused_clearly(reported: str) -> None:
    with pytest.raises(UnsupportedServer) as err:
        caps_for_version(reported)
    assert reported in str(err.value) and ".".join(map(str, MIN_SERVER_VERSION)) in str(err.value)


@pytest.mark.parametrize("reported", ["", "unknown", "Zilliz"])
def test_a_server_without_a_readable_version_is_refused(reported: str) -> None:
    with pytest.raises(UnsupportedServer, match="no version"):
        caps_for_version(reported)


def test_like_terms_find_the_words_a_stem_came_from() -> None:
    assert like_term("hike") == "hik" and "hiking".find(like_term("hike")) == 0
    assert like_term("happi") == "happ" and "happy".startswith(like_term("happi"))
    assert like_term("芒果") == "芒果" and like_term("tea") == "tea" and like_term("2024") == "2024"
    assert like_term(bigram_token("园", "区")) == "园区"


def test_a_chinese_bigram_is_one_opaque_token_both_ways() -> None:
    token = bigram_token("我", "家")
    assert token.isascii() and token.isalpha() and bigram_chars(token) == "我家"
    assert keyword_text(token) == token  # no stemming, no split: the SQL leg re-reads stored text with it
    assert bigram_chars("hike") is None and bigram_chars("qaaaaaq") is None
    assert bigram_token("㐀", "\u9fff") != bigram_token("\u9fff", "㐀")
    text = bm25_text("我家住哪 hiking")
    assert "家住" in text and "hike" in text and bigram_token("我", "家") in text.split()
    assert bigram_token("哪", "h") not in text  # pairs never cross a run of Chinese


def test_bm25_rank_prefers_rare_terms_and_drops_non_matches() -> None:
    docs = {"a": ["tea", "green"], "b": ["tea", "zebra"], "c": ["tea"], "d": ["coffee"]}
    ranked = bm25_rank(["tea", "zebra"], docs, 10)
    assert [doc for doc, _ in ranked][0] == "b"  # the rare term decides
    assert "d" not in {doc for doc, _ in ranked}  # no matching term: not a hit at all
    assert all(score > 0 for _, score in ranked)
    assert bm25_rank(["tea"], docs, 2) == bm25_rank(["tea"], docs, 10)[:2]
    assert bm25_rank([], docs, 5) == [] and bm25_rank(["tea"], {}, 5) == []


ALICE = [
    ("I go hiking in the Alps every summer", T0),
    ("我最喜欢吃芒果和榴莲", T0 + timedelta(days=1)),
    ("My sister Jane lives in Toronto and works as a nurse", T0 + timedelta(days=2)),
    ("I am allergic to peanuts", T0 + timedelta(days=3)),
    ("周末我常去西湖边跑步", T0 + timedelta(days=40)),
    ("我家在苏州工业园区 前年买的房 两室一厅", T0 + timedelta(days=5)),
]
BOB = ["I go hiking in the Alps too, with my dog", "我也喜欢芒果", "Toronto is cold in winter"]
QUERIES = ["hiking in the Alps", "芒果", "where does Jane live", "peanut allergy", "西湖 跑步", "Toronto nurse",
           # jieba cuts 家住 / 写区 here and 我家 / 园区 there: only the character pairs meet
           "我家住哪 填快递地址要写区"]


@pytest.fixture
def both_users(make_engine):  # type: ignore[no-untyped-def]
    engine = make_engine(clock=FixedClock(T0 + timedelta(days=60)))
    mine = {}
    for text, at in ALICE:
        mine[engine.add("alice", text, at=at).memory_ids[0]] = text
    bobs = {engine.add('bob" or 1==1', text, at=T0).memory_ids[0] for text in BOB}
    return engine, mine, bobs


def test_sql_leg_finds_what_milvus_bm25_finds_and_nothing_of_another_user(both_users) -> None:  # type: ignore[no-untyped-def]
    engine, mine, bobs = both_users
    assert engine.vectors.native_keyword  # Lite has BM25: the reference to compare with
    leg = engine.retriever.sql_keyword_hits  # what the pipeline runs where the store has no BM25
    flt = VectorFilter(user_id="alice", now=epoch(T0 + timedelta(days=60)))
    for query in QUERIES:
        text = bm25_text(query)  # what the pipeline sends (recall.keyword_query)
        milvus = engine.vectors.search_keyword(text, flt, 5)
        sql = leg(text, flt, 5)
        assert sql, query
        assert sql[0].memory_id == milvus[0].memory_id, (query, mine[sql[0].memory_id], mine[milvus[0].memory_id])
        assert {h.memory_id for h in sql} <= set(mine), query  # never bob's, though he wrote the same words
        assert [h.rank for h in sql] == list(range(len(sql)))
    assert leg(keyword_text("spaceship quantum"), flt, 5) == []
    assert not {h.memory_id for h in leg(keyword_text("hiking 芒果"), replace(flt, user_id="carol"), 5)}
    assert {h.memory_id for h in leg(keyword_text("hiking 芒果 Toronto"), replace(flt, user_id='bob" or 1==1'),
                                      10)} == bobs


def test_sql_leg_applies_every_filter_clause(both_users) -> None:  # type: ignore[no-untyped-def]
    engine, mine, _ = both_users
    leg = engine.retriever.sql_keyword_hits
    records = {mid: engine.get(mid) for mid in mine}
    text = keyword_text("hiking 芒果 Jane Toronto peanuts 西湖 跑步 苏州")
    base = VectorFilter(user_id="alice", now=epoch(T0 + timedelta(days=60)))

    def found(flt: VectorFilter) -> set[str]:
        return {h.memory_id for h in leg(text, flt, 20)}

    assert found(base) == set(mine)
    late = next(mid for mid, r in records.items() if r.created_at >= T0 + timedelta(days=40))
    window = replace(base, created_from=epoch(T0), created_to=epoch(T0 + timedelta(days=10)))
    assert found(window) == set(mine) - {late}
    assert found(replace(window, or_memory_ids=(late,))) == set(mine)  # admitted whatever its time
    some = tuple(sorted(mine)[:2])
    assert found(replace(base, memory_ids=some)) == set(some)
    kinds = {r.memory_type.value for r in records.values()}
    one_kind = sorted(kinds)[0]
    assert found(replace(base, memory_types=(one_kind,))) == {m for m, r in records.items()
                                                              if r.memory_type.value == one_kind}
    top = max(r.importance for r in records.values())
    assert found(replace(base, min_importance=top)) == {m for m, r in records.items() if r.importance >= top}
    expiring = [(m, r.expires_at) for m, r in records.items() if r.expires_at is not None]
    assert expiring  # ordinary memories get a TTL (ttl_days_by_importance)
    mid, at = expiring[0]  # expiry: kept until its moment, gone from then on (as ``expires_at > now``)
    assert mid in found(replace(base, now=epoch(at) - 1))
    assert mid not in found(replace(base, now=epoch(at)))
    # fade_from: past its moment it stays when its importance fades, and only then
    importance = records[mid].importance
    assert mid in found(replace(base, now=epoch(at), fade_from=importance))
    assert mid not in found(replace(base, now=epoch(at), fade_from=importance + 1))
