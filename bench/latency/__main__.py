"""``python -m bench.latency [--sizes 10k,10k-fp32,100k,100k-100pu,1M] [--queries 200]``

Each size runs in its own child process (``--one``) so its RSS, Milvus Lite server and caches
do not leak into the next. Prints markdown tables, writes ``bench/results/latency.json``
(sizes not run this time are kept from the previous file, each with its own ``run_at``) and
``bench/results/latency.html``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from bench.latency.report import chart, markdown

RESULTS = Path(__file__).resolve().parents[1] / "results"
ORDER = ("10k", "10k-fp32", "100k", "100k-100pu", "1M")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for key, value in (("OMP_WAIT_POLICY", "PASSIVE"), ("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"),
                       ("TOKENIZERS_PARALLELISM", "false"), ("RUST_LOG", "error")):
        env.setdefault(key, value)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency")
    parser.add_argument("--sizes", default=",".join(ORDER), help="comma list of " + ", ".join(ORDER))
    parser.add_argument("--queries", type=int, default=200, help="cold (and as many warm) searches per size")
    parser.add_argument("--workdir", type=Path, default=Path(os.environ.get("BENCH_WORKDIR", "data/bench-latency")))
    parser.add_argument("--out", type=Path, default=RESULTS / "latency.json")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--one-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.one:  # child process: one size
        from bench.latency.runner import run_size

        result = run_size(args.one, args.workdir.resolve(), queries=args.queries,
                          progress=lambda m: print(m, flush=True))
        args.one_out.write_text(json.dumps(result, indent=2))
        return 0

    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in ORDER]
    if unknown:
        parser.error(f"unknown sizes {unknown}; choose from {ORDER}")
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    results = {k: v for k, v in previous.items() if k in ORDER}
    servers = {k: v for k, v in previous.items() if k.startswith("server-")}  # bench.latency.server's, kept
    started = time.time()
    args.workdir.mkdir(parents=True, exist_ok=True)
    for size in sizes:
        part = args.workdir / f"result-{size}.json"
        part.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "bench.latency", "--one", size, "--one-out", str(part),
               "--queries", str(args.queries), "--workdir", str(args.workdir)]
        code = subprocess.call(cmd, env=_env())
        if code != 0 or not part.exists():
            print(f"[{size}] FAILED (exit {code})", flush=True)
            continue
        result = json.loads(part.read_text())
        result["run_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        results[size] = result
        part.unlink(missing_ok=True)
        ordered = {k: results[k] for k in ORDER if k in results}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(ordered | servers, indent=2, ensure_ascii=False) + "\n")
        print(markdown({size: result}), flush=True)
    ordered = {k: results[k] for k in ORDER if k in results}
    print(f"\n## Results (wall time {time.time() - started:.0f} s, load average now {os.getloadavg()[0]:.2f})\n")
    print(markdown(ordered))
    chart(ordered, args.out.with_suffix(".html"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
