"""Numbers and charts for stakeholders: what is stored, how it grows and expires, how fast
retrieval is, how often the cache answers, and what the scheduler did.

Aggregates run in SQL (GROUP BY, through the engine's analytics reads), so the page stays fast with many
memories; figures are plotly objects the page only displays. Each ``Chart`` carries an
explanation for when it has no data yet.

Every public function takes the signed-in principal first and refuses anyone without the
analytics permission (support staff and analysts) with ``PermissionError`` (``@analytics_only``,
see ``services.access``), whatever the page did: the page check is for the person, this one is the rule. The numbers span every user
(per-user breakdowns name user ids), so an end user must never get them.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from services.access import principal_check
from services.auth import DEMO_PREFIX, Principal

if TYPE_CHECKING:
    from memory_core import MemoryEngine

STAGES = ("rewrite", "embed", "search", "rerank", "fetch", "total")


def require_analytics(principal: Principal | None) -> Principal:
    """The principal when it may view analytics (staff, analyst); PermissionError otherwise
    (including nobody signed in)."""
    if principal is None or not isinstance(principal, Principal) or not principal.can_view_analytics:
        raise PermissionError("analytics is for support staff and analysts only")
    return principal


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    figure: go.Figure | None  # None = no data yet
    empty_reason: str = ""


def _user_prefix(demo_only: bool) -> str:
    """Demo staff sees demo users only, here as on Admin (services.admin)."""
    return DEMO_PREFIX if demo_only else ""


def _importance_frame(engine: "MemoryEngine", demo_only: bool = False) -> pd.DataFrame:
    """Active memories counted by user, type and importance."""
    rows = engine.count_active_by_type_and_importance(_user_prefix(demo_only))
    return pd.DataFrame(rows, columns=["user_id", "memory_type", "importance", "count"])


def _status_by_user_frame(engine: "MemoryEngine", demo_only: bool = False) -> pd.DataFrame:
    rows = engine.count_by_user_and_status(_user_prefix(demo_only))
    return pd.DataFrame(rows, columns=["user_id", "status", "count"])


def _growth_frame(engine: "MemoryEngine") -> pd.DataFrame:
    """Per day: memories created, memories expired, and the running total still stored."""
    created_at, expired_at = engine.created_and_expired_times()
    created = pd.DataFrame({"at": created_at}, columns=["at"])
    expired = pd.DataFrame({"at": expired_at}, columns=["at"])
    if created.empty:
        return pd.DataFrame(columns=["day", "created", "expired", "stored"])
    per_day = pd.DataFrame({
        "created": pd.to_datetime(created["at"], utc=True).dt.floor("D").value_counts(),
        "expired": (pd.to_datetime(expired["at"], utc=True).dt.floor("D").value_counts()
                    if not expired.empty else pd.Series(dtype="int64")),
    }).fillna(0).sort_index()
    per_day["stored"] = (per_day["created"] - per_day["expired"]).cumsum()
    per_day.index.name = "day"
    return per_day.reset_index()


def _metrics_frame(engine: "MemoryEngine", since: datetime | None = None, demo_only: bool = False) -> pd.DataFrame:
    """One row per recorded search; ``cache_hit`` as a real bool (a nullable or integer column
    must not turn hits into NaN or strings before the rate is taken)."""
    frame = pd.DataFrame(engine.retrieval_metrics(since=since))
    if not frame.empty:
        frame["at"] = pd.to_datetime(frame["at"], utc=True)
        frame["cache_hit"] = frame["cache_hit"].fillna(False).astype(bool)
        if demo_only:
            frame = frame[frame["user_id"].astype(str).str.startswith(DEMO_PREFIX)]
    return frame


def _bucket(frame: pd.DataFrame) -> str:
    span = frame["at"].max() - frame["at"].min()
    return "D" if span > timedelta(days=3) else ("h" if span > timedelta(hours=3) else "min")


def _latency_over_time(frame: pd.DataFrame) -> pd.DataFrame:
    """p50 and p95 of total retrieval time per time bucket (day, hour or minute by the span)."""
    bucket = frame["at"].dt.floor(_bucket(frame))
    grouped = frame.groupby(bucket)["total_ms"]
    out = pd.DataFrame({"p50": grouped.quantile(0.5), "p95": grouped.quantile(0.95), "searches": grouped.size()})
    out.index.name = "time"
    return out.reset_index()


def _latency_by_stage(frame: pd.DataFrame) -> pd.DataFrame:
    """p50 and p95 per pipeline stage over all searches that did the work (cache misses)."""
    misses = frame[~frame["cache_hit"].astype(bool)]
    source = misses if not misses.empty else frame
    rows = []
    for stage in STAGES:
        column = f"{stage}_ms"
        if column in source:
            rows.append({"stage": stage, "p50": source[column].quantile(0.5), "p95": source[column].quantile(0.95)})
    return pd.DataFrame(rows)


def _cache_rate(frame: pd.DataFrame) -> pd.DataFrame:
    bucket = frame["at"].dt.floor(_bucket(frame))
    grouped = frame.groupby(bucket)["cache_hit"]
    out = pd.DataFrame({"hit_rate": grouped.mean().astype(float), "searches": grouped.size()})
    out.index.name = "time"
    return out.reset_index()


def _job_runs_frame(engine: "MemoryEngine", limit: int = 2000) -> pd.DataFrame:
    runs = engine.job_runs(limit=limit)
    return pd.DataFrame([{"job": r.job, "started_at": r.started_at, "finished_at": r.finished_at,
                          "outcome": r.outcome, "seconds": ((r.finished_at - r.started_at).total_seconds()
                                                            if r.finished_at else None)} for r in runs])


def _summary(engine: "MemoryEngine", demo_only: bool = False) -> dict[str, Any]:
    """Headline numbers: memories (active, faded, all), users, searches, cache hit rate, p95 latency."""
    status = _status_by_user_frame(engine, demo_only)
    metrics = _metrics_frame(engine, demo_only=demo_only)
    return {
        "memories_active": int(status.loc[status["status"] == "active", "count"].sum()) if not status.empty else 0,
        "memories_total": int(status["count"].sum()) if not status.empty else 0,
        # past their date but kept: returned only when relevant (they count among the active ones)
        "memories_faded": engine.count_faded(_user_prefix(demo_only)),
        "users": int(status["user_id"].nunique()) if not status.empty else 0,
        "searches": int(len(metrics)),
        "cache_hits": int(metrics["cache_hit"].sum()) if not metrics.empty else 0,
        "cache_hit_rate": float(metrics["cache_hit"].mean()) if not metrics.empty else None,
        "p95_ms": float(metrics["total_ms"].quantile(0.95)) if not metrics.empty else None,
    }


def _charts(engine: "MemoryEngine", demo_only: bool = False) -> list[Chart]:
    """Every chart of the analytics page, in page order."""
    out: list[Chart] = []
    no_memories = "No memories yet: chat on the Chat page, load the demo data, or import memories on Admin."
    no_searches = "No searches recorded yet: every chat turn records its retrieval timings here."

    imp = _importance_frame(engine, demo_only)
    if imp.empty:
        out += [Chart("importance_type", "Importance by memory type", None, no_memories),
                Chart("importance_user", "Importance by user", None, no_memories)]
    else:
        by_type = imp.groupby(["importance", "memory_type"], as_index=False)["count"].sum()
        out.append(Chart("importance_type", "Importance by memory type",
                         px.bar(by_type, x="importance", y="count", color="memory_type", barmode="group",
                                labels={"importance": "importance (1-5)", "count": "active memories"})))
        by_user = imp.groupby(["user_id", "importance"], as_index=False)["count"].sum()
        by_user["importance"] = by_user["importance"].astype(str)
        out.append(Chart("importance_user", "Importance by user",
                         px.bar(by_user, x="user_id", y="count", color="importance",
                                labels={"count": "active memories", "user_id": "user"},
                                category_orders={"importance": ["1", "2", "3", "4", "5"]})))

    status = _status_by_user_frame(engine, demo_only)
    if status.empty:
        out.append(Chart("per_user", "Memories per user", None, no_memories))
    else:
        out.append(Chart("per_user", "Memories per user",
                         px.bar(status, x="user_id", y="count", color="status",
                                labels={"count": "memories", "user_id": "user"})))

    growth = _growth_frame(engine)
    if growth.empty:
        out.append(Chart("growth", "Memory growth and expiry", None, no_memories))
    else:
        fig = go.Figure()
        fig.add_bar(x=growth["day"], y=growth["created"], name="created")
        fig.add_bar(x=growth["day"], y=-growth["expired"], name="expired")
        fig.add_scatter(x=growth["day"], y=growth["stored"], name="stored (running total)", mode="lines+markers")
        fig.update_layout(barmode="relative", yaxis_title="memories per day", xaxis_title="day")
        out.append(Chart("growth", "Memory growth and expiry", fig))

    metrics = _metrics_frame(engine, demo_only=demo_only)
    if metrics.empty:
        out += [Chart("latency_time", "Retrieval latency p50 / p95 over time", None, no_searches),
                Chart("latency_stage", "Retrieval latency per stage", None, no_searches),
                Chart("cache", "Cache hit rate", None, no_searches)]
    else:
        over_time = _latency_over_time(metrics)
        out.append(Chart("latency_time", "Retrieval latency p50 / p95 over time",
                         px.line(over_time, x="time", y=["p50", "p95"], markers=True,
                                 labels={"value": "ms", "variable": "percentile"})))
        stages = _latency_by_stage(metrics).melt(id_vars="stage", var_name="percentile", value_name="ms")
        out.append(Chart("latency_stage", "Retrieval latency per stage",
                         px.bar(stages, x="stage", y="ms", color="percentile", barmode="group")))
        rate = _cache_rate(metrics)
        out.append(Chart("cache", "Cache hit rate",
                         px.line(rate, x="time", y="hit_rate", markers=True, range_y=[0, 1.05],
                                 hover_data=["searches"], labels={"hit_rate": "share of searches from cache"})))

    runs = _job_runs_frame(engine)
    if runs.empty:
        out.append(Chart("jobs", "Scheduler job runs", None,
                         "No job runs yet: reconcile runs every 5 minutes, expiry daily at 02:00, "
                         "merge on Mondays at 03:00; Admin can run them now."))
    else:
        counts = runs.groupby(["job", "outcome"], as_index=False).size()
        out.append(Chart("jobs", "Scheduler job runs",
                         px.bar(counts, x="job", y="size", color="outcome", labels={"size": "runs"},
                                color_discrete_map={"ok": "#2e7d32", "error": "#c62828", "skipped": "#9e9e9e",
                                                    "running": "#1565c0"})))
    for chart in out:
        if chart.figure is not None:
            chart.figure.update_layout(margin={"l": 10, "r": 10, "t": 30, "b": 10}, height=320)
            if chart.key == "importance_type":
                chart.figure.update_xaxes(tickmode="linear", dtick=1, range=[0.5, 5.5])
            if chart.key == "cache":
                chart.figure.update_yaxes(tickformat=".0%")
            if chart.key in ("growth", "latency_time", "cache"):
                chart.figure.update_xaxes(type="date", tickformat="%Y-%m-%d" if chart.key == "growth" else None)
    return out


# ---- the public, permission-checked API ------------------------------------------------------------
analytics_only = principal_check(require_analytics)


@analytics_only
def summary(principal: Principal, engine: "MemoryEngine") -> dict[str, Any]:
    """Headline numbers: memories, users, searches, cache hit rate, p95 latency."""
    return _summary(engine, principal.via == "demo")


@analytics_only
def charts(principal: Principal, engine: "MemoryEngine") -> list[Chart]:
    """Every chart of the analytics page, in page order."""
    return _charts(engine, principal.via == "demo")


@analytics_only
def importance_frame(principal: Principal, engine: "MemoryEngine") -> pd.DataFrame:
    """Active memories counted by user, type and importance."""
    return _importance_frame(engine, principal.via == "demo")


@analytics_only
def status_by_user_frame(principal: Principal, engine: "MemoryEngine") -> pd.DataFrame:
    """Memories counted by user and status."""
    return _status_by_user_frame(engine, principal.via == "demo")


@analytics_only
def growth_frame(principal: Principal, engine: "MemoryEngine") -> pd.DataFrame:
    """Per day: memories created, memories expired, and the running total still stored."""
    return _growth_frame(engine)


@analytics_only
def metrics_frame(principal: Principal, engine: "MemoryEngine", since: datetime | None = None) -> pd.DataFrame:
    """The recorded retrieval timings (one row per search)."""
    return _metrics_frame(engine, since, demo_only=principal.via == "demo")


@analytics_only
def job_runs_frame(principal: Principal, engine: "MemoryEngine", limit: int = 2000) -> pd.DataFrame:
    """The scheduler's job runs with outcome and duration."""
    return _job_runs_frame(engine, limit)
