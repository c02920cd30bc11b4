"""Retrieval variants as named recipes: what a search does, written down as data.

A search can run the whole pipeline or parts of it: the benchmark compares the full pipeline
with plain BM25, plain dense and their fusion, and with the full pipeline less one part (a part
is kept only while switching it off costs recall on the validation halves, issue 21). Those
variants used to be ten booleans on ``RetrievalOptions`` plus the retrieval numbers of
``Settings``, combined afresh at each call site. A ``Recipe`` names one variant (as graphiti's
``search_config_recipes``): which recall legs run, which ranking parts apply, and the numbers
they use (``Tuning``). The recipes below are the only variants the code and the benchmark use;
``engine.search(..., recipe="bm25")`` picks one by name.

The numbers of a named recipe are left unset (``tuning=None``): a search fills them from the
engine's ``Settings`` (``Recipe.tuned``), so ``FULL`` is the product's pipeline as the
environment configures it (``RRF_K=10`` still changes what ``FULL`` does). A recipe with its own
``Tuning`` (``FULL.with_tuning(...)``) overrides them for that search alone.

``RetrievalOptions`` stays the public switch form (backward compatible): its ``use_*`` booleans
map to the recipe with those parts (``recipe_for_switches``), and ``use_cache`` / ``record`` are
how one call runs (read the result cache, count the results as used), not what it computes.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Mapping

from memory_core.config import Settings
from memory_core.errors import ValidationError
from memory_core.scoring import Weights


@dataclass(frozen=True)
class Tuning:
    """The numbers a recipe runs with; each field is the ``Settings`` field of the same name,
    where its measured choice is documented."""

    recall_k: int  # hits each recall leg returns
    context_dense_turns: int  # recent turns the second dense leg reads with the query (0 = off)
    rrf_k: int  # reciprocal-rank fusion constant
    neighbour_seeds: int  # strongest hits that lend score to adjacent memories (0 = off)
    neighbour_window_s: int
    neighbour_next_share: float
    neighbour_prev_share: float
    speaker_match_boost: float  # 0 = the speaker part off
    when_answer_boost: float  # 0 = the answer-type part off
    not_own_fact_factor: float  # 1 = a question about the user ranks others' facts and wishes alike
    event_window_ids: int  # memories that tell of the named time admitted to its window
    weight_relevance: float
    weight_importance: float
    weight_recency: float
    recency_half_life_days: float

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValidationError(f"Tuning.{f.name} must be a finite number >= 0, got {value!r}")

    @classmethod
    def from_settings(cls, settings: Settings) -> "Tuning":
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})

    @property
    def weights(self) -> Weights:
        return Weights(self.weight_relevance, self.weight_importance, self.weight_recency,
                       self.recency_half_life_days)


@dataclass(frozen=True)
class Recipe:
    """One retrieval variant: the recall legs it runs and the ranking parts it applies.

    Legs: ``dense`` (the query's embedding, and the query read with the recent conversation)
    and ``keyword`` (BM25 on query + context); both run again inside a time window the query
    names. Parts: ``core`` (the user's core memories compete even when no leg recalled them),
    ``score_terms`` (importance and recency reorder comparably relevant results; off = relevance
    alone), ``neighbours`` (a strong hit lends score to the memory written just before/after
    it), ``speaker`` (a line by the person the query names is boosted, and the dense legs embed
    the query without the name), ``answer_type`` (a "when" question boosts memories that state a
    time), ``event_time`` (a named window also admits memories that tell of that time), ``english``
    (the English encoder re-ranks an English query's candidates: memory_core/english_leg.py)."""

    name: str
    dense: bool = True
    keyword: bool = True
    core: bool = True
    score_terms: bool = True
    neighbours: bool = True
    speaker: bool = True
    answer_type: bool = True
    event_time: bool = True
    english: bool = True
    tuning: Tuning | None = None  # None: the engine's Settings (see ``tuned``)

    def tuned(self, settings: Settings) -> "Recipe":
        """This recipe with its numbers filled from ``settings`` where it sets none."""
        return self if self.tuning is not None else replace(self, tuning=Tuning.from_settings(settings))

    def with_tuning(self, tuning: Tuning) -> "Recipe":
        return replace(self, tuning=tuning)

    @property
    def resolved_tuning(self) -> Tuning:
        """The numbers of a tuned recipe (the pipeline tunes every recipe before it runs)."""
        if self.tuning is None:
            raise RuntimeError(f"recipe {self.name!r} has no tuning yet: call .tuned(settings) first")
        return self.tuning

    def switches(self) -> dict[str, bool]:
        """The parts as ``RetrievalOptions`` names them (``use_dense``, ...): the result cache keys on
        these, so a recipe and the switches that describe it share cached answers."""
        return {f"use_{name}": getattr(self, name) for name in SWITCHES}

    # The parts a speaker / answer-type / neighbour / event-time step needs on to run at all.
    def speaker_boost_on(self) -> bool:
        return self.speaker and self.resolved_tuning.speaker_match_boost > 0

    def not_own_fact_on(self) -> bool:
        return self.speaker and self.resolved_tuning.not_own_fact_factor < 1

    def when_boost_on(self) -> bool:
        return self.answer_type and self.resolved_tuning.when_answer_boost > 0


# The on/off fields of a recipe, in the order ``RetrievalOptions`` lists them.
SWITCHES = ("dense", "keyword", "core", "score_terms", "neighbours", "speaker", "answer_type", "event_time",
            "english")
# The parts the baselines leave out: they are the legs and their fusion, nothing else.
_PARTS = ("core", "score_terms", "neighbours", "speaker", "answer_type", "event_time", "english")
_BASELINE = {part: False for part in _PARTS}

FULL = Recipe("full")
BM25 = Recipe("bm25", dense=False, keyword=True, **_BASELINE)
DENSE = Recipe("dense", dense=True, keyword=False, **_BASELINE)
HYBRID = Recipe("hybrid", dense=True, keyword=True, **_BASELINE)
# Ablations: the full pipeline with one part off.
FULL_NO_CORE = Recipe("full-no-core", core=False)
FULL_NO_SCORE_TERMS = Recipe("full-no-score-terms", score_terms=False)
FULL_NO_NEIGHBOURS = Recipe("full-no-neighbours", neighbours=False)
FULL_NO_SPEAKER = Recipe("full-no-speaker", speaker=False)
FULL_NO_ANSWER_TYPE = Recipe("full-no-answer-type", answer_type=False)
FULL_NO_EVENT_TIME = Recipe("full-no-event-time", event_time=False)
FULL_NO_ENGLISH = Recipe("full-no-english", english=False)

RECIPES: Mapping[str, Recipe] = MappingProxyType({recipe.name: recipe for recipe in (
    FULL, BM25, DENSE, HYBRID, FULL_NO_CORE, FULL_NO_SCORE_TERMS, FULL_NO_NEIGHBOURS, FULL_NO_SPEAKER,
    FULL_NO_ANSWER_TYPE, FULL_NO_EVENT_TIME, FULL_NO_ENGLISH,
)})


def recipe_named(name: str) -> Recipe:
    """The named recipe; an unknown name is a ``ValidationError`` that lists the known ones."""
    recipe = RECIPES.get(name) if isinstance(name, str) else None
    if recipe is None:
        raise ValidationError(f"unknown retrieval recipe {name!r}; known recipes: {', '.join(RECIPES)}")
    return recipe


@dataclass
class RetrievalOptions:
    """How one search runs, in the switch form (kept for callers that predate recipes).

    The ``use_*`` switches describe a recipe (``recipe_for_switches``: all on is ``FULL``);
    ``use_cache`` reads and fills the result cache, ``record`` counts the results as used (a
    retrieval keeps a memory alive) and records the search's timings."""

    use_dense: bool = True
    use_keyword: bool = True
    use_core: bool = True
    use_score_terms: bool = True  # False: rank by relevance alone
    use_neighbours: bool = True  # lend score to the memories written just before/after a strong hit
    use_speaker: bool = True  # boost transcript lines whose speaker the query names
    use_answer_type: bool = True  # boost memories that state a time when the query asks "when"
    use_event_time: bool = True  # a named time window also admits memories that *tell* of that time
    use_english: bool = True  # the English encoder re-ranks English candidates (when it is loaded)
    use_cache: bool = True
    record: bool = True

    def switches(self) -> dict[str, bool]:
        return {f"use_{name}": getattr(self, f"use_{name}") for name in SWITCHES}


def recipe_for_switches(options: RetrievalOptions) -> Recipe:
    """The recipe the switches describe: the named one with exactly those parts, else an
    unnamed ("custom") recipe with them."""
    wanted = options.switches()
    for recipe in RECIPES.values():
        if recipe.switches() == wanted:
            return recipe
    return Recipe("custom", **{name: wanted[f"use_{name}"] for name in SWITCHES})


def choose_recipe(recipe: Recipe | str | None, options: RetrievalOptions | None) -> Recipe:
    """The recipe a search runs: ``recipe`` (a ``Recipe`` or a name) when given, else the one
    ``options``' switches describe, else ``FULL``. Both a recipe and switches other than all-on
    would say two different things: that is refused."""
    if recipe is None:
        return recipe_for_switches(options) if options is not None else FULL
    if isinstance(recipe, str):
        chosen = recipe_named(recipe)
    elif isinstance(recipe, Recipe):
        chosen = recipe
    else:
        raise ValidationError(f"recipe must be a Recipe or one of {', '.join(RECIPES)}, got {type(recipe).__name__}")
    if options is not None and not all(options.switches().values()):
        raise ValidationError("give the retrieval variant either as a recipe or as RetrievalOptions switches, "
                              "not both (RetrievalOptions(use_cache=..., record=...) goes with a recipe)")
    return chosen
