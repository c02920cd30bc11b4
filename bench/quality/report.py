"""Markdown tables, the JSON result file and the plotly chart."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# External floors from ../shared/README.md (same data, bm25s / MiniLM / RRF, one doc per turn).
FLOORS: dict[str, dict[str, dict[str, float]]] = {
    "locomo": {
        "bm25": {"cat1-4/recall@5": .501, "cat1-4/recall@10": .574, "cat1-4/recall@20": .656,
                 "cat1-4/all-hit@10": .520, "cat1-4/ndcg@10": .441},
        "dense": {"cat1-4/recall@5": .401, "cat1-4/recall@10": .499, "cat1-4/recall@20": .603,
                  "cat1-4/all-hit@10": .445, "cat1-4/ndcg@10": .346},
        "hybrid": {"cat1-4/recall@5": .515, "cat1-4/recall@10": .616, "cat1-4/recall@20": .706,
                   "cat1-4/all-hit@10": .558, "cat1-4/ndcg@10": .455,
                   "multi-hop/recall@5": .282, "multi-hop/recall@10": .390, "multi-hop/recall@20": .485,
                   "multi-hop/all-hit@10": .177, "multi-hop/ndcg@10": .294},
    },
    "madial_zh": {"bm25": {"recall@5": .522, "ndcg@5": .518}, "dense": {"recall@5": .142, "ndcg@5": .153},
                  "hybrid": {"recall@5": .299, "ndcg@5": .308}},
    "madial_en": {"bm25": {"recall@5": .485, "ndcg@5": .498}, "dense": {"recall@5": .579, "ndcg@5": .581},
                  "hybrid": {"recall@5": .584, "ndcg@5": .605}},
}
TARGETS = {
    "locomo cat1-4 recall@10": (("locomo", "full", "cat1-4", "recall@10"), .80),
    "locomo multi-hop recall@20": (("locomo", "full", "multi-hop", "recall@20"), .65),
    "locomo temporal recall@10": (("locomo", "full", "temporal", "recall@10"), .85),
    "madial zh recall@5": (("madial_zh", "full", None, "recall@5"), .70),
    "madial en recall@5": (("madial_en", "full", None, "recall@5"), .70),
}
LOCOMO_METRICS = ("recall@5", "recall@10", "recall@20", "all-hit@10", "ndcg@10")
MADIAL_METRICS = ("recall@1", "recall@3", "recall@5", "ndcg@5")


def _f(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def locomo_table(section: dict[str, Any], floors: dict[str, dict[str, float]] | None = None) -> str:
    lines = ["| group | method | n | " + " | ".join(LOCOMO_METRICS) + " |",
             "|---|---|---|" + "---|" * len(LOCOMO_METRICS)]
    groups = ("cat1-4", "multi-hop", "temporal", "open-domain", "single-hop", "adversarial")
    for group in groups:
        for method, scores in section.items():
            s = scores.get(group)
            if not s or not s.get("n"):
                continue
            lines.append(f"| {group} | {method} | {int(s['n'])} | "
                         + " | ".join(_f(s[m]) for m in LOCOMO_METRICS) + " |")
        for method, floor in (floors or {}).items():
            if any(k.startswith(group + "/") for k in floor):
                lines.append(f"| {group} | *floor {method}* | | "
                             + " | ".join(_f(floor.get(f"{group}/{m}")) for m in LOCOMO_METRICS) + " |")
    return "\n".join(lines)


def madial_table(section: dict[str, Any], floors: dict[str, dict[str, float]] | None = None) -> str:
    lines = ["| method | n | " + " | ".join(MADIAL_METRICS) + " |", "|---|---|" + "---|" * len(MADIAL_METRICS)]
    for method, s in section.items():
        lines.append(f"| {method} | {int(s['n'])} | " + " | ".join(_f(s[m]) for m in MADIAL_METRICS) + " |")
    for method, floor in (floors or {}).items():
        lines.append(f"| *floor {method}* | | " + " | ".join(_f(floor.get(m)) for m in MADIAL_METRICS) + " |")
    return "\n".join(lines)


def halves_table(results: dict[str, Any]) -> str:
    """The main measure of each dataset per fixed half (``bench.quality.datasets.TUNE_USERS``)."""
    lines = ["| dataset | method | measure | tune (n) | validate (n) |", "|---|---|---|---|---|"]
    for key, section in results.items():
        if key == "meta":
            continue
        for method, s in section.items():
            if key.startswith("locomo"):
                t, v = s.get("cat1-4|tune") or {}, s.get("cat1-4|validate") or {}
                if t or v:
                    lines.append(f"| {key} | {method} | cat1-4 recall@10 | {_f(t.get('recall@10'))} ({int(t.get('n', 0))}) | "
                                 f"{_f(v.get('recall@10'))} ({int(v.get('n', 0))}) |")
            elif "recall@5|tune" in s or "recall@5|validate" in s:
                cells = [f"{_f(s.get(f'recall@5|{h}'))} ({int(s.get(f'n|{h}', 0))})" for h in ("tune", "validate")]
                lines.append(f"| {key} | {method} | recall@5 | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def targets_table(results: dict[str, Any]) -> str:
    lines = ["| target | measured | goal | met |", "|---|---|---|---|"]
    for name, ((dataset, method, group, metric), goal) in TARGETS.items():
        section = results.get(dataset, {}).get(method)
        if section is None:
            continue
        value = (section.get(group) or {}).get(metric) if group else section.get(metric)
        if value is None:
            continue
        lines.append(f"| {name} | {value:.3f} | {goal:.2f} | {'yes' if value >= goal else 'no'} |")
    return "\n".join(lines)


def markdown(results: dict[str, Any]) -> str:
    parts: list[str] = []
    for key, section in results.items():
        if key == "meta":
            continue
        dataset = "locomo" if key.startswith("locomo") else key.replace("_forgetting_off", "")
        floors = FLOORS.get(dataset)
        parts.append(f"### {key}\n")
        parts.append(locomo_table(section, floors) if key.startswith("locomo") else madial_table(section, floors))
        parts.append("")
    parts.append("### tune / validate halves (settings are chosen on tune; validate is the figure of record)\n")
    parts.append(halves_table(results))
    parts.append("")
    parts.append("### targets (method `full`)\n")
    parts.append(targets_table(results))
    meta = results.get("meta", {})
    parts.append("\n### meta\n")
    for k, v in meta.items():
        parts.append(f"- {k}: {json.dumps(v, ensure_ascii=False)}")
    return "\n".join(parts)


def write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_chart(results: dict[str, Any], path: Path) -> None:
    """Grouped bars: LoCoMo recall@10 per category and MADial recall@5, per method, floors dotted."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, column_widths=[0.7, 0.3],
                        subplot_titles=("LoCoMo recall@10 by category", "MADial-Bench recall@5"))
    groups = ["cat1-4", "multi-hop", "temporal", "open-domain", "single-hop", "adversarial"]
    colours = {"full": "#1f77b4", "hybrid": "#2ca02c", "bm25": "#ff7f0e", "dense": "#9467bd"}
    for method, scores in results.get("locomo", {}).items():
        fig.add_trace(go.Bar(name=method, x=groups, y=[scores.get(g, {}).get("recall@10") for g in groups],
                             marker_color=colours.get(method), legendgroup=method), row=1, col=1)
    off = results.get("locomo_forgetting_off", {}).get("full")
    if off:
        fig.add_trace(go.Bar(name="full, forgetting off", x=groups, y=[off.get(g, {}).get("recall@10") for g in groups],
                             marker_color="#17becf"), row=1, col=1)
    for method in colours:
        ys = [results.get(k, {}).get(method, {}).get("recall@5") for k in ("madial_zh", "madial_en")]
        if any(y is not None for y in ys):
            fig.add_trace(go.Bar(name=method, x=["zh", "en"], y=ys, marker_color=colours[method],
                                 legendgroup=method, showlegend=False), row=1, col=2)
    fig.add_trace(go.Scatter(name="external floor (hybrid / best)", mode="markers", marker_symbol="line-ew-open",
                             marker_size=28, marker_line_width=3, marker_color="black",
                             x=["cat1-4", "multi-hop"], y=[.616, .390]), row=1, col=1)
    fig.add_trace(go.Scatter(name="external floor R@5", mode="markers", marker_symbol="line-ew-open",
                             marker_size=28, marker_line_width=3, marker_color="black", showlegend=False,
                             x=["zh", "en"], y=[.522, .584]), row=1, col=2)
    meta = results.get("meta", {})
    fig.update_layout(barmode="group", yaxis_range=[0, 1], yaxis2_range=[0, 1], height=520,
                      title=f"Retrieval quality (wall {meta.get('wall_seconds', 0):.0f}s, "
                            f"load {meta.get('load_average_start', ['?'])[0]})")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.write_html(str(path), include_plotlyjs="directory")  # plotly.min.js beside it: no network needed
