"""``python -m bench.load.replicas [--replicas 1,2] [--users 16] [--seconds 45] [--settle-s 0,10]
[--read-seconds 20] [--time-tick-ms N]``

The production path under load: R app replicas (processes of their own,
``bench/load/replica_child.py``, each opening the engine from settings as the app does) on one
real Milvus server (PyPI ``milvus`` 2.3.5 in a namespace of its own, bench/milvus_server.py), one
PostgreSQL database and one Redis namespace, with the same simulated users as ``bench.load``
split over the replicas (user i on replica i mod R). Each replica count runs on a fresh
deployment (database, collection, cache namespace); all replicas start together on a signal.

Afterwards every acknowledged write is checked to be present exactly once in SQL and on the
server, and every search result to be the asking user's own (``lost``, ``duplicated``,
``cross_user_results``). To find the first bottleneck, the CPU time each part used during the
run is read from /proc (in cores: 1.0 = one core busy the whole run): the replicas, the Milvus
server (with its bridge), PostgreSQL, Redis, and the whole machine. PostgreSQL and Redis are
the machine's shared servers: other work on the machine shows in their figures and in the load
average, both recorded.

Then (``--read-seconds``), once no user has written for ``--read-after-s``, a phase of searches
only, each past the result cache (a new question every time): what reads cost for users who are settled, the case ``MILVUS_SETTLE_S`` is for (with 0,
every read is Strong and waits for the server's time tick).

Rows go to ``bench/results/load.json`` (``mode`` "replicas", with ``replicas``, ``vector_store``
and ``cpu_cores``), replacing the previous run's; rows of ``python -m bench.load`` stay.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from bench.load.workload import Stats, pct, result_row, verify  # noqa: E402
from bench.milvus_server import LocalMilvusServer  # noqa: E402
from memory_core import Settings, open_memory  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "load.json"
PG_ADMIN_URL = os.environ.get("BENCH_PG_ADMIN_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
TICK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ CPU accounting from /proc
def _ticks(pid: int) -> int | None:
    """utime + stime of one process and of its children it has reaped (cutime + cstime: the
    short-lived PostgreSQL backends of overflow connections end up in the postmaster's), in
    clock ticks; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(f) for f in fields[11:15])


def _pids_named(*names: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip().startswith(names):
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def _machine_busy() -> tuple[int, int]:
    """(busy, total) ticks of all cores since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]  # guest is in user
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


class CpuMeter:
    """CPU time each named group of processes used between ``start`` and ``stop``, in cores."""

    def __init__(self, groups: dict[str, Any]) -> None:
        self._groups = groups  # name -> callable returning the group's pids now

    def _snapshot(self) -> dict[str, dict[int, int]]:
        out: dict[str, dict[int, int]] = {}
        for name, pids in self._groups.items():
            ticks = {pid: _ticks(pid) for pid in pids()}
            out[name] = {pid: t for pid, t in ticks.items() if t is not None}  # gone between list and read
        return out

    def start(self) -> None:
        self._t0, self._before, self._machine0 = time.monotonic(), self._snapshot(), _machine_busy()

    def stop(self) -> dict[str, float]:
        seconds = time.monotonic() - self._t0
        after, machine1 = self._snapshot(), _machine_busy()
        cores = {}
        for name, now in after.items():
            used = sum(max(0, ticks - self._before[name].get(pid, 0)) for pid, ticks in now.items())
            cores[name] = round(used / TICK / seconds, 2)
        busy, total = machine1[0] - self._machine0[0], machine1[1] - self._machine0[1]
        cores["machine"] = round(busy / total * (os.cpu_count() or 1), 2) if total else 0.0
        return cores


# ------------------------------------------------------------------ one deployment, R replicas
class Replica:
    """A replica process (bench/load/replica_child.py) and its pipe."""

    def __init__(self, settings: dict[str, Any], log: Path) -> None:
        self._log = open(log, "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.load.replica_child", json.dumps(settings)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
                                     cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        self.log = log

    def _line(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"replica {self.proc.pid} exited; log:\n{self.log.read_text()[-3000:]}")
        return json.loads(line)

    def wait_ready(self) -> None:
        ready = self._line()
        if not ready.get("ready"):
            raise RuntimeError(f"replica not ready: {ready}")

    def go(self, users: list[str], seconds: float, first_seed: int, read_after_s: float, read_seconds: float) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"users": users, "seconds": seconds, "first_seed": first_seed,
                                          "read_after_s": read_after_s, "read_seconds": read_seconds}) + "\n")
        self.proc.stdin.flush()

    def result(self) -> dict[str, Any]:
        return self._line()

    def send_line(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def quit(self) -> None:
        self.send_line("quit")
        self.proc.wait(timeout=120)
        self._log.close()


def _fresh_database() -> tuple[str, Any]:
    from sqlalchemy import create_engine, text

    name = f"ltm_replicas_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))  # generated name, not input

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"))
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()

    return PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}", drop


def run(server: LocalMilvusServer, replicas: int, users: int, seconds: float, workdir: Path,
        model_cache_dir: Path, time_tick_ms: int | None, settle_s: float, read_seconds: float = 0.0,
        read_after_s: float = 11.0) -> dict[str, Any]:
    database_url, drop_database = _fresh_database()
    namespace = f"replicas-{uuid.uuid4().hex[:10]}"
    settings = {"data_dir": str(workdir / f"r{replicas}"), "milvus_uri": server.uri,
                "milvus_collection": f"load_{uuid.uuid4().hex[:12]}", "database_url": database_url,
                "redis_url": REDIS_URL, "cache_namespace": namespace, "model_cache_dir": str(model_cache_dir),
                "openai_base_url": "", "llm_model": "", "milvus_settle_s": settle_s}
    names = [f"load-user-{i}" for i in range(users)]
    procs: list[Replica] = []
    try:
        for r in range(replicas):
            procs.append(Replica(settings, workdir / f"replica-{replicas}-{r}.log"))
        for proc in procs:
            proc.wait_ready()
        meter = CpuMeter({
            "replicas": lambda: [p.proc.pid for p in procs],
            "milvus": lambda: server.server_pids() + [pid for pid in [server.bridge_pid()] if pid],
            "postgres": lambda: _pids_named("postgres"),
            "redis": lambda: _pids_named("redis-server"),
        })
        meter.start()
        for r, proc in enumerate(procs):
            proc.go(names[r::replicas], seconds, first_seed=r * 1000, read_after_s=read_after_s,
                    read_seconds=read_seconds)
        outputs = [proc.result() for proc in procs]
        cores = meter.stop()
        read: dict[str, Any] = {}
        if read_seconds:
            for proc in procs:  # every replica has waited out the window ...
                assert proc.result().get("reading")
            meter.start()
            for proc in procs:  # ... and all start searching together
                proc.send_line("read")
            reads = [proc.result() for proc in procs]
            read_cores = meter.stop()
            latencies = [ms for out in reads for ms in out["latencies"]]
            read_elapsed = max(out["elapsed"] for out in reads)
            read = {"read_phase": {
                "after_s": read_after_s, "seconds": round(read_elapsed, 1), "searches": len(latencies),
                "ops_per_s": round(len(latencies) / read_elapsed, 1), "search_p50_ms": round(pct(latencies, 50), 1),
                "search_p95_ms": round(pct(latencies, 95), 1), "errors": sum(sum(o["errors"].values()) for o in reads),
                "cross_user_results": sum(o["cross_user"] for o in reads), "cpu_cores": read_cores}}
        for proc in procs:
            proc.quit()
        stats = Stats()
        for out in outputs:
            for op, values in out["latencies"].items():
                stats.latencies[op].extend(values)
            stats.errors.update(out["errors"])
            stats.acknowledged.update(out["acknowledged"])
            stats.cross_user += out["cross_user"]
        elapsed = max(out["elapsed"] for out in outputs)
        engine = open_memory(Settings(_env_file=None, **settings))  # type: ignore[call-arg]
        try:
            checks = verify(engine, stats)
            version = engine.health().get("vector_server_version", "unknown")
        finally:
            engine.close()
        return result_row("replicas", users, elapsed, stats, checks, replicas=replicas,
                          vector_store=f"milvus {version} server (PyPI milvus, own namespace, loopback bridge)",
                          sql="postgresql", cache="redis", proxy_time_tick_ms=time_tick_ms or 200,
                          milvus_settle_s=settle_s,
                          consistency="Strong" if not settle_s else f"Bounded for users with no write in {settle_s:g} s, "
                                                                   "else Strong",
                          cpu_cores=cores, cpus=os.cpu_count(), **read)
    finally:
        for proc in procs:
            if proc.proc.poll() is None:
                proc.proc.kill()
        drop_database()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load.replicas", description=__doc__.split("\n\n")[1])
    parser.add_argument("--replicas", default="1,2", help="comma-separated replica counts")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--read-seconds", type=float, default=20.0,
                        help="after the load, a phase of searches only (0 = none) ...")
    parser.add_argument("--read-after-s", type=float, default=11.0,
                        help="... once no user has written for this long (past the default settle window)")
    parser.add_argument("--time-tick-ms", type=int, default=None, help="proxy.timeTickInterval (default 200)")
    parser.add_argument("--settle-s", default=str(Settings.model_fields["milvus_settle_s"].default),
                        help="comma list of MILVUS_SETTLE_S values to run (0 = every read Strong)")
    parser.add_argument("--model-cache-dir", type=Path, default=Path(os.environ.get("MODEL_CACHE_DIR", "data/models")))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="ltm-replicas-"))
    server = LocalMilvusServer(workdir / "milvus",
                               config={"proxy.timeTickInterval": args.time_tick_ms} if args.time_tick_ms else None)
    server.start()
    rows = []
    try:
        for settle in (float(x) for x in args.settle_s.split(",")):
            for count in (int(x) for x in args.replicas.split(",")):
                rows.append(run(server, count, args.users, args.seconds, workdir, args.model_cache_dir.resolve(),
                                args.time_tick_ms, settle, args.read_seconds, args.read_after_s))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        server.stop(timeout_s=30)
    print(f"\n{os.cpu_count()} cores; Milvus 2.3.5 server + PostgreSQL + Redis on this machine\n")
    print("| settle s | replicas | users | ops/s | add p50/p95 ms | search p50/p95 ms | lost | dup | cross-user | "
          "CPU cores: replicas / milvus / postgres / redis / machine | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["cpu_cores"]
        print(f"| {r['milvus_settle_s']:g} | {r['replicas']} | {r['users']} | {r['ops_per_s']} | {r['add_p50_ms']}/{r['add_p95_ms']} | "
              f"{r['search_p50_ms']}/{r['search_p95_ms']} | {r['lost']} | {r['duplicated']} | "
              f"{r['cross_user_results']} | {c['replicas']} / {c['milvus']} / {c['postgres']} / {c['redis']} / "
              f"{c['machine']} | {r['load_avg']} |")
    previous = json.loads(args.out.read_text()) if args.out.exists() else []
    previous = [row for row in previous if row.get("mode") != "replicas"]  # this run replaces the last one's
    for row in previous:  # rows of ``python -m bench.load``: one process on Milvus Lite
        row.setdefault("replicas", 1)
        row.setdefault("vector_store", "milvus-lite")
    args.out.write_text(json.dumps(previous + rows, indent=2, ensure_ascii=False) + "\n")
    for r in rows:
        if "read_phase" in r:
            p = r["read_phase"]
            print(f"read phase, settle {r['milvus_settle_s']:g} s, {r['replicas']} replica(s): {p['ops_per_s']} searches/s, "
                  f"p50/p95 {p['search_p50_ms']}/{p['search_p95_ms']} ms, CPU cores {p['cpu_cores']}")
    bad = [r for r in rows if r["lost"] or r["duplicated"] or r["cross_user_results"]
           or r.get("read_phase", {}).get("cross_user_results")]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
