"""``python -m bench.truth [--half tune|validate|all] [--kinds K,K] [--scenarios F] [--out PATH] [--failures]``.

Plays ``bench/truth/scenarios.jsonl`` through the chat path (see ``runner.py``) on a fresh
embedded store (SQLite + Milvus Lite, the bundled model, the offline LLM unless ``--llm``) and
writes ``bench/results/truth.json``: ``{"kinds": {KIND: {"n", "pass"}}, "overall": {"n", "pass"}}``
for the whole set, with the same for each half of the fixed split (``runner.half``) beside it.
"""
from __future__ import annotations

import bench.offline_env  # noqa: F401  (sets the environment before the imports below)
import os  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from bench.machine import cpu_description  # noqa: E402
from bench.truth.runner import KINDS, START, half, load, run, summarise  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
MODEL_DIR = ROOT / "data" / "test-models"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.truth", description=__doc__)
    parser.add_argument("--half", choices=("tune", "validate", "all"), default="all")
    parser.add_argument("--scenarios", type=Path, default=None,
                        help="another scenario file in the same format (a probe set); its results are not written "
                             "over truth.json unless --out says so")
    parser.add_argument("--kinds", default="", help="comma-separated kinds (default: all)")
    parser.add_argument("--out", type=Path, default=RESULTS / "truth.json")
    parser.add_argument("--failures", action="store_true", help="print every failed scenario and why")
    parser.add_argument("--llm", action="store_true", help="use the OpenAI-compatible endpoint of the environment")
    args = parser.parse_args(argv)

    from memory_core import FixedClock, Settings, open_memory

    scenarios = load(args.scenarios) if args.scenarios else load()
    if args.half != "all":
        scenarios = [s for s in scenarios if half(s["id"]) == args.half]
    if args.kinds:
        wanted = set(args.kinds.split(","))
        scenarios = [s for s in scenarios if s["kind"] in wanted]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-truth-") as tmp:
        overrides: dict[str, Any] = {} if args.llm else dict(openai_base_url="", openai_api_key=None, llm_model="")
        settings = Settings(_env_file=None, data_dir=Path(tmp) / "data",  # type: ignore[call-arg]
                            milvus_uri=str(Path(tmp) / "truth.db"), model_cache_dir=MODEL_DIR, redis_url="",
                            **overrides)
        engine = open_memory(settings, clock=FixedClock(START))
        try:
            outcomes = run(engine, scenarios, progress=print)
            llm_name = engine.llm.name
        finally:
            engine.close()
    result: dict[str, Any] = summarise(outcomes)
    result["halves"] = {name: summarise([o for o in outcomes if half(o.scenario_id) == name])
                        for name in ("tune", "validate")}
    result["meta"] = {"scenarios": len(outcomes), "seconds": round(time.perf_counter() - started, 1),
                      "llm": llm_name, "load_avg": [round(x, 2) for x in os.getloadavg()],
                      "machine": cpu_description()}
    if args.failures:
        for o in outcomes:
            if not o.passed:
                print(f"FAIL {o.scenario_id}: {'; '.join(o.failures)}")
    print(table(result))
    if args.half == "all" and not args.kinds and (args.scenarios is None or args.out != RESULTS / "truth.json"):
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return result


def table(result: dict[str, Any]) -> str:
    """The README's table: pass rate per kind, whole set and each half."""
    def cell(entry: dict[str, int] | None) -> str:
        return "-" if not entry or not entry["n"] else f"{entry['pass']}/{entry['n']} ({entry['pass'] / entry['n']:.0%})"

    halves = result.get("halves", {})
    lines = ["| kind | all | tune half | validate half |", "|---|---|---|---|"]
    for kind in [*KINDS, "overall"]:
        if kind == "overall":
            lines.append(f"| **overall** | **{cell(result['overall'])}** | {cell(halves.get('tune', {}).get('overall'))} | "
                         f"{cell(halves.get('validate', {}).get('overall'))} |")
        elif kind in result["kinds"]:
            lines.append(f"| {kind} | {cell(result['kinds'][kind])} | "
                         f"{cell(halves.get('tune', {}).get('kinds', {}).get(kind))} | "
                         f"{cell(halves.get('validate', {}).get('kinds', {}).get(kind))} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
