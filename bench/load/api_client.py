"""The load test's HTTP side: start ``python -m api`` on a store in a child process, and the
three operations the simulated users run, as HTTP calls on that server.

The server is a separate process on purpose: that is how the API is deployed, and its work
(JSON, routing, auth, the rate counter, the engine) is then not sharing the client threads' GIL.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ApiServer:
    """``python -m api`` on the store ``env`` describes, until ``stop``."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen([sys.executable, "-m", "api", "--host", "127.0.0.1", "--port", str(self.port)],
                                      cwd=ROOT, env={**os.environ, **env}, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout_s: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"the API server exited with {self._proc.returncode}; see {self._log.name}")
            try:
                health = httpx.get(f"{self.base_url}/v1/health", timeout=5)
                if health.status_code == 200:
                    return health.json()
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the API server did not answer in {timeout_s:.0f} s; see {self._log.name}")

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()


class ApiOps:
    """One simulated user's operations through the API (one keep-alive connection each)."""

    def __init__(self, base_url: str, key: str, user: str) -> None:
        self.user = user
        self._http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=300)

    def _ok(self, response: httpx.Response) -> dict[str, Any]:
        if response.status_code >= 400:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
        return response.json() if response.content else {}

    def add(self, text: str, actor: str) -> list[str]:
        return self._ok(self._http.post("/v1/memories", json={"user_id": self.user, "content": text}))["memory_ids"]

    def search(self, query: str) -> list[tuple[str, str]]:
        found = self._ok(self._http.post("/v1/search", json={"user_id": self.user, "query": query}))
        return [(r["memory_id"], r["user_id"]) for r in found["results"]]

    def edit(self, memory_id: str, importance: int) -> None:
        self._ok(self._http.patch(f"/v1/memories/{memory_id}", params={"user_id": self.user},
                                  json={"importance": importance}))

    def close(self) -> None:
        self._http.close()


def _uncached() -> Any:
    from memory_core import RetrievalOptions

    return RetrievalOptions(use_cache=False)


class FacadeOps:
    """The same operations on the engine in this process."""

    def __init__(self, engine: Any, user: str, cached: bool = True) -> None:
        self.engine = engine
        self.user = user
        self._options = None if cached else _uncached()

    def add(self, text: str, actor: str) -> list[str]:
        return list(self.engine.add(self.user, text, actor=actor).memory_ids)

    def search(self, query: str) -> list[tuple[str, str]]:
        found = self.engine.search(self.user, query, options=self._options) if self._options else \
            self.engine.search(self.user, query)
        return [(r.memory_id, r.user_id) for r in found.results]

    def edit(self, memory_id: str, importance: int) -> None:
        self.engine.update(memory_id, actor="staff:load", importance=importance)

    def close(self) -> None:
        pass
