"""Retrieval recipes (memory_core/recipes.py): each named variant runs what its name says, the
switch form still picks the same variant, and the numbers come from Settings unless a recipe
brings its own."""
from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import asdict, replace
from datetime import datetime, timedelta, timezone

import pytest

from memory_core import FixedClock, RetrievalOptions, SearchFilters, ValidationError
from memory_core.recipes import (
    BM25,
    DENSE,
    FULL,
    HYBRID,
    RECIPES,
    SWITCHES,
    Recipe,
    Tuning,
    choose_recipe,
    recipe_for_switches,
    recipe_named,
)

NOW = datetime(2024, 6, 15, 12, tzinfo=timezone.utc)
QUIET = RetrievalOptions(use_cache=False, record=False)
ABLATIONS = ("core", "score_terms", "neighbours", "speaker", "answer_type", "event_time", "english")


def _on(recipe: Recipe) -> set[str]:
    return {name for name in SWITCHES if getattr(recipe, name)}


# ---- the recipes as data -------------------------------------------------------------------
def test_the_named_recipes_are_the_benchmark_methods() -> None:
    assert list(RECIPES) == ["full", "bm25", "dense", "hybrid", "full-no-core", "full-no-score-terms",
                             "full-no-neighbours", "full-no-speaker", "full-no-answer-type", "full-no-event-time",
                             "full-no-english"]
    assert all(recipe.name == name and recipe.tuning is None for name, recipe in RECIPES.items())
    with pytest.raises(TypeError):
        RECIPES["bm25"] = FULL  # type: ignore[index]  # a read-only table
    with pytest.raises(AttributeError):
        FULL.dense = False  # type: ignore[misc]  # a frozen dataclass


def test_each_recipe_switches_on_what_its_name_says() -> None:
    assert _on(FULL) == set(SWITCHES)
    assert _on(BM25) == {"keyword"}
    assert _on(DENSE) == {"dense"}
    assert _on(HYBRID) == {"dense", "keyword"}
    for part in ABLATIONS:
        ablated = recipe_named(f"full-no-{part.replace('_', '-')}")
        assert _on(ablated) == set(SWITCHES) - {part}, ablated.name


def test_an_unknown_recipe_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValidationError) as caught:
        recipe_named("bm52")
    message = str(caught.value)
    assert "'bm52'" in message and all(name in message for name in RECIPES)
    with pytest.raises(ValidationError, match="recipe must be a Recipe"):
        choose_recipe(42, None)  # type: ignore[arg-type]


def test_the_switch_form_names_the_same_recipes() -> None:
    assert recipe_for_switches(RetrievalOptions()) is FULL
    assert recipe_for_switches(QUIET) is FULL  # how a call runs is no part of what it computes
    baseline = {f"use_{part}": False for part in ABLATIONS}
    assert recipe_for_switches(RetrievalOptions(use_dense=False, **baseline)) is BM25
    assert recipe_for_switches(RetrievalOptions(use_keyword=False, **baseline)) is DENSE
    assert recipe_for_switches(RetrievalOptions(**baseline)) is HYBRID
    assert recipe_for_switches(RetrievalOptions(use_speaker=False)) is recipe_named("full-no-speaker")
    custom = recipe_for_switches(RetrievalOptions(use_dense=False, use_neighbours=False))
    assert custom.name == "custom" and _on(custom) == set(SWITCHES) - {"dense", "neighbours"}
    assert choose_recipe(None, None) is FULL
    assert choose_recipe("bm25", QUIET) is BM25
    with pytest.raises(ValidationError, match="not both"):
        choose_recipe("bm25", RetrievalOptions(use_dense=False))


def test_the_numbers_come_from_settings_unless_the_recipe_brings_its_own(monkeypatch) -> None:
    from memory_core.config import Settings

    monkeypatch.setenv("RRF_K", "11")
    monkeypatch.setenv("SPEAKER_MATCH_BOOST", "0")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    tuned = FULL.tuned(settings)
    assert tuned.resolved_tuning.rrf_k == 11 and not tuned.speaker_boost_on()
    assert tuned.resolved_tuning.weights.relevance == settings.weight_relevance
    own = FULL.with_tuning(replace(tuned.resolved_tuning, rrf_k=3))
    assert own.tuned(settings).resolved_tuning.rrf_k == 3
    with pytest.raises(RuntimeError, match="no tuning"):
        FULL.resolved_tuning  # noqa: B018
    for bad in (-1, float("nan"), float("inf"), True, "5"):
        with pytest.raises(ValidationError, match="rrf_k"):
            replace(tuned.resolved_tuning, rrf_k=bad)


# ---- the recipes at work -------------------------------------------------------------------
MEMORIES = [
    "My locker code at the gym is QX-7731",
    "I adopted a puppy named Biscuit last spring",  # no word of the query below
    "The weather in Lisbon was rainy and grey all week",
    "I keep my pet's vaccination papers in the blue folder",
]
QUERY = "Do I have a pet?"


@pytest.fixture
def filled(make_engine):  # type: ignore[no-untyped-def]
    engine = make_engine(clock=FixedClock(NOW))
    ids = [engine.add("u1", text, at=NOW - timedelta(days=3, minutes=i)).memory_ids[0] for i, text in enumerate(MEMORIES)]
    return engine, ids


def test_bm25_has_no_dense_leg_and_dense_no_keyword_leg(filled) -> None:  # type: ignore[no-untyped-def]
    engine, (_locker, puppy, _weather, papers) = filled
    bm25 = engine.search("u1", QUERY, top_k=10, recipe="bm25", options=QUIET, min_relevance=0.0).results
    assert bm25, "the keyword leg finds the memory that says 'pet'"
    assert all(r.parts.dense is None and r.parts.keyword is not None for r in bm25)
    assert puppy not in [r.memory_id for r in bm25]  # shares no word with the query
    assert all(r.score == r.parts.relevance for r in bm25)  # a baseline: relevance alone

    dense = engine.search("u1", QUERY, top_k=10, recipe=DENSE, options=QUIET, min_relevance=0.0).results
    assert all(r.parts.dense is not None and r.parts.keyword is None for r in dense)
    assert puppy in [r.memory_id for r in dense[:2]]

    hybrid = engine.search("u1", QUERY, top_k=10, recipe="hybrid", options=QUIET, min_relevance=0.0).results
    assert papers in [r.memory_id for r in hybrid] and puppy in [r.memory_id for r in hybrid]
    assert any(r.parts.keyword is not None for r in hybrid) and all(r.parts.dense is not None for r in hybrid)


def test_a_named_recipe_ranks_as_its_switches_did(filled) -> None:  # type: ignore[no-untyped-def]
    """``recipe="full-no-x"`` and ``RetrievalOptions(use_x=False)`` are one variant: the same
    ranking, the same scores (the benchmark's figures from before recipes stay comparable)."""
    engine, _ids = filled

    def ranked(**kwargs: object) -> list[tuple[str, float]]:
        response = engine.search("u1", QUERY, top_k=10, min_relevance=0.0, **kwargs)  # type: ignore[arg-type]
        return [(r.memory_id, r.score) for r in response.results]

    assert ranked(options=QUIET) == ranked(recipe="full", options=QUIET) == ranked(recipe=FULL, options=QUIET)
    for part in ABLATIONS:
        switches = RetrievalOptions(use_cache=False, record=False, **{f"use_{part}": False})
        assert ranked(recipe=f"full-no-{part.replace('_', '-')}", options=QUIET) == ranked(options=switches), part
    baseline = {f"use_{part}": False for part in ABLATIONS}
    assert ranked(recipe="bm25", options=QUIET) == ranked(
        options=RetrievalOptions(use_dense=False, use_cache=False, record=False, **baseline))
    with pytest.raises(ValidationError, match="unknown retrieval recipe 'nope'.*full, bm25, dense, hybrid"):
        engine.search("u1", QUERY, recipe="nope")


def test_full_no_core_leaves_out_the_constraints(filled) -> None:  # type: ignore[no-untyped-def]
    engine, _ids = filled
    allergy = engine.add("u1", "I am severely allergic to peanuts", at=NOW - timedelta(days=1)).memory_ids[0]
    ask = "Can you suggest a snack for my hike?"
    full = engine.search("u1", ask, recipe="full", options=QUIET)
    assert allergy in [r.memory_id for r in full.constraints]
    assert engine.search("u1", ask, recipe="full-no-core", options=QUIET).constraints == []


def test_a_recipe_and_its_switches_share_cached_answers(filled) -> None:  # type: ignore[no-untyped-def]
    """The cache keys a recipe as the switches that describe it did before recipes existed, so
    an upgrade keeps the cached answers; a recipe with numbers of its own keys apart."""
    engine, _ids = filled
    first = engine.search("u1", QUERY, options=RetrievalOptions(use_speaker=False))
    assert not first.cache_hit
    assert engine.search("u1", QUERY, recipe="full-no-speaker").cache_hit
    assert not engine.search("u1", QUERY, recipe="full").cache_hit
    tuning = Tuning.from_settings(engine.settings)
    assert engine.search("u1", QUERY, recipe=FULL.with_tuning(tuning)).cache_hit  # the same numbers
    narrow = FULL.with_tuning(replace(tuning, recall_k=1))
    response = engine.search("u1", QUERY, top_k=10, recipe=narrow, min_relevance=0.0)
    assert not response.cache_hit

    from memory_core.response_cache import CACHE_FORMAT, cache_key, filters_json

    key = cache_key(QUERY, 5, None, SearchFilters(), NOW, FULL.tuned(engine.settings), RetrievalOptions(),
                    engine.settings, threshold=0.5)
    before_recipes = json.dumps({
        "v": CACHE_FORMAT, "q": " ".join(unicodedata.normalize("NFKC", QUERY).lower().split()), "k": 5, "c": "",
        "f": filters_json(SearchFilters()), "day": NOW.date().isoformat(), "o": asdict(RetrievalOptions()),
        "min": 0.5, "fade": [3, 0.5], "en": "auto"}, sort_keys=True, ensure_ascii=False)
    assert key == hashlib.sha256(before_recipes.encode("utf-8")).hexdigest()


def test_a_recipes_own_numbers_change_the_search(filled) -> None:  # type: ignore[no-untyped-def]
    engine, _ids = filled
    wide = engine.search("u1", QUERY, top_k=10, recipe="hybrid", options=QUIET, min_relevance=0.0).results
    one = HYBRID.with_tuning(replace(Tuning.from_settings(engine.settings), recall_k=1))
    narrow = engine.search("u1", QUERY, top_k=10, recipe=one, options=QUIET, min_relevance=0.0).results
    assert len(wide) > 2 and 1 <= len(narrow) <= 2  # one hit from each leg at most
