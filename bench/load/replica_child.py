"""One app replica of ``python -m bench.load.replicas``: a process of its own that opens the
engine from settings exactly as the app does (Milvus server, PostgreSQL, Redis), says it is
ready, waits for ``go`` on stdin, runs its share of the simulated users for the given seconds and
prints what it measured as one JSON line, then exits on the next line of stdin (so the
parent can read its CPU time first).

``python -m bench.load.replica_child '<settings as JSON>'``; stdin: one JSON line
``{"users": [...], "seconds": S, "first_seed": N}``. Anything else the process prints goes to
stderr.
"""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RUST_LOG", "error")

from bench.load.workload import Stats, drive  # noqa: E402
from bench.load.api_client import FacadeOps  # noqa: E402
from memory_core import Settings, open_memory  # noqa: E402


def main() -> int:
    settings = Settings(_env_file=None, **json.loads(sys.argv[1]))  # type: ignore[call-arg]
    engine = open_memory(settings)
    engine.warm_up()  # as the app does at server start: every replica starts the load warm
    reply = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the reply line
    reply.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    reply.flush()
    try:
        job = json.loads(sys.stdin.readline())
        stats = Stats()
        workers = [(FacadeOps(engine, user), user) for user in job["users"]]
        elapsed = drive(workers, job["seconds"], stats, first_seed=job["first_seed"])
        reply.write(json.dumps({"elapsed": elapsed, "latencies": stats.latencies, "errors": dict(stats.errors),
                                "acknowledged": stats.acknowledged, "cross_user": stats.cross_user}) + "\n")
        reply.flush()
        sys.stdin.readline()  # stay alive until the parent has read this process's CPU time
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
