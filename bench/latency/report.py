"""Markdown tables and the plotly chart for the latency benchmark."""
from __future__ import annotations

from pathlib import Path
from typing import Any

# The design's claims and the targets (embedded default, 2 cores), for comparison.
DESIGN_P95_MS = {"100k": 80.0, "1M": 120.0}
TARGETS = {
    "cold_p95_ms": {"100k": 40.0, "100k-100pu": 40.0, "1M": 60.0},
    "warm_p95_ms": 3.0,
    "recall@20": 0.99,
    "add_many_per_s": 150.0,
    "peak_rss_mb_1M": 4096.0,
}


def _ok(flag: bool) -> str:
    return "yes" if flag else "**no**"


def _later(r: dict[str, Any]) -> str:
    later = r["search_ms"].get("cold_not_first_of_user")
    return f"{later['p50']:.1f} / {later['p95']:.1f}" if later else "-"


def markdown(results: dict[str, Any]) -> str:
    lines = ["### search() latency (ms) — cold = cache miss, warm = cache hit", "",
             "| size | memories/user | shards | cold p50 | cold p95 | cold p99 | warm p50 | warm p95 | warm p99 "
             "| target cold p95 | design p95 | met | cold p50 / p95, not a user's first search | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for size, r in results.items():
        c, w = r["search_ms"]["cold"], r["search_ms"]["warm"]
        target = TARGETS["cold_p95_ms"].get(size)
        met = (target is None or c["p95"] <= target) and w["p95"] <= TARGETS["warm_p95_ms"]
        lines.append(f"| {size} | {r['per_user']:,} | {r['lite_shards']} | {c['p50']:.1f} | {c['p95']:.1f} | "
                     f"{c['p99']:.1f} | {w['p50']:.2f} | {w['p95']:.2f} | {w['p99']:.2f} | "
                     f"{target if target else '-'} | {DESIGN_P95_MS.get(size, '-')} | {_ok(met)} | "
                     f"{_later(r)} | {r['load_avg']} |")
    lines += ["", "### cold search() by stage, p50 / p95 (ms)", "",
              "| size | rewrite | embed | search | rerank | fetch | other | total | load avg |",
              "|---|---|---|---|---|---|---|---|---|"]
    for size, r in results.items():
        s = r["stages_ms"]
        cells = " | ".join(f"{s[k]['p50']:.1f} / {s[k]['p95']:.1f}"
                           for k in ("rewrite", "embed", "search", "rerank", "fetch", "other", "total"))
        lines.append(f"| {size} | {cells} | {r['load_avg']} |")
    lines += ["", "### search stage vs the physical limit (exact numpy scan of the user's vectors in RAM)", "",
              "| size | exact scan p50 / p95 (ms) | dense leg p50 / p95 (ms) | dense leg via Milvus p50 / p95 (ms) | "
              "search stage p50 (3 legs) | stage / exact | recall@20 vs exact (cache / Milvus) | met "
              "| first search of a user, prepared / unprepared p50 / p95 (ms) | load avg |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for size, r in results.items():
        e, d = r["exact_scan_ms"], r["dense_leg_ms"]
        m = r.get("dense_leg_milvus_ms", {"p50": float("nan"), "p95": float("nan")})
        nan = {"p50": float("nan"), "p95": float("nan")}
        f, u = r.get("first_search_of_user_ms", nan), r.get("first_search_unprepared_ms", nan)
        recall_milvus = r.get("recall@20_milvus_path", float("nan"))
        met = r["recall@20"] >= TARGETS["recall@20"] and not recall_milvus < TARGETS["recall@20"]
        lines.append(f"| {size} | {e['p50']:.2f} / {e['p95']:.2f} | {d['p50']:.2f} / {d['p95']:.2f} | "
                     f"{m['p50']:.1f} / {m['p95']:.1f} | {r['stages_ms']['search']['p50']:.1f} | "
                     f"{r['search_stage_vs_exact_x']}x | {r['recall@20']:.4f} / {recall_milvus:.4f} | {_ok(met)} | "
                     f"{_pair(f)}, {_pair(u)} | {r['load_avg']} |")
    lines += ["", "### writes, memory, disk", "",
              "| size | add() p50 / p95 (ms) | add_many() memories/s, median (rounds) | model alone, same texts /s "
              "| peak RSS (MB, app + Lite) | disk (MB) | build (s, rows/s) | embeddings | load avg |",
              "|---|---|---|---|---|---|---|---|---|"]
    for size, r in results.items():
        a = r["add_ms"]
        lines.append(f"| {size} | {a['p50']:.1f} / {a['p95']:.1f} | {r['add_many_per_s']:.0f} "
                     f"({_ok(r['add_many_per_s'] >= TARGETS['add_many_per_s'])}){_rounds(r.get('add_many_rounds_per_s'))} | "
                     f"{_embed_only(r)} | {r['peak_rss_mb']:,.0f} | "
                     f"{r['disk_mb']:,.0f} | {r['build']['build_s']} ({r['build']['rows_per_s']:,.0f}) | "
                     f"{r['embeddings']} | {r['load_avg']} |")
    return "\n".join(lines)


def _embed_only(r: dict[str, Any]) -> str:
    """The model's own rate on the add_many texts (absent from older results), median (rounds)."""
    value = r.get("embed_only_per_s")
    return f"{value:,.0f}{_rounds(r.get('embed_only_rounds_per_s'))}" if value else "-"


def _rounds(values: list[float] | None) -> str:
    """`` (a, b, c)``: every round's rate beside the median (absent from older results)."""
    return f" ({', '.join(f'{v:,.0f}' for v in values)})" if values and len(values) > 1 else ""


def _pair(p: dict[str, float]) -> str:
    """``p50 / p95``, or a dash when the size had nothing to measure (NaN)."""
    return "—" if p["p50"] != p["p50"] else f"{p['p50']:.1f} / {p['p95']:.1f}"


def chart(results: dict[str, Any], path: Path) -> None:
    """Cold/warm p95 against design and targets, plus the cold stage breakdown."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    sizes = list(results)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("search() p95 (ms)", "cold search() p50 by stage (ms)"))
    for key, name in (("cold", "cache miss p95"), ("warm", "cache hit p95")):
        fig.add_trace(go.Bar(x=sizes, y=[results[s]["search_ms"][key]["p95"] for s in sizes], name=name,
                             text=[f"load {results[s]['load_avg']}" for s in sizes]), row=1, col=1)
    fig.add_trace(go.Scatter(x=sizes, y=[TARGETS["cold_p95_ms"].get(s) for s in sizes], mode="markers",
                             marker_symbol="line-ew-open", marker_size=30, name="target p95"), row=1, col=1)
    fig.add_trace(go.Scatter(x=sizes, y=[DESIGN_P95_MS.get(s) for s in sizes], mode="markers",
                             marker_symbol="x", marker_size=12, name="design p95"), row=1, col=1)
    for stage in ("rewrite", "embed", "search", "fetch", "other"):
        fig.add_trace(go.Bar(x=sizes, y=[results[s]["stages_ms"][stage]["p50"] for s in sizes], name=stage),
                      row=1, col=2)
    fig.update_layout(barmode="group", title="Memory engine latency, embedded default (Milvus Lite, SQLite, 2 cores)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.write_html(path, include_plotlyjs="directory")
