"""One app replica in a process of its own, driven by a test over stdin/stdout (JSON lines).

``python -m tests.replica_worker '<settings as JSON>'`` opens an engine exactly as the app does
(``open_memory`` from settings: Milvus server, PostgreSQL, Redis) and answers one command per
line: ``add``, ``search``, ``load`` (many users at once on a thread pool), ``job`` (a scheduled
run of a maintenance job), ``quit``. Replies are
one JSON object per line on stdout; anything else the process prints goes to stderr.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from memory_core import MemoryEngine, RetrievalOptions, open_memory  # noqa: E402
from memory_core.config import BUNDLED_EMBEDDING_MODEL, Settings  # noqa: E402
from memory_core.embedding import load_embedder  # noqa: E402


def _results(response: Any) -> list[dict[str, str]]:
    return [{"id": r.memory_id, "user": r.user_id, "content": r.content} for r in response.results]


def _job(engine: MemoryEngine, job: dict[str, Any]) -> dict[str, Any]:
    """One user's writes, each followed by a search of that user (as a chat turn does)."""
    out: dict[str, Any] = {"user": job["user"], "added": [], "pending": [], "searches": [], "errors": []}
    for text, query in zip(job["texts"], job["queries"]):
        try:
            result = engine.add(job["user"], text)
            out["added"].append({"text": text, "ids": result.memory_ids, "created": result.created})
            out["pending"].extend(result.pending_index)
            response = engine.search(job["user"], query, top_k=5)
            out["searches"].append({"query": query, "results": _results(response)})
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            out["errors"].append(f"{type(exc).__name__}: {exc}")
    return out


def handle(engine: MemoryEngine, command: dict[str, Any]) -> dict[str, Any]:
    op = command["op"]
    if op == "add":
        result = engine.add(command["user"], command["text"])
        return {"ids": result.memory_ids, "created": result.created, "pending": result.pending_index}
    if op == "search":
        options = RetrievalOptions(use_cache=command.get("cache", True))
        response = engine.search(command["user"], command["query"], top_k=command.get("top_k", 5), options=options)
        return {"results": _results(response), "cache_hit": response.cache_hit, "degraded": response.degraded}
    if op == "load":
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=command.get("threads", 8)) as pool:
            jobs = list(pool.map(lambda job: _job(engine, job), command["jobs"]))
        return {"jobs": jobs, "seconds": time.perf_counter() - started}
    if op == "job":  # a scheduled run of a maintenance job, as this replica's scheduler fires it
        from services import scheduler

        name = command["name"]
        outcome = scheduler.run_job(engine, name, scheduler.job_functions(engine)[name],
                                    once_per_s=scheduler.ONCE_PER_S[name])
        return {"outcome": outcome.outcome, "detail": outcome.detail}
    raise ValueError(f"unknown op {op!r}")


def main() -> int:
    raw = json.loads(sys.argv[1])
    settings = Settings(_env_file=None, **raw)  # type: ignore[call-arg]
    embedder = load_embedder(BUNDLED_EMBEDDING_MODEL, Path(raw["model_cache_dir"]), precision=settings.embedding_precision)
    engine = open_memory(settings, embedder=embedder)
    engine.warm_up()
    reply = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the reply stream
    reply.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    reply.flush()
    try:
        for line in sys.stdin:
            command = json.loads(line)
            if command["op"] == "quit":
                break
            try:
                answer = {"ok": True, **handle(engine, command)}
            except Exception as exc:  # noqa: BLE001
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
            reply.write(json.dumps(answer) + "\n")
            reply.flush()
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
