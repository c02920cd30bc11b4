"""How the API is run: the operator's key command, and the compose service wired like the app."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import yaml

from api.keys import KeyAuthenticator, hash_secret, parse_key
from memory_core.storage.api_keys import open_api_keys

ROOT = Path(__file__).resolve().parents[1]


def _keys(*args: str, database_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": database_url}
    return subprocess.run([sys.executable, "-m", "api.keys", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_operator_command_adds_lists_and_revokes_hashed_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    added = _keys("add", "support-bot", "--tenant", "acme", "--admin", "--expires", "2999-01-01", "--rate-limit", "30",
                  database_url=url)
    assert added.returncode == 0, added.stderr
    key = added.stdout.strip()
    key_id, secret = parse_key(key) or ("", "")
    repo = open_api_keys(url)
    stored = repo.get(key_id)
    assert stored is not None and stored.name == "support-bot" and stored.tenant == "acme" and stored.admin
    assert stored.rate_limit_per_min == 30 and stored.expires_at == datetime(2999, 1, 1, tzinfo=timezone.utc)
    assert stored.secret_hash == hash_secret(secret) and secret not in stored.secret_hash  # only the hash is kept
    assert KeyAuthenticator(repo).authenticate(f"Bearer {key}").tenant == "acme"

    assert _keys("add", "support-bot", "--tenant", "acme", database_url=url).returncode == 2  # names are unique
    assert _keys("add", "x", "--tenant", "bad:tenant", database_url=url).returncode == 2
    listed = _keys("list", database_url=url)
    assert "support-bot\ttenant=acme\tadmin=True\trate/min=30" in listed.stdout and secret not in listed.stdout
    assert _keys("revoke", "support-bot", database_url=url).returncode == 0
    assert _keys("revoke", "support-bot", database_url=url).returncode == 1  # already revoked
    assert "revoked" in _keys("list", database_url=url).stdout


def test_compose_runs_the_api_on_the_apps_settings() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    api, app = compose["services"]["api"], compose["services"]["app"]
    assert api["command"][:3] == ["python", "-m", "api"] and api["environment"] == app["environment"]
    assert api["ports"] == ["127.0.0.1:8800:8800"] and api["volumes"] == app["volumes"]
    assert "/v1/health" in " ".join(api["healthcheck"]["test"])
    assert "COPY api ./api" in (ROOT / "Dockerfile").read_text()
    pins = (ROOT / "requirements.txt").read_text()
    assert all(f"\n{name}==" in pins for name in ("fastapi", "uvicorn", "mcp"))
