"""Validates the truth-over-time scenario set (``bench/truth/scenarios.jsonl``) without the engine.

The benchmark can only judge the engine if its data is consistent: a ``top`` substring that no
turn contains can never be recalled, a ``stale`` substring that also sits in the current fact
makes a correct engine fail, and a ``not_stored`` text that is not a turn checks nothing. These
checks are cheap, so they run with the unit tests; the broken samples at the end show that each
check can fail.
"""
from __future__ import annotations

import copy
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

SCENARIOS = Path(__file__).resolve().parent.parent / "bench" / "truth" / "scenarios.jsonl"
KINDS = ("update", "correction", "negation", "question", "reply", "stable", "unrelated", "repeat", "constraint")
LANGS = ("en", "zh")
TOP_KEYS = {"id", "lang", "kind", "turns", "query", "expect"}
EXPECT_KEYS = {"top", "stale", "not_stored", "one_active", "nothing", "forbid"}
TURN_KEYS = {"day", "text", "assistant"}
CJK = re.compile(r"[\u4e00-\u9fff]")
STABLE_MIN_SMALL_TALK = 8
STABLE_DAYS = (180, 430)  # "months of small talk": six to fourteen months


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)


def validate(sc: dict[str, Any]) -> list[str]:  # noqa: C901 - one flat list of rules reads best
    """Every rule one scenario breaks, as readable messages (empty when it is sound)."""
    errs: list[str] = []
    sid = sc.get("id", "?")
    if set(sc) != TOP_KEYS:
        return [f"{sid}: keys {sorted(sc)} != {sorted(TOP_KEYS)}"]
    lang, kind, turns, query, exp = sc["lang"], sc["kind"], sc["turns"], sc["query"], sc["expect"]
    if lang not in LANGS:
        errs.append(f"{sid}: lang {lang!r}")
    if kind not in KINDS:
        errs.append(f"{sid}: kind {kind!r}")
    if not re.fullmatch(rf"{re.escape(str(lang))}-{re.escape(str(kind))}-\d{{3}}", str(sid)):
        errs.append(f"{sid}: id does not read <lang>-<kind>-NNN")
    if not isinstance(turns, list) or not turns:
        return errs + [f"{sid}: no turns"]
    for t in turns:
        if not isinstance(t, dict) or not {"day", "text"} <= set(t) or not set(t) <= TURN_KEYS:
            return errs + [f"{sid}: bad turn {t!r}"]
        if not isinstance(t["text"], str) or not t["text"].strip():
            errs.append(f"{sid}: empty turn text")
        if "assistant" in t and (not isinstance(t["assistant"], str) or not t["assistant"].strip()):
            errs.append(f"{sid}: empty assistant message")
    if not isinstance(query, dict) or set(query) != {"day", "text"} or not str(query.get("text", "")).strip():
        return errs + [f"{sid}: bad query {query!r}"]
    days = [t["day"] for t in turns]
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in days + [query["day"]]):
        errs.append(f"{sid}: days must be non-negative integers")
        return errs
    if days[0] != 0:
        errs.append(f"{sid}: the first turn is day 0")
    if any(b < a for a, b in zip(days, days[1:])):
        errs.append(f"{sid}: turn days go backwards {days}")
    if query["day"] < days[-1]:
        errs.append(f"{sid}: query day {query['day']} before the last turn (day {days[-1]})")
    texts = [t["text"] for t in turns]
    if len(set(texts)) != len(texts):
        errs.append(f"{sid}: the same turn text twice")
    if lang == "zh" and not all(CJK.search(x) for x in texts + [query["text"]]):
        errs.append(f"{sid}: a Chinese scenario has a turn without Chinese")
    if lang == "en" and any(CJK.search(x) for x in texts + [query["text"]]):
        errs.append(f"{sid}: an English scenario has Chinese in a turn")

    if not isinstance(exp, dict) or set(exp) != EXPECT_KEYS:
        return errs + [f"{sid}: expect keys {sorted(exp) if isinstance(exp, dict) else exp}"]
    for key in ("top", "stale", "not_stored", "one_active", "forbid"):
        if not isinstance(exp[key], list) or (exp[key] and not _is_str_list(exp[key])):
            errs.append(f"{sid}: expect.{key} must be a list of non-empty strings")
    if not isinstance(exp["nothing"], bool):
        errs.append(f"{sid}: expect.nothing must be a boolean")
    if errs:
        return errs
    low = [x.lower() for x in texts]
    for key in ("top", "stale", "one_active"):
        for sub in exp[key]:
            if not any(sub.lower() in x for x in low):
                errs.append(f"{sid}: {key} {sub!r} occurs in no turn")
    holders = [x for x in low if any(s.lower() in x for s in exp["top"])]
    for sub in exp["stale"]:
        if any(sub.lower() in x for x in holders):
            errs.append(f"{sid}: stale {sub!r} occurs in a turn that holds the current truth")
    for text in exp["not_stored"]:
        if text not in texts:
            errs.append(f"{sid}: not_stored {text!r} is not a turn text")
    for text in exp["not_stored"]:
        if any(s.lower() in text.lower() for s in exp["top"]) and not any(
            s.lower() in x for x in low if x != text.lower() for s in exp["top"]
        ):
            errs.append(f"{sid}: only a not_stored turn holds the top value")
    if any(w != w.lower() for w in exp["forbid"]):
        errs.append(f"{sid}: forbid words are lower case")

    # what each kind is about
    if kind == "unrelated":
        if not exp["nothing"] or exp["top"]:
            errs.append(f"{sid}: unrelated wants nothing=true and top=[]")
    else:
        if exp["nothing"] or not exp["top"]:
            errs.append(f"{sid}: {kind} needs a top value and nothing=false")
    if kind in ("update", "correction", "negation") and not exp["stale"]:
        errs.append(f"{sid}: {kind} names the stale value")
    if kind == "question" and not exp["not_stored"]:
        errs.append(f"{sid}: question lists its question turns in not_stored")
    if kind == "reply" and not any("assistant" in t for t in turns):
        errs.append(f"{sid}: reply has no turn answering the assistant")
    if kind == "repeat":
        if not exp["one_active"]:
            errs.append(f"{sid}: repeat names one_active substrings")
        for sub in exp["one_active"]:
            if sum(sub.lower() in x for x in low) < 2:
                errs.append(f"{sid}: one_active {sub!r} is not said at least twice")
    if kind == "constraint" and not exp["forbid"]:
        errs.append(f"{sid}: constraint lists forbidden words")
    if kind != "constraint" and exp["forbid"]:
        errs.append(f"{sid}: forbid is for constraint scenarios")
    if kind == "stable":
        if len(turns) < 1 + STABLE_MIN_SMALL_TALK:
            errs.append(f"{sid}: stable needs the fact and {STABLE_MIN_SMALL_TALK}+ turns of small talk")
        if not STABLE_DAYS[0] <= query["day"] <= STABLE_DAYS[1]:
            errs.append(f"{sid}: stable query on day {query['day']}, not within {STABLE_DAYS}")
        if sum(any(s.lower() in x for s in exp["top"]) for x in low) != 1:
            errs.append(f"{sid}: stable states its fact in exactly one turn")
    return errs


def load() -> list[dict[str, Any]]:
    rows = []
    with SCENARIOS.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            assert line.strip(), f"line {n} is empty"
            rows.append(json.loads(line))
    return rows


@pytest.fixture(scope="module")
def scenarios() -> list[dict[str, Any]]:
    return load()


def test_every_scenario_is_sound(scenarios: list[dict[str, Any]]) -> None:
    errors = [e for sc in scenarios for e in validate(sc)]
    assert not errors, "\n".join(errors[:40])


def test_ids_are_unique(scenarios: list[dict[str, Any]]) -> None:
    dup = [i for i, n in Counter(sc["id"] for sc in scenarios).items() if n > 1]
    assert not dup


def test_size_and_balance(scenarios: list[dict[str, Any]]) -> None:
    assert len(scenarios) >= 300
    langs = Counter(sc["lang"] for sc in scenarios)
    for lang in LANGS:
        assert 0.45 <= langs[lang] / len(scenarios) <= 0.55, langs
    per = Counter((sc["kind"], sc["lang"]) for sc in scenarios)
    kinds = Counter(sc["kind"] for sc in scenarios)
    for kind in KINDS:
        assert kinds[kind] >= 0.08 * len(scenarios), (kind, kinds[kind])
        for lang in LANGS:
            assert per[(kind, lang)] >= 0.4 * kinds[kind], (kind, lang, per[(kind, lang)])


def test_no_query_or_turn_is_copied_across_scenarios(scenarios: list[dict[str, Any]]) -> None:
    """Hand-written, not templated: a query text is used once, a turn text at most twice."""
    queries = Counter(sc["query"]["text"] for sc in scenarios)
    assert not [q for q, n in queries.items() if n > 1]
    turns = Counter(t["text"] for sc in scenarios for t in sc["turns"])
    assert not [t for t, n in turns.items() if n > 2]


# --- the checks themselves can fail -------------------------------------------------------------

GOOD = {
    "id": "en-update-999", "lang": "en", "kind": "update",
    "turns": [{"day": 0, "text": "I live in Lisbon, near the river."},
              {"day": 41, "assistant": "How's the new place?", "text": "Great! I moved to Porto last week."}],
    "query": {"day": 70, "text": "Where do I live now?"},
    "expect": {"top": ["Porto"], "stale": ["Lisbon"], "not_stored": [], "one_active": [], "nothing": False,
               "forbid": []},
}


def _broken(path: str, value: Any) -> dict[str, Any]:
    sc = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node: Any = sc
    for p in parents:
        node = node[int(p)] if p.isdigit() else node[p]
    node[int(last) if last.isdigit() else last] = value
    return sc


def test_the_sample_is_sound() -> None:
    assert validate(GOOD) == []


@pytest.mark.parametrize(("path", "value", "message"), [
    ("expect.top", ["Madrid"], "occurs in no turn"),
    ("expect.stale", ["Porto"], "holds the current truth"),
    ("expect.not_stored", ["Where do I live?"], "is not a turn text"),
    ("turns.1.day", 0, ""),  # equal days are fine: no error expected, see below
    ("query.day", 40, "before the last turn"),
    ("lang", "zh", "id does not read"),
    ("kind", "stable", "id does not read"),
    ("expect.nothing", True, "needs a top value"),
    ("expect.forbid", ["Steak"], "lower case"),
    ("turns.0.text", "Great! I moved to Porto last week.", "the same turn text twice"),
])
def test_a_broken_scenario_is_reported(path: str, value: Any, message: str) -> None:
    errs = validate(_broken(path, value))
    if message:
        assert any(message in e for e in errs), errs
    else:
        assert errs == []


def test_days_going_backwards_are_reported() -> None:
    sc = _broken("turns.0.day", 0)
    sc["turns"].append({"day": 12, "text": "Porto is lovely."})
    assert any("go backwards" in e for e in validate(sc))


PROBES = SCENARIOS.parent / "probes"


@pytest.mark.parametrize("name", sorted(p.name for p in PROBES.glob("*.jsonl")))
def test_every_probe_scenario_is_sound(name: str) -> None:
    """The probe sets (``bench/truth/probes``) follow the same format, with ids of their own."""
    rows = [json.loads(line) for line in (PROBES / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) == 72 and len({r["id"] for r in rows}) == 72
    assert not {r["id"] for r in rows} & {s["id"] for s in load()}
    problems = {r["id"]: [p for p in validate(r) if "does not read <lang>-<kind>-NNN" not in p] for r in rows}
    assert not {k: v for k, v in problems.items() if v}
    assert all(re.fullmatch(rf"[pqrstuvwx][ez]-{r['kind']}-\d{{3}}", r["id"]) for r in rows)  # pe-, pz-, ... xe-, xz-


def test_the_judge_reads_no_suggestion_in_a_quoted_rule() -> None:
    from bench.truth.runner import mentions, suggestions_part
    reply = ('(Offline mode) Some dishes you might like: garden salad, steamed fish. I also left out what clashes with '
             'what you told me: "gout. you\'re supposed to stay off red meat, shellfish and beer." Try a beer-free punch.')
    assert not mentions(suggestions_part(reply), "shellfish")
    assert mentions(suggestions_part(reply), "salad") and mentions(suggestions_part(reply + " Or a cold beer."), "beer")
