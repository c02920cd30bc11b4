"""Analytics services against a real engine: the service itself refuses anyone without the
analytics permission (the page check is for the person, the service check is the rule), and
staff and analysts get the numbers; the page passes the signed-in principal through."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from streamlit.testing.v1 import AppTest

from services import analytics, runtime
from services.auth import Principal
from services.demo_data import seed_demo
from tests.app_support import ANALYST, DEMO_STAFF, REPO_ROOT, STAFF, ZHANG  # app_env: a fixture, registered in conftest.py

ANALYTICS_PAGE = str(REPO_ROOT / "pages" / "3_📊_Analytics.py")

CALLS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("summary", lambda p, e: analytics.summary(p, e)),
    ("charts", lambda p, e: analytics.charts(p, e)),
    ("importance_frame", lambda p, e: analytics.importance_frame(p, e)),
    ("status_by_user_frame", lambda p, e: analytics.status_by_user_frame(p, e)),
    ("growth_frame", lambda p, e: analytics.growth_frame(p, e)),
    ("metrics_frame", lambda p, e: analytics.metrics_frame(p, e)),
    ("job_runs_frame", lambda p, e: analytics.job_runs_frame(p, e)),
]


@pytest.fixture
def engine(make_engine):  # type: ignore[no-untyped-def]
    eng = make_engine()
    eng.add("alice", "I live in Lisbon and work as a nurse", actor="test")
    eng.add("bob", "My daughter plays the violin", actor="test")
    eng.search("alice", "where do I live")
    eng.flush()
    return eng


def test_every_public_function_takes_a_principal() -> None:
    import inspect

    public = {name for name, fn in vars(analytics).items()
              if inspect.isfunction(fn) and fn.__module__ == analytics.__name__ and not name.startswith("_")}
    assert public - {"require_analytics"} == {name for name, _ in CALLS}
    for name in public:
        first = next(iter(inspect.signature(getattr(analytics, name)).parameters))
        assert first == "principal", name
        if name != "require_analytics":  # the rule is applied by one decorator, not retyped per body
            assert getattr(getattr(analytics, name), "principal_check", None) is analytics.require_analytics, name


@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_an_end_user_or_nobody_is_refused(engine, name: str, call) -> None:  # type: ignore[no-untyped-def]
    for who in (ZHANG, Principal("alice", "Alice", "user", "alice"), None, "staff"):
        with pytest.raises(PermissionError):
            call(who, engine)


@pytest.mark.parametrize("who", [STAFF, ANALYST], ids=["staff", "analyst"])
def test_staff_and_analysts_get_the_numbers(engine, who: Principal) -> None:  # type: ignore[no-untyped-def]
    numbers = analytics.summary(who, engine)
    assert numbers["users"] == 2 and numbers["memories_active"] == 2 and numbers["searches"] == 1
    per_user = analytics.status_by_user_frame(who, engine)
    assert set(per_user["user_id"]) == {"alice", "bob"}
    charts = {c.key: c for c in analytics.charts(who, engine)}
    assert charts["per_user"].figure is not None and charts["latency_time"].figure is not None
    assert analytics.growth_frame(who, engine)["stored"].iloc[-1] == numbers["memories_total"]
    assert len(analytics.metrics_frame(who, engine)) == 1
    assert analytics.importance_frame(who, engine)["count"].sum() == 2
    assert analytics.job_runs_frame(who, engine).empty


@pytest.mark.parametrize("sql", ["sqlite", "postgres"])
def test_faded_memories_are_counted_among_the_active_ones(make_engine, sql: str) -> None:  # type: ignore[no-untyped-def]
    """A memory of importance 3 past its date fades (kept, recalled only when relevant): the
    summary says how many, in both languages' memories alike, and only for demo users to demo staff."""
    from datetime import datetime, timedelta, timezone

    from memory_core import FixedClock

    start = datetime(2025, 1, 10, tzinfo=timezone.utc)
    eng = make_engine(sql=sql, clock=FixedClock(start))
    ids = [eng.add(user, text, actor="test").created[0] for user, text in (
        ("alice", "Our trip to the Great Wall was the best week of my year"),
        ("alice", "我们全家去年去了一趟桂林，风景太美了"),
        ("demo:bob", "I ran my first half marathon in Porto"))]
    for memory_id, user in zip(ids, ("alice", "alice", "demo:bob")):
        eng.update(memory_id, actor="staff:test", importance=3, user_id=user,
                   expires_at=start + timedelta(days=30))
    assert analytics.summary(STAFF, eng)["memories_faded"] == 0  # not yet past their date
    eng.clock.set(start + timedelta(days=31))
    numbers = analytics.summary(STAFF, eng)
    assert numbers["memories_faded"] == 3 and numbers["memories_active"] == 3
    assert analytics.summary(DEMO_STAFF, eng)["memories_faded"] == 1
    eng.expire(ids[0], actor="staff:test", user_id="alice")  # expired by a person: no longer faded
    assert analytics.summary(STAFF, eng)["memories_faded"] == 2


def test_demo_staff_sees_demo_users_only(engine) -> None:  # type: ignore[no-untyped-def]
    """Demo staff (anyone, in demo mode) must not learn real users' ids from the charts."""
    engine.add("demo:alice", "I like green tea", actor="test")
    engine.search("demo:alice", "what do I drink")
    engine.flush()
    assert set(analytics.status_by_user_frame(DEMO_STAFF, engine)["user_id"]) == {"demo:alice"}
    assert set(analytics.importance_frame(DEMO_STAFF, engine)["user_id"]) == {"demo:alice"}
    assert set(analytics.metrics_frame(DEMO_STAFF, engine)["user_id"]) == {"demo:alice"}
    assert analytics.summary(DEMO_STAFF, engine)["users"] == 1
    per_user = next(c for c in analytics.charts(DEMO_STAFF, engine) if c.key == "per_user").figure
    assert per_user is not None and {x for trace in per_user.data for x in trace.x} == {"demo:alice"}
    assert set(analytics.status_by_user_frame(STAFF, engine)["user_id"]) == {"alice", "bob", "demo:alice"}


def test_the_page_passes_the_analyst_through(app_env: dict[str, str]) -> None:
    seed_demo(runtime.get_engine(), ["demo:alice"])
    at = AppTest.from_file(ANALYTICS_PAGE, default_timeout=180)
    at.session_state["principal"] = ANALYST
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert int(at.metric[0].value.replace(",", "")) >= 10
    assert at.get("plotly_chart")
