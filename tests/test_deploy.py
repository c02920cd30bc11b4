"""The production compose file is valid and wires the app to the services by environment only."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _compose_command() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return None


def test_compose_config_is_valid_and_complete() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("no Docker Compose client on this machine (scripts/run-tests.sh installs Debian's docker-compose)")
    proc = subprocess.run(command + ["-f", "docker-compose.yml", "config"], cwd=ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin:/usr/local/bin"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for service in ("etcd:", "minio:", "milvus:", "postgres:", "redis:", "app:"):
        assert f"\n  {service}" in out
    assert out.count("healthcheck:") >= 6
    for wiring in ("MILVUS_URI: http://milvus:19530", "REDIS_URL: redis://redis:6379/0", "@postgres:5432/ltm",
                   "milvusdb/milvus:v2.5", "postgres:15", "redis:7", "memory_core.health"):
        assert wiring in out, wiring


def test_accounts_example_is_valid_json() -> None:
    data = json.loads((ROOT / "deploy" / "accounts.example.json").read_text())
    assert data["accounts"] == []


def test_images_keep_demo_mode_off_and_only_the_local_script_turns_it_on() -> None:
    """Attack (issue 19, 1): the Dockerfile bound 0.0.0.0 without DEMO_MODE=false (only compose set it)."""
    assert "DEMO_MODE=false" in (ROOT / "Dockerfile").read_text()
    assert "DEMO_MODE: ${DEMO_MODE:-false}" in (ROOT / "docker-compose.yml").read_text()
    script = (ROOT / "scripts" / "start-app.sh").read_text()
    assert 'DEMO_MODE="${DEMO_MODE:-true}"' in script and "--server.address 127.0.0.1" in script


def test_the_start_script_and_the_image_warm_the_engine_from_server_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first page after a start waited for the embedding model (issue 23): both ways of
    starting the app go through ui.serve, which starts the warm-up before Streamlit serves."""
    import sys

    from streamlit.web import cli

    from services import runtime
    from ui import serve

    assert "exec .venv/bin/python -m ui.serve app.py --server.address 127.0.0.1" in \
        (ROOT / "scripts" / "start-app.sh").read_text()
    assert 'CMD ["python", "-m", "ui.serve", "app.py"' in (ROOT / "Dockerfile").read_text()
    calls: list[object] = []
    monkeypatch.setattr(runtime, "start_warm_up", lambda: calls.append("warm-up"))
    monkeypatch.setattr(cli, "main", lambda: calls.append(list(sys.argv)) or 0)
    monkeypatch.setattr(sys, "argv", ["serve"])
    assert serve.main(["app.py", "--server.port", "8599"]) == 0
    assert calls == ["warm-up", ["streamlit", "run", "app.py", "--server.port", "8599"]]
