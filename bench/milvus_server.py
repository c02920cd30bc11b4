"""A real Milvus 2.3.5 standalone server (PyPI ``milvus``) reachable on 127.0.0.1 only, for the
tests and benchmarks of the server path. Not part of the product: production runs Milvus 2.5+
(docker-compose.yml).

Why a network namespace: measured here, Milvus 2.3.5 binds its gRPC ports (proxy, coordinators,
nodes) and its metrics port on every interface whatever ``<component>.ip`` says in its config
(that is only the address it advertises). So the server runs in a network namespace of its own
(``unshare --net``), whose only interface is loopback, and one socat pair carries its proxy port
out: inside, a Unix socket -> 127.0.0.1:19530; outside, 127.0.0.1:<free port> -> that socket.
Nothing else of it (etcd, coordinators, metrics) is reachable from outside the namespace. A pid
namespace as well (``--pid --kill-child``) means that killing its first process ends every
process in it, so ``kill()`` is a real ``kill -9`` of the server, and a crashed test run leaves
nothing behind. The namespace gets its own ``/proc`` (``--mount-proc``): without it Milvus reads
its memory use from the host's process of the same number, gets 0, and refuses to load any
sealed segment ("get memory failed when checkSegmentSize", retried forever; measured: a flushed
20k-row collection never loaded, and loaded in 6 s with it).

Usage::

    server = LocalMilvusServer(Path("/tmp/m1"))
    server.start()            # ~10 s; server.uri == "http://127.0.0.1:<port>"
    server.kill(); server.start()   # same data, same uri
    server.stop()

    python -m bench.milvus_server --data /tmp/m1   # runs until Ctrl-C, prints the uri
"""
from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

MILVUS_VERSION = "2.3.5"
PROXY_PORT = 19530  # inside the namespace: the template's defaults, nothing else binds there
METRICS_PORT = 9091
_INSIDE = r"""
ip link set lo up || exit 97
socat UNIX-LISTEN:"$MV_SOCK",fork,unlink-early,mode=600 TCP:127.0.0.1:19530 &
socat UNIX-LISTEN:"$MV_HEALTH_SOCK",fork,unlink-early,mode=600 TCP:127.0.0.1:9091 &
"$MV_BIN" run standalone &
pid=$!
trap 'kill -TERM $pid' TERM INT
wait $pid
wait $pid
"""


class MilvusServerUnavailable(RuntimeError):
    """This machine cannot run the server (a missing package, tool or permission)."""


def preflight() -> str | None:
    """Why the server cannot run here, or None when everything it needs is present."""
    try:
        import milvus  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means the same thing here
        return f"PyPI milvus=={MILVUS_VERSION} is not importable ({exc}); pip install -r requirements-dev.txt"
    if getattr(milvus, "__version__", "") != MILVUS_VERSION:
        return f"PyPI milvus is {getattr(milvus, '__version__', '?')}, expected {MILVUS_VERSION}"
    for tool in ("unshare", "socat", "ip"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install util-linux socat iproute2)"
    probe = subprocess.run(["unshare", "--net", "--pid", "--mount-proc", "--fork", "--kill-child", "--",
                            "ip", "link", "set", "lo", "up"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"cannot create a network namespace here (unshare --net: {probe.stderr.strip() or probe.returncode})"
    return None


def _binaries(cache_dir: Path) -> Path:
    """The server's binaries, unpacked once into ``cache_dir`` (~250 MB; unpacking takes ~5 s)."""
    from milvus import _initialize_data_files

    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test workers may start a server at once
        _initialize_data_files(str(cache_dir))
    return cache_dir / "bin"


def _write_config(data_dir: Path, extra: dict[str, object] | None = None) -> Path:
    """Milvus' own template, filled with the template's default ports (they are private to the
    namespace) and paths under ``data_dir``; ``extra`` sets dotted keys of milvus.yaml (e.g.
    ``{"proxy.timeTickInterval": 50}``). Returns the config folder."""
    from milvus import MilvusServerConfig

    config = MilvusServerConfig(data_dir=str(data_dir))
    config.resolve_storage()
    for key, (kind, default) in list(config.configurable_items.items()):
        if key.endswith("_port"):
            config.configurable_items[key][1] = default  # no probing of the host's ports
    for key, value in (extra or {}).items():
        config.set(key, value)
    config.write_config()
    return data_dir / "configs"


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the process that started it dies, so a test run
    that crashes leaves no server behind (``unshare --kill-child`` takes the namespace with it)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


class LocalMilvusServer:
    """One Milvus 2.3.5 standalone in its own network namespace, bridged to 127.0.0.1:<port>."""

    def __init__(self, data_dir: Path, cache_dir: Path | None = None, config: dict[str, object] | None = None) -> None:
        self.data_dir = Path(data_dir).absolute()
        self.config = dict(config or {})  # dotted milvus.yaml keys to override
        self.cache_dir = cache_dir or Path(os.environ.get(
            "MILVUS_SERVER_CACHE", Path.home() / ".cache" / "memory-core" / f"milvus-{MILVUS_VERSION}"))
        self._sock_dir = Path(tempfile.mkdtemp(prefix="mvs-"))  # short path: Unix sockets allow 107 bytes
        self.port = 0
        self._ns: subprocess.Popen[bytes] | None = None
        self._bridge: subprocess.Popen[bytes] | None = None
        self._logs: list[object] = []

    # ---------------------------------------------------------------- lifecycle
    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._ns is not None and self._ns.poll() is None

    def start(self, timeout_s: float = 240.0, wait_loaded: bool = True) -> str:
        """Start the server (or start it again on the same data after ``kill``/``stop``) and
        wait until it answers through the bridge, and (``wait_loaded``) until it has loaded again
        the collections that were loaded before. Returns the uri."""
        reason = preflight()
        if reason:
            raise MilvusServerUnavailable(reason)
        if self.running:
            return self.uri
        binary = _binaries(self.cache_dir) / "milvus"
        config_dir = _write_config(self.data_dir, self.config)
        logs = self.data_dir / "logs"
        env = dict(os.environ, DEPLOY_MODE="STANDALONE", METRICS_PORT=str(METRICS_PORT),
                   MILVUS_RUN_DIR=str(self.data_dir / "run"), MILVUSCONF=str(config_dir),
                   LD_LIBRARY_PATH=f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}",
                   MV_BIN=str(binary), MV_SOCK=str(self._sock_dir / "proxy.sock"),
                   MV_HEALTH_SOCK=str(self._sock_dir / "health.sock"))
        out = open(logs / "milvus-stdout.log", "ab")
        err = open(logs / "milvus-stderr.log", "ab")
        self._logs += [out, err]
        self._ns = subprocess.Popen(["unshare", "--net", "--pid", "--mount-proc", "--fork", "--kill-child", "--", "sh", "-c", _INSIDE],
                                    cwd=self.data_dir, env=env, stdout=out, stderr=err, start_new_session=True,
                                    preexec_fn=_die_with_parent)
        if self._bridge is None or self._bridge.poll() is not None:
            self._start_bridge()
        try:
            self._wait_ready(timeout_s)
            if wait_loaded:
                self.wait_loaded(timeout_s)
        except BaseException:
            self.kill()
            raise
        return self.uri

    def wait_loaded(self, timeout_s: float = 240.0) -> None:
        """Wait until no collection is still loading. After a restart the server reloads what
        was loaded by itself (~25 s for a small collection on 2.3.5, measured); reads fail with
        "collection not loaded" until then."""
        from memory_core.vectors import pymilvus_import  # noqa: F401
        from pymilvus import MilvusClient

        client = MilvusClient(uri=self.uri, timeout=30, alias=f"milvus-server-load-{uuid.uuid4().hex}")
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                loading = [name for name in client.list_collections(timeout=30)
                           if str(client.get_load_state(name, timeout=30).get("state")).endswith("Loading")]
                if not loading:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"collections still loading after {timeout_s:.0f} s: {loading}")
                time.sleep(1)
        finally:
            client.close()

    def _start_bridge(self) -> None:
        """127.0.0.1:<free port> -> the namespace's proxy socket (kept across restarts, so the
        uri never changes)."""
        for _ in range(20):
            port = _free_port()
            bridge = subprocess.Popen(
                ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
                 f"UNIX-CONNECT:{self._sock_dir / 'proxy.sock'}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=_die_with_parent)
            time.sleep(0.2)
            if bridge.poll() is None:
                self._bridge, self.port = bridge, port
                return
        raise RuntimeError("could not bind a loopback port for the Milvus bridge")

    def _healthy(self) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            try:
                sock.connect(str(self._sock_dir / "health.sock"))
                sock.sendall(b"GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n")
                reply = b""
                while chunk := sock.recv(4096):
                    reply += chunk
            except OSError:
                return False
        return reply.startswith(b"HTTP/1.") and b" 200 " in reply.split(b"\r\n", 1)[0] and b"OK" in reply

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.running:
                raise RuntimeError(f"Milvus server exited during start (code {self._ns.returncode if self._ns else '?'});"
                                   f" log tail:\n{self.log_tail()}")
            if self._healthy() and self._answers():
                return
            time.sleep(0.5)
        raise TimeoutError(f"Milvus server not ready in {timeout_s:.0f} s; log tail:\n{self.log_tail()}")

    def _answers(self) -> bool:
        """One real request through the bridge (the health endpoint answers before the proxy)."""
        from memory_core.vectors import pymilvus_import  # noqa: F401  (MILVUS_URI may be a file path)
        from pymilvus import MilvusClient

        try:  # an alias of its own: closing a shared one would cut the caller's clients off
            client = MilvusClient(uri=self.uri, timeout=5, alias=f"milvus-server-probe-{uuid.uuid4().hex}")
        except Exception:  # noqa: BLE001 - not ready yet
            return False
        try:
            client.list_collections(timeout=5)
            return True
        except Exception:  # noqa: BLE001
            return False
        finally:
            client.close()

    def kill(self) -> None:
        """``kill -9`` of every server process (the pid namespace dies with its first process).
        The bridge stays, so the uri is the same after ``start()``."""
        if self._ns is None:
            return
        for pid in _children(self._ns.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self._ns.kill()
        except ProcessLookupError:
            pass
        self._ns.wait(timeout=30)
        self._ns = None

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask the server to shut down (SIGTERM), kill it if it has not within ``timeout_s``,
        then close the bridge."""
        if self._ns is not None and self._ns.poll() is None:
            for pid in _children(self._ns.pid):  # the namespace's sh, which forwards it to Milvus
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            try:
                self._ns.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        if self._bridge is not None:
            self._bridge.kill()
            self._bridge.wait(timeout=10)
            self._bridge = None
        for handle in self._logs:
            handle.close()  # type: ignore[attr-defined]
        self._logs.clear()
        shutil.rmtree(self._sock_dir, ignore_errors=True)

    # ---------------------------------------------------------------- inspection
    def server_pids(self) -> list[int]:
        """Host pids of every process in the server's namespace (sh, socat, milvus)."""
        if self._ns is None:
            return []
        out: list[int] = []
        todo = _children(self._ns.pid)
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo.extend(_children(pid))
        return out

    def milvus_rss_bytes(self) -> int:
        """Resident memory of the Milvus process itself (for the memory-per-vector figures)."""
        for pid in self.server_pids():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "milvus":
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            return int(line.split()[1]) * 1024
            except OSError:
                continue
        return 0

    def bridge_pid(self) -> int | None:
        return self._bridge.pid if self._bridge is not None else None

    def log_tail(self, lines: int = 30) -> str:
        path = self.data_dir / "logs" / "milvus-stderr.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="data folder (kept after exit)")
    args = parser.parse_args()
    server = LocalMilvusServer(args.data)
    stop_on = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_on)
    print(server.start(), flush=True)
    try:
        signal.sigwait(stop_on)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
