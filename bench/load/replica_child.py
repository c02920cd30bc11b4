"""One app replica of ``python -m bench.load.replicas``: a process of its own that opens the
engine from settings exactly as the app does (Milvus server, PostgreSQL, Redis), says it is
ready, waits for ``go`` on stdin, runs its share of the simulated users for the given seconds and
prints what it measured as one JSON line; with a read phase, waits, says ``reading``, runs
waits for ``read`` on stdin (so all replicas search together), runs searches only and prints
those figures as another line; then exits on the next line of stdin
(so the parent can read its CPU time first).

``python -m bench.load.replica_child '<settings as JSON>'``; stdin: one JSON line
``{"users": [...], "seconds": S, "first_seed": N}`` and, for a read phase after the load,
``"read_after_s"`` and ``"read_seconds"``. Anything else the process prints goes to
stderr.
"""
from __future__ import annotations

import json
import os
import sys
import time

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
        if job.get("read_seconds"):
            # The read phase: once no user has written for ``read_after_s``, searches only.
            time.sleep(job["read_after_s"])
            reply.write(json.dumps({"reading": True}) + "\n")
            reply.flush()
            sys.stdin.readline()  # the parent's "read": every replica starts the phase together
            reads = Stats()
            # every search a new question: the result cache is not asked (it would answer the
            # repeated queries of this workload without reaching the store)
            fresh = [(FacadeOps(engine, user, cached=False), user) for user in job["users"]]
            read_elapsed = drive(fresh, job["read_seconds"], reads, first_seed=job["first_seed"] + 500,
                                 mix="search", known=stats.acknowledged)
            reply.write(json.dumps({"elapsed": read_elapsed, "latencies": reads.latencies["search"],
                                    "errors": dict(reads.errors), "cross_user": reads.cross_user}) + "\n")
            reply.flush()
        sys.stdin.readline()  # stay alive until the parent has read this process's CPU time
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
