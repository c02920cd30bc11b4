"""Unit tests for the Milvus filter builder: escaping, validation and injection resistance.

The store tests (test_milvus_store.py) check the same ids against a real Milvus Lite; these
check the exact strings, including that a hostile id can never leave its string literal.
"""
from __future__ import annotations

import numpy as np
import pytest

from memory_core.errors import ValidationError
from memory_core.types import MemoryType
from memory_core.vectors.base import VectorFilter
from memory_core.vectors.filters import (
    MAX_MEMORY_ID_CHARS,
    MAX_USER_ID_CHARS,
    build_filter,
    ids_filter,
    quote_string,
    user_filter,
    validate_id,
)

HOSTILE_USER_IDS = [
    'a"b',
    "x' or 1==1",
    "\\",
    '" or user_id != "',
    '\\" or 1==1 or user_id == "\\',
    "用户😀",
    "../../etc",
    "' or ''=''",
    "a\\\\\"b",
    "]) or true or ([",
]


def _parse_literal(expr: str, start: int) -> tuple[str, int]:
    """Read one Milvus double-quoted literal at ``expr[start]``; return (value, index after it).

    Mirrors the server's unquoting (backslash escapes the next character), so the test fails
    if an id could end its literal early and smuggle in an operator.
    """
    assert expr[start] == '"', expr[start:]
    out: list[str] = []
    i = start + 1
    while True:
        ch = expr[i]
        if ch == "\\":
            out.append(expr[i + 1])
            i += 2
        elif ch == '"':
            return "".join(out), i + 1
        else:
            out.append(ch)
            i += 1


@pytest.mark.parametrize("user_id", HOSTILE_USER_IDS)
def test_hostile_user_id_stays_inside_its_literal(user_id: str) -> None:
    expr = build_filter(VectorFilter(user_id=user_id))
    prefix = "user_id == "
    assert expr.startswith(prefix)
    value, end = _parse_literal(expr, len(prefix))
    assert value == user_id
    assert end == len(expr), f"something follows the literal: {expr[end:]!r}"


@pytest.mark.parametrize("user_id", HOSTILE_USER_IDS)
def test_hostile_user_id_followed_by_other_clauses(user_id: str) -> None:
    expr = build_filter(VectorFilter(user_id=user_id, min_importance=3))
    value, end = _parse_literal(expr, len("user_id == "))
    assert value == user_id
    assert expr[end:] == " and importance >= 3"


@pytest.mark.parametrize("user_id", HOSTILE_USER_IDS)
def test_delete_within_one_user_keeps_a_hostile_owner_inside_its_literal(user_id: str) -> None:
    from memory_core.vectors.filters import owned_ids_filter

    expr = owned_ids_filter(["m-1", "m:2"], user_id)
    value, end = _parse_literal(expr, len("user_id == "))
    assert expr.startswith("user_id == ") and value == user_id
    assert expr[end:] == ' and memory_id in ["m-1", "m:2"]'


def test_quote_string_escapes_backslash_before_quote() -> None:
    assert quote_string('a"b') == '"a\\"b"'
    assert quote_string("\\") == '"\\\\"'
    assert quote_string('\\"') == '"\\\\\\""'
    assert quote_string("it's") == '"it\'s"'


def test_full_filter_shape() -> None:
    flt = VectorFilter(
        user_id="u1",
        now=1_700_000_000,
        memory_types=(MemoryType.EPISODIC, "declarative"),
        min_importance=2,
        created_from=100,
        created_to=200,
        memory_ids=("m-1", "m-2"),
    )
    assert build_filter(flt) == (
        'user_id == "u1" and (expires_at == 0 or expires_at > 1700000000)'
        ' and memory_type in ["declarative", "episodic"] and importance >= 2'
        ' and created_at >= 100 and created_at < 200 and memory_id in ["m-1", "m-2"]'
    )


def test_told_time_ids_are_ored_with_the_created_clauses_only() -> None:
    """Memories whose own words tell of the window's time enter it whatever their write time;
    the user, expiry and type clauses still hold for them."""
    flt = VectorFilter(user_id="u1", now=50, memory_types=("episodic",), created_from=100, created_to=200,
                       or_memory_ids=("m-1", "m-2"))
    assert build_filter(flt) == (
        'user_id == "u1" and (expires_at == 0 or expires_at > 50) and memory_type in ["episodic"]'
        ' and ((created_at >= 100 and created_at < 200) or memory_id in ["m-1", "m-2"])'
    )
    # Without a created clause there is nothing to widen; the ids are still checked.
    assert build_filter(VectorFilter(user_id="u1", or_memory_ids=("m-1",))) == 'user_id == "u1"'
    with pytest.raises(ValidationError):
        build_filter(VectorFilter(user_id="u1", or_memory_ids=('m" or 1==1 or memory_id == "',)))
    with pytest.raises(ValidationError):
        build_filter(VectorFilter(user_id="u1", created_to=5, or_memory_ids="m1"))  # type: ignore[arg-type]


def test_fade_from_keeps_that_importance_past_its_date() -> None:
    expr = build_filter(VectorFilter(user_id="u", now=5, fade_from=3))
    assert expr == 'user_id == "u" and (expires_at == 0 or expires_at > 5 or importance >= 3)'
    with pytest.raises(ValidationError):
        build_filter(VectorFilter(user_id="u", now=5, fade_from="3 or 1==1"))  # type: ignore[arg-type]


def test_numpy_ints_are_accepted_as_ints() -> None:
    expr = build_filter(VectorFilter(user_id="u", now=np.int64(5), min_importance=np.int32(4)))
    assert expr == 'user_id == "u" and (expires_at == 0 or expires_at > 5) and importance >= 4'


@pytest.mark.parametrize(
    "flt",
    [
        VectorFilter(user_id="u", now="1700000000 or 1==1"),  # type: ignore[arg-type]
        VectorFilter(user_id="u", now=True),  # type: ignore[arg-type]
        VectorFilter(user_id="u", now=1.5),  # type: ignore[arg-type]
        VectorFilter(user_id="u", min_importance="3"),  # type: ignore[arg-type]
        VectorFilter(user_id="u", created_from=2**63),
        VectorFilter(user_id="u", created_to=-(2**63) - 1),
        VectorFilter(user_id="u", memory_types=("episodic", 'x"] or true or ["')),
        VectorFilter(user_id="u", memory_types=("EPISODIC",)),
        VectorFilter(user_id="u", memory_types="episodic"),  # type: ignore[arg-type]
        VectorFilter(user_id="u", memory_ids=('m" or 1==1 or memory_id == "',)),
        VectorFilter(user_id="u", memory_ids=("m'1",)),
        VectorFilter(user_id="u", memory_ids="m1"),  # type: ignore[arg-type]
        VectorFilter(user_id=""),
        VectorFilter(user_id="a\x00b"),
        VectorFilter(user_id="a\nb"),
        VectorFilter(user_id="a\u0085b"),
        VectorFilter(user_id="\ud800"),
        VectorFilter(user_id=42),  # type: ignore[arg-type]
        VectorFilter(user_id="x" * (MAX_USER_ID_CHARS + 1)),
    ],
)
def test_bad_filters_are_rejected(flt: VectorFilter) -> None:
    with pytest.raises(ValidationError):
        build_filter(flt)


def test_not_a_filter_is_rejected() -> None:
    with pytest.raises(ValidationError):
        build_filter({"user_id": "u"})  # type: ignore[arg-type]


def test_validate_id_limits_and_allowed_characters() -> None:
    assert validate_id("x" * MAX_USER_ID_CHARS, "user_id") == "x" * MAX_USER_ID_CHARS
    assert validate_id('q"uo\\te\'s 用户', "user_id") == 'q"uo\\te\'s 用户'
    assert validate_id("0f3a-uuid:1.2_x", "memory_id") == "0f3a-uuid:1.2_x"
    assert validate_id("m" * MAX_MEMORY_ID_CHARS, "memory_id") == "m" * MAX_MEMORY_ID_CHARS
    for bad in ["m" * (MAX_MEMORY_ID_CHARS + 1), "", "a b", "it's", 'a"b', "a\\b", "用户", "a\tb"]:
        with pytest.raises(ValidationError):
            validate_id(bad, "memory_id")
    for bad in ["", "\x00", "a\x1fb", "a\x7fb", "\t"]:
        with pytest.raises(ValidationError):
            validate_id(bad, "user_id")


def test_user_and_ids_filters() -> None:
    assert user_filter('a"b') == 'user_id == "a\\"b"'
    assert ids_filter(["m1", "m2"]) == 'memory_id in ["m1", "m2"]'
    with pytest.raises(ValidationError):
        ids_filter("m1")
    with pytest.raises(ValidationError):
        ids_filter(["ok", "not ok"])
