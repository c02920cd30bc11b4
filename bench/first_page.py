"""Time to the first useful page after the app starts: ``python -m bench.first_page``.

Starts the app as ``scripts/start-app.sh`` does (its environment: demo mode, offline model
flags; bound to 127.0.0.1, no usage statistics, headless) on a free port, with a fresh data
dir per run and the embedding model already converted (as on every start after the first;
``--fresh-model``: an empty model cache, the very first start after install, which converts
it), and times from the launch to:

- **health**: ``/_stcore/health`` answers 200 (the server listens);
- **first page**: a client's first run of the home page has finished and shows the sign-in
  (the first page a visitor can use);
- **engine ready**: a run of the home page shows the service status, i.e. the memory engine is
  open and the model loaded (until then the chat says it is warming up). The client keeps the
  page's own timers (the warming-up notice checks every two seconds), as a browser does.

The client speaks Streamlit's websocket protocol as a browser tab does (a ``rerun_script``
BackMsg, then ForwardMsgs until ``script_finished``), so no browser is needed; a browser paints
the page within a frame of the last delta. Each run writes a line; the JSON goes to
``bench/results/first_page.json`` (``--out``).

    python -m bench.first_page                      # this tree, started by scripts/start-app.sh
    git archive 1b8acd8 | tar -x -C /tmp/before && ln -s "$PWD/.venv" /tmp/before/.venv
    python -m bench.first_page --baseline /tmp/before --runs 5   # and an older tree, in turn; its
                                                    # start script ran `streamlit run app.py`
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "first_page.json"
SIGN_IN = "Enter as demo identity".encode()  # the demo tab's button: the sign-in is on the page
STATUS = "SQL database".encode()  # the status panel: the engine is open
# What scripts/start-app.sh exports before it starts the server.
START_ENV = {"DEMO_MODE": "true", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE",
             "TOKENIZERS_PARALLELISM": "false", "RUST_LOG": "error"}
FLAGS = ["--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.headless", "true"]


@dataclass
class Run:
    health_s: float
    first_page_s: float
    engine_ready_s: float
    first_page_waited_for_engine: bool  # the first page came with the status: it waited for the model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _command(repo: Path, launcher: str, port: int) -> list[str]:
    flags = ["--server.port", str(port), *FLAGS]
    if launcher == "script":  # the real start script, without reinstalling the pinned packages
        return ["bash", str(repo / "scripts" / "start-app.sh"), *flags]
    return [str(repo / ".venv" / "bin" / "python"), "-m", "streamlit", "run", "app.py", *flags]


def _wait_health(url: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the server did not come up")
        time.sleep(0.05)


async def _page_runs(port: int, started: float, timeout_s: float) -> tuple[float, float, bool]:
    """(first page, engine ready, whether the first page already had the status), in seconds since
    ``started``. Plays a browser tab: one run of the home page, then the page's own timers
    (``auto_rerun``: a fragment rerun every interval) until a run shows the status."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    def rerun(fragment_id: str = "") -> bytes:
        msg = BackMsg()
        msg.rerun_script.query_string = ""
        msg.rerun_script.page_script_hash = page_hash
        if fragment_id:
            msg.rerun_script.fragment_id = fragment_id
            msg.rerun_script.is_auto_rerun = True
        return msg.SerializeToString()

    page_hash = ""
    first_page = engine_ready = None
    first_had_status = False
    timers: dict[str, float] = {}  # fragment id -> interval (s), as the page asked
    due: dict[str, float] = {}
    async with websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"],
                                  max_size=None, open_timeout=timeout_s) as ws:
        await ws.send(rerun())
        seen = b""
        deadline = time.monotonic() + timeout_s
        quiet_since = time.monotonic()
        while engine_ready is None:
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError("the page never showed the service status")
            for fragment_id, at in list(due.items()):
                if now >= at:
                    await ws.send(rerun(fragment_id))
                    due[fragment_id] = now + timers[fragment_id]
            if first_page is not None and not timers and now - quiet_since > 5:
                await ws.send(rerun())  # a page with no timer of its own: reload it now and then
                quiet_since = now
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=0.1)
            except asyncio.TimeoutError:
                continue
            data = raw if isinstance(raw, bytes) else raw.encode()
            quiet_since = time.monotonic()
            msg = ForwardMsg()
            msg.ParseFromString(data)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                page_hash = msg.new_session.page_script_hash
            elif kind == "auto_rerun":
                timers[msg.auto_rerun.fragment_id] = max(float(msg.auto_rerun.interval), 0.1)
                due.setdefault(msg.auto_rerun.fragment_id, time.monotonic() + timers[msg.auto_rerun.fragment_id])
            elif kind == "stop_auto_rerun":
                timers.clear()
                due.clear()
            seen += data
            if kind != "script_finished":
                continue
            if msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                at = time.monotonic() - started
                if first_page is None and SIGN_IN in seen:
                    first_page, first_had_status = at, STATUS in seen
                if first_page is not None and STATUS in seen:
                    engine_ready = at
            if msg.script_finished != ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
                seen = b""  # a fragment run adds to the page; a full run starts it again
    assert first_page is not None and engine_ready is not None
    return first_page, engine_ready, first_had_status


def measure(repo: Path, launcher: str, model_cache_dir: Path | None, timeout_s: float = 600.0) -> Run:
    """One start; ``model_cache_dir`` None: the model is converted during the start (the very first)."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="first-page-") as tmp:
        models = model_cache_dir or Path(tmp) / "models"
        env = {**os.environ, **START_ENV, "DATA_DIR": tmp, "MODEL_CACHE_DIR": str(models),
               "DATABASE_URL": "", "REDIS_URL": "", "OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "LLM_MODEL": "",
               "ACCOUNTS_FILE": str(Path(tmp) / "accounts.json"), "SKIP_INSTALL": "1"}
        env.pop("MILVUS_URI", None)
        log = open(Path(tmp) / "server.log", "wb")
        started = time.monotonic()
        proc = subprocess.Popen(_command(repo, launcher, port), cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_health(url, proc, started + timeout_s)
            health = time.monotonic() - started
            first_page, ready, waited = asyncio.run(_page_runs(port, started, timeout_s))
        except BaseException:
            log.flush()
            sys.stderr.write((Path(tmp) / "server.log").read_text(errors="replace")[-3000:])
            raise
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
    return Run(round(health, 2), round(first_page, 2), round(ready, 2), waited)


def _ensure_model(repo: Path, model_cache_dir: Path) -> None:
    """Convert the bundled model once, outside the timing (every start after the first finds it)."""
    code = ("import sys; from pathlib import Path; from memory_core.embedding import load_embedder; "
            "load_embedder('bundled:multilingual-e5-small', Path(sys.argv[1]))")
    subprocess.run([str(repo / ".venv" / "bin" / "python"), "-c", code, str(model_cache_dir)], cwd=repo, check=True,
                   env={**os.environ, **START_ENV})


def _say(name: str, run: Run) -> None:
    print(f"{name}: health {run.health_s:.2f} s · first page {run.first_page_s:.2f} s · "
          f"engine ready {run.engine_ready_s:.2f} s" + (" (the first page waited for it)"
                                                         if run.first_page_waited_for_engine else ""), flush=True)


def _median(runs: list[Run]) -> dict[str, float]:
    return {key: round(statistics.median(getattr(r, key) for r in runs), 2)
            for key in ("health_s", "first_page_s", "engine_ready_s")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="the app tree to start (default: this one)")
    parser.add_argument("--launcher", choices=["script", "streamlit"], default="script",
                        help="script: scripts/start-app.sh (SKIP_INSTALL=1); streamlit: `streamlit run app.py`")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another tree to time too, run for run in turn with this one (a shared machine's "
                             "load then falls on both alike)")
    parser.add_argument("--baseline-launcher", choices=["script", "streamlit"], default="streamlit")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model-cache-dir", type=Path, default=ROOT / "data" / "test-models")
    parser.add_argument("--fresh-model", action="store_true",
                        help="the very first start: each run converts the bundled model (an empty model cache)")
    parser.add_argument("--label", default="", help="a name for this set of runs in the JSON")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    trees = [("this", args.repo.resolve(), args.launcher)]
    if args.baseline is not None:
        trees.insert(0, ("baseline", args.baseline.resolve(), args.baseline_launcher))
    if not args.fresh_model:
        args.model_cache_dir.mkdir(parents=True, exist_ok=True)
        _ensure_model(trees[-1][1], args.model_cache_dir)
    runs: dict[str, list[Run]] = {name: [] for name, _, _ in trees}
    for index in range(args.runs):
        for name, repo, launcher in trees:
            run = measure(repo, launcher, None if args.fresh_model else args.model_cache_dir.resolve())
            runs[name].append(run)
            _say(f"run {index + 1} {name}", run)
    entry: dict[str, object] = {
        "command": " ".join(["python -m bench.first_page", *(argv if argv is not None else sys.argv[1:])]),
        "at": time.strftime("%Y-%m-%d %H:%M", time.localtime()), "cpus": os.cpu_count(),
        "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    for name, repo, launcher in trees:
        summary = _median(runs[name])
        print(f"median of {len(runs[name])} ({name}: {repo}, {launcher}): health {summary['health_s']:.2f} s · "
              f"first page {summary['first_page_s']:.2f} s · engine ready {summary['engine_ready_s']:.2f} s")
        entry[name] = {"repo": str(repo), "launcher": launcher, "median": summary,
                       "runs": [asdict(r) for r in runs[name]]}
    label = args.label or ("fresh model" if args.fresh_model else "converted model")
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results[label] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
