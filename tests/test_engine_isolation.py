"""Users are kept apart, whatever characters their ids hold."""
from __future__ import annotations

import pytest

from memory_core import NotFoundError, ValidationError

HOSTILE_IDS = [
    'alice"',
    "bob' or 1==1",
    '" or user_id != "',
    "back\\slash\\",
    "用户-王五",
    "emoji-🙂-user",
    "../../etc/passwd",
    "x' || '1'=='1",
    "carol",
]


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_hostile_user_ids_never_see_each_other(make_engine, sql: str) -> None:
    engine = make_engine(sql=sql)
    own: dict[str, str] = {}
    for index, user in enumerate(HOSTILE_IDS):
        result = engine.add(user, f"My secret code word is zebra{index} and I like green tea number {index}")
        own[user] = result.memory_ids[0]
    for user in HOSTILE_IDS:
        for query in ("secret code word", "green tea", "zebra"):
            response = engine.search(user, query, top_k=10)
            assert [r.memory_id for r in response.results] == [own[user]], (user, query)
            assert all(r.user_id == user for r in response.results)
        others = [u for u in HOSTILE_IDS if u != user]
        for other in others[:2]:
            with pytest.raises(NotFoundError):
                engine.get(own[other], user_id=user)
    assert engine.vectors.count() == len(HOSTILE_IDS)


def test_invalid_ids_are_rejected_clearly(make_engine) -> None:
    engine = make_engine()
    for bad in ["", "   ", "nul\x00byte", "x" * 300, "tab\tid"]:
        with pytest.raises(ValidationError):
            engine.add(bad, "some text")
        with pytest.raises(ValidationError):
            engine.search(bad, "some text")
    with pytest.raises(ValidationError):
        engine.get("id\x00")
    assert engine.vectors.count() == 0
